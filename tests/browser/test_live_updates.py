"""A result page while its run goes on: what the reader chose survives the polls (even when a
poll sent before a click answers after it), the end of the run is announced, and a server that
cannot be reached is said so until it answers again. Real Chromium, live server, real worker."""

import http.client
import re
import time
from collections import Counter
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.test_ui import (
    RUN_TIMEOUT,
    SAMPLE,
    assert_page_shows,
    expected_scores,
    submit,
    wait_until,
    wait_until_done,
)
from tests.fakes import LoopbackServer, _Handler
from verification.models import FINISHED, Claim, ClaimStatus, Evidence, Source, Status, Verification
from verification.scoring import NOT_SUPPORTED, SUPPORTED
from verification.selectors import evidence_records

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LATENCY_MS = 700

# What the reader has chosen or changed, as the page shows it.
READER_STATE = """() => {
  const focused = document.activeElement;
  return {
    url: location.pathname + location.search,
    heading: document.getElementById("evidence-heading").textContent,
    selected: [...document.querySelectorAll("a.sentence.selected")].map(a => Number(a.dataset.index)),
    rule: document.querySelector("input[name=score_rule]:checked").value,
    unticked: [...document.querySelectorAll("#evidence input[name=evidence]:not(:checked)")].map(e => Number(e.value)),
    open: [...document.querySelectorAll("#evidence details[open]")].map(d => d.id),
    focused: focused && focused.closest("[id]") ? focused.closest("[id]").id : null,
    // Where the element last used sits on screen: the page may scroll to keep it there (the
    // browser's scroll anchoring, when the progress bar goes), but what the reader sees stays put.
    onScreen: focused ? focused.getBoundingClientRect().top : null,
    panelScroll: document.getElementById("evidence").scrollTop,
  };
}"""

# Every htmx request the page makes, poll or reader's change: when it was sent and answered, for
# which view, and whether its answer was put on the page.
RECORD_REQUESTS = """() => {
  window.__requests = [];
  const byXhr = new WeakMap();
  document.addEventListener("htmx:beforeRequest", (event) => {
    if (event.defaultPrevented) return;
    const entry = {
      poll: event.detail.requestConfig.elt.id === "result-body",
      path: event.detail.pathInfo.requestPath,
      sent: performance.now(), answered: null, swapped: false,
    };
    byXhr.set(event.detail.xhr, entry);
    window.__requests.push(entry);
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    const entry = byXhr.get(event.detail.xhr);
    if (entry) entry.answered = performance.now();
  });
  document.addEventListener("htmx:afterSettle", (event) => {
    const entry = byXhr.get(event.detail.xhr);
    if (entry) entry.swapped = true;
  });
}"""


def assert_same_view(state: dict, expected: dict, message: str) -> None:
    """The reader's state as `expected` has it, and what they used last where it was on screen to
    within a pixel: the page scrolls by whole pixels and lays out in fractions of one, so a page
    scrolled to its end (as the clicks leave it) shows its last row wherever the fraction of its
    new height puts it."""
    assert {**state, "onScreen": None} == {**expected, "onScreen": None}, message
    assert state["onScreen"] == pytest.approx(expected["onScreen"], abs=1), f"{message}: it moved on screen"


