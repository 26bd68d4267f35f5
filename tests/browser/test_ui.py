"""The web UI in a real browser: live server → real Celery worker on real Redis → the fake LLM,
search and sites on 127.0.0.1 (tests/fakes.py), driven through headless Chromium."""

import re
import time
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest
from django.template.defaultfilters import floatformat
from playwright.sync_api import expect

from tests.conftest import ROOT
from tests.fakes import FakePage, FakeSite
from verification.models import Source, Verification
from verification.scoring import NOT_SUPPORTED, SUPPORTED, Scores, compute_scores
from verification.selectors import evidence_records
from verification.web.templatetags.factsite import percent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SAMPLE = (ROOT / "sample.txt").read_text()
RESULT_URL = re.compile(r"/v/([0-9a-f-]{36})$")
RUN_TIMEOUT = 60_000


def submit(page, text: str) -> str:
    """Paste `text` on the home page, choose sparse retrieval, verify; returns the run's id."""
    page.goto("/")
    page.fill("textarea[name=text]", text)
    page.check("input[name=retrieval_mode][value=sparse]")
    page.click("button[type=submit]")
    page.wait_for_url(RESULT_URL)
    return RESULT_URL.search(page.url).group(1)


def wait_until_done(page) -> None:
    expect(page.locator("#result-body")).to_have_attribute("data-status", "done", timeout=RUN_TIMEOUT)


def expected_scores(verification_id: str, *, rule: str = "all", excluded_ids=(), excluded_types=()) -> Scores:
    records = evidence_records(Verification.objects.get(pk=verification_id))
    return compute_scores(records, rule=rule, excluded_ids=excluded_ids, excluded_types=excluded_types)


def sentences_on_page(page) -> list[dict]:
    return page.eval_on_selector_all(
        "a.sentence",
        """links => links.map(a => ({
            index: Number(a.dataset.index),
            band: a.dataset.band,
            score: a.dataset.score,
            // A sentence split around its citation badges ends with its score in its last piece.
            badge: (a.closest('.sentence-group') ?? a).querySelector('.score-badge').textContent,
            checking: a.classList.contains('checking'),
        }))""",
    )


def as_score(attribute: str) -> float | None:
    return None if attribute == "" else float(attribute)


def assert_page_shows(page, scores: Scores, *, rule: str = "all", excluded_types=()) -> None:
    """Every number the page shows is the one scoring.compute_scores gives under `rule`, with
    `excluded_types` shown as left out. Waits for the counts first: the whole #result-body is
    swapped at once, so the rest has arrived with them."""
    assert scores.rule == rule, "the expected scores were computed under another rule"
    overall = scores.overall
    expect(page.locator("#overall-counts")).to_have_text(f"supported evidence {overall.supported} of {overall.total}")
    expect(page.locator("#overall-score")).to_have_text(percent(overall.score))
    assert as_score(page.get_attribute("#overall-score", "data-score")) == pytest.approx(overall.score)
    shown = sentences_on_page(page)
    assert shown, "no sentences on the page"
    for sentence in shown:
        tally = scores.sentences.get(sentence["index"])
        score = tally.score if tally else None
        assert sentence["band"] == (tally.band if tally else "none"), sentence
        assert as_score(sentence["score"]) == pytest.approx(score), sentence
        # A sentence still being checked during a run shows that instead of a score.
        assert sentence["badge"] == ("…" if sentence["checking"] else percent(score)), sentence
    expect(page.locator("#result-body")).to_have_attribute("data-score-rule", rule)
    expect(page.locator(f"#rule-{rule}")).to_be_checked()
    for source_type, share in scores.distribution.items():
        expect(page.locator(f".type-percent[data-type={source_type}]")).to_have_text(f"{floatformat(share, 0)}%")
    for source_type in excluded_types:
        assert source_type not in scores.distribution
        expect(page.locator(f".type-percent[data-type={source_type}]")).to_have_text("left out")