def wait_for(condition, *, timeout_s: float, message: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{message}: still not so after {timeout_s} s"
        time.sleep(0.05)


def wait_until_only_the_held_sentence_is_left(llm, verification_id: str) -> None:
    """Every claim but the held sentence's judged, every page read and typed: until the test
    releases the model, nothing the page shows can change."""

    def quiet() -> bool:
        claims = Claim.objects.filter(sentence__verification_id=verification_id)
        sources = Source.objects.filter(verification_id=verification_id)
        return (
            llm.held > 0
            and claims.exists()
            and not claims.exclude(status__in=[ClaimStatus.DONE, ClaimStatus.FAILED]).exists()
            and not sources.exclude(status__in=FINISHED).exists()
            and not sources.filter(source_type="").exclude(status=Status.FAILED).exists()
            and not Evidence.objects.filter(claim__sentence__verification_id=verification_id)
            .exclude(status__in=FINISHED)
            .exists()
        )

    wait_for(quiet, timeout_s=RUN_TIMEOUT / 1000, message="the run never settled around the held sentence")
    assert Verification.objects.get(pk=verification_id).status not in FINISHED


def choose_evidence(verification_id: str):
    """A sentence with supported evidence to leave out and another judged item whose rationale
    to open."""
    records = evidence_records(Verification.objects.get(pk=verification_id))
    return next(
        (r.sentence_index, r, other)
        for r in records
        if r.verdict == SUPPORTED and r.duplicate_of is None
        for other in records
        if other.sentence_index == r.sentence_index
        and other.id != r.id
        and other.duplicate_of is None
        and other.verdict in (SUPPORTED, NOT_SUPPORTED)
    )


def count_poll_swaps(page) -> None:
    page.evaluate(
        """() => { window.__pollSwaps = 0;
        document.addEventListener("htmx:afterSettle", (event) => {
          const config = event.detail.requestConfig;
          if (config && config.elt.id === "result-body") window.__pollSwaps += 1;
        }); }"""
    )


def wait_for_polls(page, count: int) -> None:
    start = page.evaluate("window.__pollSwaps")
    wait_until(page, f"window.__pollSwaps >= {start + count}", timeout_s=30)


def make_the_four_choices(page, verification_id: str, before_each=lambda: None) -> dict:
    """Clicks (never navigates): selects a sentence, switches to the decisive rule, unticks a
    supported item, opens another item's rationale. `before_each` runs just before each click.
    Returns what the page must go on showing."""
    index, left_out, other = choose_evidence(verification_id)
    before_each()
    page.click(f"#sentence-{index}")
    page.wait_for_url(re.compile(rf"\?sentence={index}$"))
    expect(page.locator("#evidence-heading")).to_have_text(f"Sentence {index + 1}")
    before_each()
    page.check("#rule-decisive")
    page.wait_for_url(re.compile(r"score_rule=decisive"))
    before_each()
    page.uncheck(f"#include-evidence-{left_out.id}")
    page.wait_for_url(re.compile(rf"exclude_evidence={left_out.id}(&|$)"))
    before_each()
    page.click(f"#rationale-{other.id} summary")
    state = page.evaluate(READER_STATE)
    expected = {
        "url": f"/v/{verification_id}?sentence={index}&exclude_evidence={left_out.id}&score_rule=decisive",
        "heading": f"Sentence {index + 1}",
        "selected": [index],
        "rule": "decisive",
        "unticked": [left_out.id],
        "open": [f"rationale-{other.id}"],
        "focused": f"rationale-{other.id}",
        "onScreen": state["onScreen"],
        "panelScroll": state["panelScroll"],
    }
    assert state == expected
    scores = expected_scores(verification_id, rule="decisive", excluded_ids={left_out.id})
    assert scores.overall != expected_scores(verification_id).overall, "a view put back would not show in the numbers"
    return expected


def assert_the_choices_hold_to_the_end(page, held, verification_id: str, expected: dict) -> None:
    count_poll_swaps(page)
    wait_for_polls(page, 3)
    assert page.get_attribute("#result-body", "data-status") not in FINISHED
    assert_same_view(page.evaluate(READER_STATE), expected, "a poll undid what the reader chose")
    left_out = expected["unticked"][0]
    assert_page_shows(page, expected_scores(verification_id, rule="decisive", excluded_ids={left_out}), rule="decisive")

    held.release()
    wait_until_done(page)
    assert_same_view(page.evaluate(READER_STATE), expected, "the end of the run undid what the reader chose")
    assert_page_shows(page, expected_scores(verification_id, rule="decisive", excluded_ids={left_out}), rule="decisive")


def emulate_latency(page) -> None:
    """A busy server, as DevTools emulates it: every request takes 700 ms more."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": LATENCY_MS, "downloadThroughput": -1, "uploadThroughput": -1},
    )


def is_poll(request) -> bool:
    return request.headers.get("hx-trigger") == "result-body"


class HeldRequests:
    """Holds the page's next poll or next change (a request for another view) at the browser until
    the test lets it go, or, `until_crossed`, until a request of the other kind has been sent: the
    order of a click and a poll is made certain, not left to timing (on a loaded machine the click
    came late, and the race the test was about did not happen, or happened the other way)."""

    def __init__(self, page) -> None:
        self.page = page
        self.next: str | None = None  # the kind to hold next: "poll" or "change"
        self.until_crossed = False
        self.held = None  # (kind, route)
        page.route("**/v/**", self._route)

    def hold(self, kind: str, *, until_crossed: bool = False) -> None:
        assert self.held is None and self.next is None, "one request at a time"
        self.next, self.until_crossed = kind, until_crossed

    def wait_until_held(self) -> None:
        pump_until(self.page, lambda: self.held is not None, timeout_s=60, message=f"no {self.next} was sent")

    def release(self) -> None:
        (_, route), self.held = self.held, None
        route.fallback()

    def _route(self, route) -> None:
        kind = "poll" if is_poll(route.request) else "change"
        if self.held is None and kind == self.next:
            self.held, self.next = (kind, route), None
            return
        route.fallback()
        if self.held is not None and self.until_crossed and kind != self.held[0]:
            self.release()


def test_what_the_reader_chose_during_a_run_survives_the_polls(page, held, celery_worker):
    verification_id = submit(page, SAMPLE)
    wait_until_only_the_held_sentence_is_left(held, verification_id)

    expected = make_the_four_choices(page, verification_id)
    assert_the_choices_hold_to_the_end(page, held, verification_id, expected)


def test_polls_crossing_a_click_on_a_slow_server_do_not_undo_it(page, held, celery_worker):
    verification_id = submit(page, SAMPLE)
    wait_until_only_the_held_sentence_is_left(held, verification_id)
    emulate_latency(page)
    page.evaluate(RECORD_REQUESTS)
    server = HeldRequests(page)

    # Both races, made to happen: a poll sent just before a click, held until the click's change
    # is on its way, is overtaken by it; a click's change, held until a poll is sent, is crossed
    # by that poll. (Timed by the clock instead, a loaded machine's late click missed them.)
    def poll_overtaken_by_the_click():
        server.hold("poll", until_crossed=True)
        server.wait_until_held()

    def click_crossed_by_a_poll():
        server.hold("change", until_crossed=True)

    def just_after_a_poll_answered():  # opening a rationale sends no request: the answer lands around it
        with page.expect_response(lambda response: is_poll(response.request)):
            pass

    races = iter((poll_overtaken_by_the_click, click_crossed_by_a_poll, poll_overtaken_by_the_click))
    expected = make_the_four_choices(
        page, verification_id, before_each=lambda: next(races, just_after_a_poll_answered)()
    )
    assert server.held is None and server.next is None
    assert_the_choices_hold_to_the_end(page, held, verification_id, expected)

    requests = page.evaluate("window.__requests")
    polls, changes = [r for r in requests if r["poll"]], [r for r in requests if not r["poll"]]
    assert len(changes) == 3
    assert min(r["answered"] - r["sent"] for r in requests if r["answered"]) >= LATENCY_MS, "no emulated latency"
    overtaken = crossed = 0
    for change in changes:
        crossing = [p for p in polls if p["sent"] < change["answered"] and change["sent"] < p["answered"]]
        for poll in crossing:
            if poll["sent"] < change["sent"]:
                overtaken += 1
                assert not poll["swapped"], f"a poll asked for before {change['path']} was shown after it"
            else:
                crossed += 1
                assert poll["path"] == change["path"], "a poll sent during a change asked for the view before it"
    assert overtaken >= 2 and crossed >= 1, f"the polls did not cross the changes: {changes} {polls}"


def test_two_quick_changes_on_a_slow_server_both_count(page, held, celery_worker):
    verification_id = submit(page, SAMPLE)
    wait_until_only_the_held_sentence_is_left(held, verification_id)
    index, first, second = choose_evidence(verification_id)
    page.click(f"#sentence-{index}")
    page.wait_for_url(re.compile(rf"\?sentence={index}$"))
    emulate_latency(page)
    page.evaluate(RECORD_REQUESTS)
    server = HeldRequests(page)

    # The second untick comes while the first is still on its way (held: on a loaded machine the
    # second came after the first's answer).
    server.hold("change")
    page.uncheck(f"#include-evidence-{first.id}")
    server.wait_until_held()
    page.uncheck(f"#include-evidence-{second.id}")
    assert page.evaluate("window.__requests.find(r => !r.poll).answered") is None, "the first change was answered"
    server.release()
    both = ",".join(map(str, sorted((first.id, second.id))))
    page.wait_for_url(re.compile(rf"exclude_evidence={both}(&|$)"))
    count_poll_swaps(page)
    wait_for_polls(page, 2)

    state = page.evaluate(READER_STATE)
    assert sorted(state["unticked"]) == sorted((first.id, second.id)), "a quick second change dropped the first"
    assert state["url"].endswith(f"?sentence={index}&exclude_evidence={both}")
    assert_page_shows(page, expected_scores(verification_id, excluded_ids={first.id, second.id}))

    # Another sentence, then at once an untick in the panel that sentence's answer replaces: that
    # untick has no control left when its turn comes, and must not bring the old sentence back.
    elsewhere = next(i for i in (0, 1, 2, 4, 5) if i != index)
    server.hold("change")
    page.click(f"#sentence-{elsewhere}")
    server.wait_until_held()
    # While the sentence's answer is held, so it lands before that answer replaces the panel (on a
    # loaded machine it landed after, in the new panel).
    page.evaluate("document.querySelector('#evidence input[name=evidence]:checked').click()")
    assert page.evaluate("window.__requests.filter(r => !r.poll).at(-1).answered") is None
    server.release()
    page.wait_for_url(re.compile(rf"\?sentence={elsewhere}&"))
    wait_for_polls(page, 2)
    assert page.url.endswith(f"?sentence={elsewhere}&exclude_evidence={both}")
    expect(page.locator("#evidence-heading")).to_have_text(f"Sentence {elsewhere + 1}")


def test_the_end_of_a_run_is_announced_once_to_whoever_watched_it(page, held, celery_worker):
    verification_id = submit(page, SAMPLE)
    ended = page.locator("#run-ended")
    expect(ended).to_have_attribute("role", "status")
    assert page.get_attribute("#result-body", "data-status") not in FINISHED
    expect(ended).to_have_text("")

    held.release()
    wait_until_done(page)
    expect(ended).to_have_text(re.compile(r"^Verification finished[:;] "))
    expect(ended).to_be_visible()
    page.click("#sentence-0")
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 1")
    expect(ended).to_have_text(re.compile(r"^Verification finished[:;] "))

    page.reload()
    expect(page.locator("#result-body")).to_have_attribute("data-status", "done")
    expect(page.locator("#run-ended")).to_have_text("")
    assert Verification.objects.get(pk=verification_id).status == "done"


def test_the_end_of_a_failed_run_is_announced_pointing_at_its_reason(page, held, world, celery_worker):
    world.serper.fail_status = 503
    submit(page, SAMPLE)
    assert page.get_attribute("#result-body", "data-status") not in FINISHED

    held.release()
    expect(page.locator("#result-body")).to_have_attribute("data-status", "failed", timeout=RUN_TIMEOUT)
    expect(page.locator("#run-ended")).to_have_text("Verification failed: the reason is shown below.")
    # The reason itself is in the banner, announced as an alert: said once, not twice.
    expect(page.locator("#problems")).to_have_attribute("role", "alert")


CANNOT_BE_REACHED = re.compile(r"The server cannot be reached\. This page keeps trying")


def pump_until(page, condition, *, timeout_s: float, message: str) -> None:
    """Like wait_for, but lets Playwright deliver the page's events (routes, requests) meanwhile."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{message}: still not so after {timeout_s} s"
        page.wait_for_timeout(50)


def test_polls_that_cannot_reach_the_server_say_so_back_off_and_catch_up(page, held, celery_worker):
    verification_id = submit(page, SAMPLE)
    notice = page.locator("#connection-notice")
    expect(notice).to_have_attribute("role", "status")
    refused = []

    def refuse_polls(route):
        if route.request.headers.get("hx-trigger") == "result-body":
            refused.append(time.monotonic())
            route.abort("connectionrefused")
        else:
            route.fallback()

    page.route("**/v/**", refuse_polls)
    expect(notice).to_have_text(CANNOT_BE_REACHED)
    expect(notice).to_be_visible()
    pump_until(page, lambda: len(refused) >= 3, timeout_s=20, message="the page stopped polling")
    # Polls go every second; after the first failure the next waits 2 s, after the second 4 s
    # (measured here: 3.0 s, then 4.1 s, then 9.0 s and 8.1 s: the next whole second after each wait).
    first, second = refused[1] - refused[0], refused[2] - refused[1]
    assert first >= 1.9 and 3.9 <= second < 12, f"no backoff between refused polls: {first:.1f} s, then {second:.1f} s"
    assert page.get_attribute("#result-body", "data-status") not in FINISHED

    # The run ends while the page cannot hear of it; once polls get through, the page catches up.
    held.release()
    wait_for(
        lambda: Verification.objects.get(pk=verification_id).status in FINISHED,
        timeout_s=RUN_TIMEOUT / 1000,
        message="the run did not end",
    )
    expect(notice).to_have_text(CANNOT_BE_REACHED)
    page.unroute("**/v/**", refuse_polls)
    expect(notice).to_have_text("", timeout=15_000)
    wait_until_done(page)
    assert_page_shows(page, expected_scores(verification_id))
    expect(page.locator("#run-ended")).to_have_text(re.compile(r"^Verification finished"))


def test_a_change_that_cannot_reach_the_server_says_it_was_not_applied(page, world, celery_worker):
    verification_id = submit(page, SAMPLE)
    wait_until_done(page)
    notice = page.locator("#connection-notice")

    page.route("**/v/**", lambda route: route.abort("connectionrefused"))
    page.click("#sentence-0")
    expect(notice).to_have_text(re.compile(r"^The server cannot be reached: your last change was not applied\."))
    assert "sentence=" not in page.url

    page.unroute("**/v/**")
    page.click("#sentence-0")
    page.wait_for_url(re.compile(r"\?sentence=0$"))
    expect(notice).to_have_text("")
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 1")
    assert_page_shows(page, expected_scores(verification_id))


class GatewayProxy(LoopbackServer):
    """A reverse proxy in front of the live server, as nginx stands in front of gunicorn. While
    `status` is set it answers that instead (502: the app behind it is down; 503: overloaded)."""

    def __init__(self, upstream: str) -> None:
        super().__init__(_ProxyHandler)
        self.upstream = urlsplit(upstream).netloc
        self.status = 0
        self.answered: Counter[int] = Counter()


class _ProxyHandler(_Handler):
    owner: GatewayProxy
    # Headers about this hop, not the message (RFC 9110, 7.6.1).
    HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}

    def do_GET(self) -> None:
        proxy = self.owner
        if proxy.status:
            proxy.answered[proxy.status] += 1
            return self._send(proxy.status, b"<h1>Bad gateway</h1>", "text/html")
        upstream = http.client.HTTPConnection(proxy.upstream, timeout=30)
        upstream.request("GET", self.path, headers={k: v for k, v in self.headers.items() if k.lower() != "connection"})
        response = upstream.getresponse()
        body = response.read()
        headers = {k: v for k, v in response.getheaders() if k.lower() not in self.HOP_BY_HOP}
        upstream.close()
        proxy.answered[response.status] += 1
        self._send(response.status, body, headers.pop("Content-Type", "text/html"), headers)


@pytest.mark.parametrize("status", [502, 503])
def test_a_failing_gateway_is_said_until_the_server_answers_again(page, held, live_server, status, celery_worker):
    verification_id = submit(page, SAMPLE)
    proxy = GatewayProxy(live_server.url).start()
    try:
        page.goto(f"{proxy.url}/v/{verification_id}")
        notice = page.locator("#connection-notice")
        expect(page.locator("#result-body")).to_have_attribute("data-status", re.compile("pending|running"))
        expect(notice).to_have_text("")

        proxy.status = status
        expect(notice).to_have_text(CANNOT_BE_REACHED)
        polls = proxy.answered[status]
        pump_until(page, lambda: proxy.answered[status] > polls, timeout_s=10, message="the page stopped polling")
        expect(notice).to_have_text(CANNOT_BE_REACHED)

        proxy.status = 0
        expect(notice).to_have_text("", timeout=15_000)
        held.release()
        wait_until_done(page)
        assert_page_shows(page, expected_scores(verification_id))
    finally:
        proxy.stop()