def query_values(url: str, name: str) -> list[str]:
    return parse_qs(urlsplit(url).query).get(name, [])


def unticked(page, name: str) -> list[str]:
    return page.eval_on_selector_all(f"input[type=checkbox][name={name}]:not(:checked)", "els => els.map(e => e.value)")


def wait_until(page, expression: str, *, timeout_s: float) -> None:
    """Polls a JavaScript expression. Not page.wait_for_function: it evaluates its predicate with
    eval(), which the Content-Security-Policy forbids; page.evaluate goes through the DevTools
    protocol, outside the page's policy."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"still false after {timeout_s} s: {expression}"
        page.wait_for_timeout(50)


def test_the_journey_from_paste_to_shared_link(new_context, world, celery_worker):
    context = new_context()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto("/")
    page.fill("textarea[name=text]", SAMPLE)
    page.check("input[name=retrieval_mode][value=sparse]")

    # A clean run (the blog's page that refuses robots is not found): no problems banner here;
    # other tests cover failures.
    world.sites[2].pages["/blocked"].searchable = False
    # Slow model answers keep the run going long enough to see the progress.
    world.llm.latency = 0.5
    page.click("button[type=submit]")
    page.wait_for_url(RESULT_URL)
    verification_id = RESULT_URL.search(page.url).group(1)
    expect(page.locator("#run-progress")).to_be_visible()
    expect(page.locator("#progress label")).not_to_have_text("Verifying… 0%")
    assert page.get_attribute("#result-body", "data-status") != "done"
    world.llm.latency = 0.0
    page.evaluate("window.__marker = 1")

    wait_until_done(page)
    expect(page.locator("#run-progress")).to_have_count(0)
    assert page.evaluate("window.__marker") == 1, "the page reloaded instead of updating in place"
    scores = expected_scores(verification_id)
    assert_page_shows(page, scores)
    assert {s["band"] for s in sentences_on_page(page)} - {"none"}, "no sentence is coloured"
    expect(page.locator("#problems")).to_have_count(0)

    # A sentence with evidence both ways, and a supported piece of evidence from another type
    # than the contradicting one, so leaving out each changes the score in its own way.
    records = evidence_records(Verification.objects.get(pk=verification_id))
    index, chosen, against = next(
        (r.sentence_index, r, other)
        for r in records
        if r.verdict == SUPPORTED
        for other in records
        if other.sentence_index == r.sentence_index
        and other.verdict == NOT_SUPPORTED
        and other.source_type != r.source_type
    )
    page.click(f"#sentence-{index}")
    page.wait_for_url(re.compile(rf"\?sentence={index}$"))
    expect(page.locator("#evidence-heading")).to_have_text(f"Sentence {index + 1}")
    sentence = Verification.objects.get(pk=verification_id).sentences.get(index=index)
    claims = list(sentence.claims.order_by("index"))
    expect(page.locator("#evidence .claim h3")).to_have_text([c.text for c in claims])
    shown_evidence = page.eval_on_selector_all("#evidence input[name=evidence]", "els => els.map(e => e.value)")
    assert sorted(map(int, shown_evidence)) == sorted(r.id for r in records if r.sentence_index == index)
    assert not unticked(page, "evidence")
    expect(page.locator(f"#evidence-{chosen.id} .passage")).not_to_be_empty()
    expect(page.locator(f"#evidence-{chosen.id} .verdict")).to_have_text("supports")

    page.uncheck(f"#evidence input[name=evidence][value='{chosen.id}']")
    page.wait_for_url(re.compile(rf"exclude_evidence={chosen.id}(&|$)"))
    narrowed = expected_scores(verification_id, excluded_ids={chosen.id})
    assert narrowed.overall != scores.overall
    assert_page_shows(page, narrowed)
    assert narrowed.sentences.get(index) != scores.sentences.get(index)
    assert unticked(page, "evidence") == [str(chosen.id)]
    expect(page.locator(f"#evidence-{chosen.id}")).to_have_class(re.compile(r"\bexcluded\b"))
    assert page.evaluate("window.__marker") == 1, "toggling evidence reloaded the page"

    source_type = against.source_type
    page.uncheck(f".type-row input[name=source_type][value={source_type}]")
    page.wait_for_url(re.compile(rf"exclude_types={source_type}(&|$)"))
    assert f"exclude_evidence={chosen.id}" in page.url
    both = expected_scores(verification_id, excluded_ids={chosen.id}, excluded_types={source_type})
    assert both.overall != narrowed.overall
    assert source_type not in both.distribution
    assert_page_shows(page, both, excluded_types={source_type})
    assert unticked(page, "source_type") == [source_type]
    against_box = page.locator(f"#evidence input[name=evidence][value='{against.id}']")
    expect(against_box).not_to_be_checked()
    expect(against_box).to_be_disabled()
    assert page.evaluate("window.__marker") == 1, "toggling a source type reloaded the page"

    permalink = page.url
    page.click("[data-copy-link]")
    expect(page.locator("[data-copy-link]")).to_have_text("Link copied")
    assert page.evaluate("navigator.clipboard.readText()") == permalink

    shared = new_context().new_page()
    shared.goto(permalink)
    expect(shared.locator("#result-body")).to_have_attribute("data-status", "done")
    assert shared.get_attribute("#overall-score", "data-score") == page.get_attribute("#overall-score", "data-score")
    assert_page_shows(shared, both, excluded_types={source_type})
    assert [s["band"] for s in sentences_on_page(shared)] == [s["band"] for s in sentences_on_page(page)]
    assert unticked(shared, "source_type") == [source_type]
    assert sorted(unticked(shared, "evidence")) == sorted(unticked(page, "evidence"))
    assert str(chosen.id) in unticked(shared, "evidence")
    expect(shared.locator("#evidence-heading")).to_have_text(f"Sentence {index + 1}")


def test_an_empty_text_shows_the_error_next_to_the_field(page, live_server, world, celery_worker):
    page.goto("/")
    page.click("button[type=submit]")

    error = page.locator(".field:has(textarea[name=text]) #text-error")
    expect(error).to_have_text("Paste some text to verify.")
    expect(page.locator("textarea[name=text]")).to_have_attribute("aria-describedby", "text-error text-count")
    assert page.url == live_server.url + "/"
    assert not Verification.objects.exists()


def test_an_invalid_setting_keeps_the_pasted_text(page, live_server, world, celery_worker):
    page.goto("/")
    page.fill("textarea[name=text]", SAMPLE)
    page.click("summary:has-text('Advanced')")
    page.fill("input[name=top_k_results]", "0")
    page.click("button[type=submit]")

    expect(page.locator(".field:has(input[name=top_k_results]) .field-error")).to_be_visible()
    expect(page.locator("textarea[name=text]")).to_have_value(SAMPLE)
    expect(page.locator("input[name=top_k_results]")).to_have_value("0")
    assert page.url == live_server.url + "/"
    assert not Verification.objects.exists()


SCRIPT = "<script>window.__xss=1</script>"
SCRIPT_AS_HTML_TEXT = SCRIPT.replace("<", "&lt;").replace(">", "&gt;")
# The closing tag would break out of the "Edit text" textarea if the text were not escaped there.
PASTED_MARKUP = '</textarea><img src=x onerror="window.__xss=1">' + SCRIPT


def test_markup_in_the_text_and_in_a_page_title_is_shown_as_text(page, world, celery_worker):
    # Escaped in the fake page's HTML, so the title and text the extractor reads are the markup
    # itself (a raw <script> inside <title> is dropped by the HTML parser before it gets that far).
    hostile = FakeSite(
        pages={
            "/facts": FakePage(
                f"Eiffel Tower Paris France facts {SCRIPT_AS_HTML_TEXT}",
                f"The Eiffel Tower is in Paris, France.\n\nOne visitor wrote {SCRIPT_AS_HTML_TEXT}.",
            )
        }
    ).start()
    # A new list: the world fixture stops only its own sites, this test stops this one.
    world.serper.sites = [*world.serper.sites, hostile]
    try:
        text = f"The Eiffel Tower is in Paris {PASTED_MARKUP} France."
        verification_id = submit(page, text)
        wait_until_done(page)
    finally:
        hostile.stop()
    source = Source.objects.get(verification_id=verification_id, url__startswith=hostile.url)
    assert SCRIPT in source.title  # the test is only worth something if the markup got this far

    page.click("#sentence-0")
    evidence = page.locator(f"#evidence .evidence:has(a.source-title[href^='{hostile.url}'])")
    expect(evidence.locator("a.source-title")).to_have_text(source.title)
    expect(evidence.locator(".passage")).to_contain_text(SCRIPT)
    expect(page.locator("#sentence-0")).to_contain_text(PASTED_MARKUP)
    expect(page.locator("#evidence .selected-sentence")).to_contain_text(PASTED_MARKUP)
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("#result-body script, #result-body img").count() == 0

    page.get_by_role("link", name="Edit text").click()
    expect(page.locator("textarea[name=text]")).to_have_value(text)
    assert page.evaluate("typeof window.__xss") == "undefined"


FOCUSED_SENTENCE = "document.activeElement.matches('a.sentence') ? Number(document.activeElement.dataset.index) : null"


def test_sentences_are_reachable_by_keyboard_and_show_their_score_in_text(page, world, celery_worker):
    verification_id = submit(page, SAMPLE)
    wait_until_done(page)
    scores = expected_scores(verification_id)
    indexes = [s["index"] for s in sentences_on_page(page)]

    reached = []
    for _ in range(len(indexes) + 20):  # the header, the type toggles and the actions come first
        page.keyboard.press("Tab")
        index = page.evaluate(FOCUSED_SENTENCE)
        if index is not None:
            reached.append(index)
            focused = page.locator(f"#sentence-{index}")
            tally = scores.sentences.get(index)
            badge = focused.locator(".score-badge")
            expect(badge).to_be_visible()
            expect(badge).to_have_text(percent(tally.score if tally else None))
            assert focused.evaluate("a => getComputedStyle(a).outlineStyle") != "none", "no visible focus"
        elif reached:
            break
    assert reached == indexes
    assert {s["badge"] for s in sentences_on_page(page)} - {"—"}, "no sentence shows a score"

    page.focus("#sentence-1")
    page.keyboard.press("Enter")
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 2")
    assert page.evaluate(FOCUSED_SENTENCE) == 1, "selecting a sentence lost the keyboard focus"

    checkbox = page.locator("input[name=evidence]").first
    checkbox_id = checkbox.get_attribute("id")
    checkbox.focus()
    page.keyboard.press("Space")
    expect(page.locator(f"#{checkbox_id}")).not_to_be_checked()
    assert page.evaluate("document.activeElement.id") == checkbox_id, "toggling evidence lost the keyboard focus"


def test_editing_the_text_starts_a_new_run_and_keeps_the_old_one(page, world, celery_worker):
    old_id = submit(page, SAMPLE)
    wait_until_done(page)
    old_permalink = page.url

    page.get_by_role("link", name="Edit text").click()
    page.wait_for_url(f"**/?edit={old_id}")
    expect(page.locator("textarea[name=text]")).to_have_value(SAMPLE)
    expect(page.locator("input[name=retrieval_mode][value=sparse]")).to_be_checked()
    assert "330 metres" in SAMPLE
    edited = SAMPLE.replace("330 metres", "300 metres")
    page.fill("textarea[name=text]", edited)
    page.click("button[type=submit]")
    page.wait_for_url(RESULT_URL)
    new_id = RESULT_URL.search(page.url).group(1)
    wait_until_done(page)

    assert new_id != old_id and page.url != old_permalink
    new = Verification.objects.get(pk=new_id)
    assert new.text == edited and str(new.edited_from_id) == old_id
    assert new.settings["retrieval_mode"] == "sparse"
    expect(page.locator(".text")).to_contain_text("300 metres")

    page.goto(old_permalink)
    wait_until_done(page)
    expect(page.locator(".text")).to_contain_text("It is 330 metres tall")
    expect(page.locator(".text")).not_to_contain_text("300 metres")


def test_a_failing_search_shows_the_reasons_and_retry_completes_the_run(page, world, celery_worker):
    world.serper.fail_status = 503
    verification_id = submit(page, SAMPLE)
    # Every claim's search fails, so no evidence at all: the run as a whole failed.
    expect(page.locator("#result-body")).to_have_attribute("data-status", "failed", timeout=RUN_TIMEOUT)

    problems = page.locator("#problems")
    expect(problems).to_be_visible()
    expect(problems).to_have_attribute("role", "alert")
    expect(problems.locator("li[data-step=search]")).to_contain_text("Web search")
    expect(problems).to_contain_text("503")

    world.serper.fail_status = 0
    page.get_by_role("button", name="Retry failed parts").click()
    wait_until_done(page)
    expect(page.locator("#problems", has_text=re.compile("web search", re.IGNORECASE))).to_have_count(0)
    expect(page.locator("#problems li[data-step=search]")).to_have_count(0)
    assert_page_shows(page, expected_scores(verification_id))


def test_a_shared_link_with_exclusions_says_so_and_show_everything_restores(new_context, world, celery_worker):
    page = new_context().new_page()
    verification_id = submit(page, SAMPLE)
    wait_until_done(page)
    records = evidence_records(Verification.objects.get(pk=verification_id))
    assert any(r.source_type == "news" for r in records)
    left_out = next(r for r in records if r.source_type not in ("news", "") and r.verdict)
    narrowed = expected_scores(verification_id, excluded_ids={left_out.id}, excluded_types={"news"})
    assert narrowed.overall.excluded > 1  # the news items and the one chosen by id

    shared = new_context().new_page()
    shared.goto(f"/v/{verification_id}?exclude_evidence={left_out.id}&exclude_types=news")
    notice = shared.locator("#exclusions")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("Source types left out: News.")
    expect(notice).to_contain_text(f"{narrowed.overall.excluded} evidence items not counted.")
    assert_page_shows(shared, narrowed, excluded_types={"news"})

    shared.click("#show-all")
    expect(notice).to_have_count(0)
    shared.wait_for_url(RESULT_URL)
    assert "exclude" not in shared.url
    assert not unticked(shared, "source_type")
    assert_page_shows(shared, expected_scores(verification_id))


def test_an_opened_rationale_stays_open_while_the_run_goes_on(page, world, celery_worker, settings):
    # The sentence with "1930" is split and judged seconds late; the first sentence is not (each
    # sentence on its own: decomposed together, they would wait for each other's call).
    settings.DECOMPOSE_CHUNK_SENTENCES = 1
    world.llm.slow_words = {"1930": 3.0}
    submit(page, SAMPLE)
    page.click("#sentence-0")
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 1")
    rationale = page.locator("#evidence details.rationale:visible").first
    expect(rationale).to_be_visible(timeout=RUN_TIMEOUT)
    rationale_id = rationale.get_attribute("id")
    details = page.locator(f"#{rationale_id}")
    details.locator("summary").click()
    assert details.evaluate("d => d.open")

    page.evaluate(
        """() => { window.__swaps = 0;
        document.body.addEventListener('htmx:afterSettle', () => { window.__swaps += 1; }); }"""
    )
    wait_until(page, "window.__swaps >= 2", timeout_s=10)
    assert page.get_attribute("#result-body", "data-status") != "done", "the run ended before two polls"
    assert details.evaluate("d => d.open"), "a poll closed the rationale"

    wait_until_done(page)
    expect(details).to_be_visible()
    assert details.evaluate("d => d.open"), "finishing the run closed the rationale"


def test_a_too_long_paste_is_refused_with_the_limit_and_kept(page, live_server, world, celery_worker):
    paragraphs = []
    while sum(len(p) + 2 for p in paragraphs) < 25_000:
        paragraphs.append(f"Paragraph {len(paragraphs) + 1}. " + SAMPLE.split("\n\n")[0])
    text = "\n\n".join(paragraphs)[:25_000]
    assert len(text) == 25_000 and "\n" in text

    page.goto("/")
    page.fill("textarea[name=text]", text)
    expect(page.locator("#text-count")).to_contain_text("25,000 / 20,000 characters")
    expect(page.locator("#text-count")).to_contain_text("5,000 over the limit")
    page.check("input[name=retrieval_mode][value=sparse]")
    page.click("button[type=submit]")

    expect(page.locator("#text-error")).to_contain_text("the limit is 20,000")
    assert page.url == live_server.url + "/"
    kept = page.input_value("textarea[name=text]").replace("\r\n", "\n")
    assert len(kept) == 25_000
    assert kept == text
    assert not Verification.objects.exists()


def test_the_score_rule_switch_changes_the_numbers_and_survives_a_reload(page, world, celery_worker):
    verification_id = submit(page, SAMPLE)
    wait_until_done(page)
    by_all = expected_scores(verification_id)
    assert_page_shows(page, by_all)
    decisive = expected_scores(verification_id, rule="decisive")
    assert decisive.overall.score != by_all.overall.score, "the sample does not tell the rules apart"
    page.evaluate("window.__marker = 1")

    page.check("#rule-decisive")
    page.wait_for_url(re.compile(r"[?&]score_rule=decisive(&|$)"))
    assert query_values(page.url, "score_rule") == ["decisive"]  # once: the radio's own value is not added
    assert_page_shows(page, decisive, rule="decisive")
    assert page.evaluate("window.__marker") == 1, "switching the rule reloaded the page"

    page.reload()
    expect(page.locator("#rule-decisive")).to_be_checked()
    assert_page_shows(page, decisive, rule="decisive")

    page.check("#rule-all")
    page.wait_for_url(lambda url: "score_rule=decisive" not in url)
    assert query_values(page.url, "score_rule") == []  # the default rule keeps the link short
    assert_page_shows(page, by_all)


def test_no_page_breaks_the_content_security_policy(page, world, celery_worker):
    messages = []
    page.on("console", lambda message: messages.append(message.text))

    response = page.goto("/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe-inline" not in policy
    submit(page, SAMPLE)
    wait_until_done(page)
    page.click("#sentence-0")
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 1")
    page.uncheck(".type-row input[name=source_type] >> nth=0")
    page.wait_for_url(re.compile(r"exclude_types="))
    expect(page.locator(".type-row.excluded")).to_have_count(1)
    # The source-type bars are <meter>s whose value is the share shown beside them.
    for row in page.locator(".type-row:not(.excluded)").all():
        shown = row.locator(".type-percent").inner_text().rstrip("%")
        assert round(float(row.locator("meter.bar").get_attribute("value"))) == int(shown)
    for path in ("/about", f"/v/{uuid.uuid4()}", "/api/docs"):
        page.goto(path)
    expect(page.locator("#swagger-ui .opblock").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert [m for m in messages if "Content Security Policy" in m] == []

    # The listener does hear a violation: an inline style set by a script is refused and reported.
    page.goto("/")
    with page.expect_console_message(lambda message: "Content Security Policy" in message.text):
        page.evaluate("document.body.setAttribute('style', 'outline: 1px solid red')")
    assert any("Content Security Policy" in m and "style-src" in m for m in messages)
