"""Trails end to end (issue 26): POST /api/trails → the Celery worker on real Redis → the fake LLM
over real HTTP on 127.0.0.1, which answers the trail's steps by what each prompt says
(tests/trail_model.py) → GET /api/trails/<id>."""

import copy
import json
import re
import socket
import subprocess
import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from tests.conftest import ROOT
from tests.fakes import FakePage, FakeSite
from tests.trail_fixtures import GRAPHRAG, HALVARD, MARLOW, QUENBY
from verification import tasks
from verification.models import Claim, TrailRound, TrailSelection, Verification, WorkerProcess
from verification.pipeline import trail_select, trail_select_many, trail_verdict_many
from verification.worker import heartbeat

pytestmark = pytest.mark.django_db(transaction=True)

# The example trail in the repository (docs/trails.md): one claim supported from the sources up,
# one that entered at the section summary ("painted gold"), one at the final step ("aquarium").
EXAMPLE = json.loads((ROOT / "docs" / "examples" / "trail.json").read_text())
SOURCE_A = EXAMPLE["nodes"][0]["text"]


def trail(source_a: dict | None = None) -> dict:
    nodes = copy.deepcopy(EXAMPLE["nodes"])
    if source_a is not None:
        nodes[0] = source_a
    return {"nodes": nodes}


MANY = trail_select_many.SYSTEM_PROMPT


def start(client, body: dict) -> str:
    """Starts a trail run; the client then sends the owner token it was given, as its creator."""
    response = client.post("/api/trails", body, content_type="application/json")
    assert response.status_code == 201, response.content
    client.defaults["HTTP_X_CLIENT_TOKEN"] = response["X-Client-Token"]
    return response.json()["id"]


def wait_for(client, run_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = client.get(f"/api/trails/{run_id}").json()
        if result["status"] in ("done", "failed"):
            return result
        time.sleep(0.1)
    raise AssertionError(f"trail run did not finish: {result['status']}")


def by_text(result: dict) -> dict[str, dict]:
    return {claim["text"]: claim for claim in result["claims"]}


def test_each_planted_claim_gets_its_verdict_and_entry_step(client, world, celery_worker):
    result = wait_for(client, start(client, {"trail": trail()}))

    assert result["status"] == "done", result["error"]
    claims = by_text(result)
    opened = claims["The Eiffel Tower opened in Paris in 1889."]
    assert opened["verdict"] == "fully_supported"
    assert opened["entered"] is None
    assert opened["path"]["sources"] == ["src-a"]
    assert [r["candidates"] for r in opened["rounds"]][:2] == [["sum-1"], ["src-a", "src-b"]]

    gold = claims["The tower was painted gold in 1920."]
    assert gold["verdict"] == "not_fully_supported"
    assert gold["entered"]["kind"] == "stage"
    assert gold["entered"]["nodes"] == ["sum-1"] and gold["entered"]["steps"] == ["section summary"]
    assert gold["entered"]["words"] == "entered at 'section summary', in 'sum-1': its inputs do not support it"

    aquarium = claims["The tower hosts a famous underwater aquarium."]
    assert aquarium["verdict"] == "not_fully_supported"
    assert aquarium["entered"]["kind"] == "final_step"

    assert result["summary"]["entered_at"] == [{"step": "section summary", "stage": 1, "count": 1}]
    assert result["summary"]["entered_at_final_step"] == 1
    assert [s["band"] for s in result["sentences"]] == ["green", "red", "red"]
    assert result["score"] == pytest.approx(1 / 3)
    assert result["usage"]["llm_calls"] > 0


def test_the_nodes_of_a_round_are_each_selected_once_and_the_selection_holds_only_offered_ids(
    client, world, celery_worker
):
    run_id = start(client, {"trail": trail()})
    wait_for(client, run_id)

    rounds = TrailRound.objects.filter(claim__sentence__verification_id=run_id)
    assert all(r.status == "done" for r in rounds)
    for selection in TrailSelection.objects.filter(round__in=rounds):
        assert set(selection.result["sentence_ids"]) <= set(selection.result["sentences"]), selection.result
    # Every (claim, node) visited asked once, alone or in a call shared with other claims of the
    # run waiting for the same text (one "Cn:" line each), and fewer calls than claims asked.
    asked = [(r["messages"][0]["content"], r["messages"][-1]["content"]) for r in world.llm.requests]
    alone = sum(system == trail_select.SYSTEM_PROMPT for system, _ in asked)
    together = [
        len(re.findall(r"^C\d+: ", user, re.MULTILINE))
        for system, user in asked
        if system == trail_select_many.SYSTEM_PROMPT
    ]
    assert alone + sum(together) == TrailSelection.objects.filter(round__in=rounds).count()
    assert together and max(together) > 1


def test_q_1_stops_a_claim_at_its_first_unsupported_round(client, world, celery_worker):
    result = wait_for(client, start(client, {"trail": trail(), "q": 1}))

    aquarium = by_text(result)["The tower hosts a famous underwater aquarium."]
    assert [r["verdict"] for r in aquarium["rounds"]] == ["not_fully_supported"]
    assert aquarium["stop"] == "not_supported_q_times"
    result_q3 = wait_for(client, start(client, {"trail": trail(), "q": 3}))
    assert len(by_text(result_q3)["The tower hosts a famous underwater aquarium."]["rounds"]) == 2


def test_a_source_given_as_a_web_address_is_read_and_checked(client, world, celery_worker):
    site = FakeSite(pages={"/report": FakePage(title="The tower", body=SOURCE_A)}).start()
    try:
        source = {"id": "src-a", "document": {"url": f"{site.url}/report"}, "from": [], "step": "source"}
        result = wait_for(client, start(client, {"trail": trail(source)}))
    finally:
        site.stop()

    assert site.hits["/report"] == 1
    node = next(node for node in result["nodes"] if node["id"] == "src-a")
    assert node["status"] == "done" and "opened in Paris in 1889" in node["text"]
    assert by_text(result)["The Eiffel Tower opened in Paris in 1889."]["path"]["sources"] == ["src-a"]


def test_a_source_that_cannot_be_read_says_why_and_the_run_still_ends(client, world, celery_worker):
    site = FakeSite(pages={"/gone": FakePage(title="Gone", body="", status=403)}).start()
    try:
        source = {"id": "src-a", "document": {"url": f"{site.url}/gone"}, "from": [], "step": "source"}
        result = wait_for(client, start(client, {"trail": trail(source)}))
    finally:
        site.stop()

    assert result["status"] == "done"
    node = next(node for node in result["nodes"] if node["id"] == "src-a")
    assert node["status"] == "failed" and "403" in node["error"]
    # Nothing in the sources states it now: the claim is no longer supported down to them.
    assert by_text(result)["The Eiffel Tower opened in Paris in 1889."]["verdict"] == "not_fully_supported"


def test_a_failed_selection_fails_its_claim_and_a_retry_goes_on_from_its_rounds(client, world, celery_worker):
    # Its selections only (alone "Claim: The tower…", together "C3: The tower…"), not its decomposition.
    world.llm.fail_words = {": The tower hosts": 500}
    run_id = start(client, {"trail": trail()})
    result = wait_for(client, run_id)
    aquarium = by_text(result)["The tower hosts a famous underwater aquarium."]
    assert aquarium["status"] == "failed" and "selecting evidence in 'sum-1' failed" in aquarium["error"]
    assert by_text(result)["The Eiffel Tower opened in Paris in 1889."]["verdict"] == "fully_supported"
    # It failed in a call shared with the other claims, which were then asked alone and did not fail.
    shared = [r["messages"][-1]["content"] for r in world.llm.requests if r["messages"][0]["content"] == MANY]
    assert any(": The tower hosts" in user and "The tower was painted gold" in user for user in shared)

    world.llm.fail_words = {}
    token = Verification.objects.get(pk=run_id)  # the run's creator retries it
    assert token.status == "done"
    response = client.post(f"/api/verifications/{run_id}/retry", content_type="application/json")
    assert response.status_code in (200, 202), response.content
    result = wait_for(client, run_id)

    aquarium = by_text(result)["The tower hosts a famous underwater aquarium."]
    assert aquarium["verdict"] == "not_fully_supported" and aquarium["entered"]["kind"] == "final_step"
    claim = Claim.objects.get(sentence__verification_id=run_id, text=aquarium["text"])
    assert claim.trail_rounds.filter(index=1).count() == 1  # round 1 was reopened, not duplicated


@pytest.mark.parametrize(
    ("nodes", "says"),
    [
        pytest.param(
            [
                {"id": "r", "text": "R is so.", "from": []},
                {"id": "a", "text": "A is so.", "from": ["r", "b"]},
                {"id": "b", "text": "B is so.", "from": ["a"]},
                {"id": "f", "text": "F is so.", "from": ["a"]},
            ],
            "cycle",
            id="cycle",
        ),
        pytest.param(
            [{"id": "a", "text": "A is so.", "from": []}, {"id": "f", "text": "F is so.", "from": ["x"]}],
            "'x'",
            id="unknown-input",
        ),
        pytest.param(
            [
                {"id": "a", "text": "A is so.", "from": []},
                {"id": "f1", "text": "F is so.", "from": ["a"]},
                {"id": "f2", "text": "G is so.", "from": ["a"]},
            ],
            "final",
            id="two-final-nodes",
        ),
        pytest.param(
            [
                {"id": "a", "text": "A is so.", "from": []},
                {"id": "f", "document": {"url": "https://e.org/"}, "from": ["a"]},
            ],
            "needs its 'text'",
            id="final-without-text",
        ),
        pytest.param(
            [
                {"id": "a", "document": {"url": "file:///etc/passwd"}, "from": []},
                {"id": "f", "text": "F.", "from": ["a"]},
            ],
            "'a'",
            id="unsafe-document",
        ),
        pytest.param(
            [{"id": "a", "text": "A is so.", "stage": 10**30}, {"id": "f", "text": "F is so.", "from": ["a"]}],
            "node 'a': 'stage' is a whole number from 0 to 1,000,000",
            id="stage-beyond-any-trail",
        ),
    ],
)
def test_an_invalid_trail_is_refused_with_the_node_and_the_problem(client, configured, nodes, says):
    response = client.post("/api/trails", {"trail": {"nodes": nodes}}, content_type="application/json")

    assert response.status_code == 400, response.content
    assert says in response.json()["detail"]
    assert not Verification.objects.exists()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"nodes": []}, "unknown key 'nodes': nodes belongs inside trail"),
        ({"settings": {"q": 2}}, "unknown key 'settings': settings is not taken by a trail run: give model and q"),
        ({"evidence": "documents"}, "unknown key 'evidence' (the keys here are trail, model, q, quick)"),
    ],
    ids=["nodes-beside-the-trail", "settings", "evidence"],
)
def test_a_key_a_trail_run_does_not_know_is_refused_naming_it(client, configured, extra, says):
    response = client.post("/api/trails", {"trail": trail(), **extra}, content_type="application/json")

    assert response.status_code == 400, response.content
    assert says in response.json()["detail"]
    assert not Verification.objects.exists()


def test_quick_mode_is_refused_for_a_trail_with_the_reason(client, configured):
    response = client.post("/api/trails", {"trail": trail(), "quick": True}, content_type="application/json")

    assert response.status_code == 400, response.content
    assert "not offered for trails" in response.json()["detail"]
    assert not Verification.objects.exists()


def test_the_trail_format_is_in_the_openapi_document(client):
    schema = client.get("/api/openapi.json").json()
    body = schema["paths"]["/api/trails"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    trail_in = schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    node = trail_in["properties"]["trail"]["properties"]["nodes"]["items"]
    assert {"id", "text", "document", "from", "step", "stage"} <= set(node["properties"])


def test_a_run_that_is_not_a_trail_is_not_read_as_one(client, configured):
    run = Verification.objects.create(text="Paris is in France.", settings={"evidence": "web"})
    assert client.get(f"/api/trails/{run.pk}").status_code == 404


def test_the_reports_say_where_each_claim_entered_with_outside_text_made_inert(client, world, celery_worker):
    hostile = copy.deepcopy(EXAMPLE)
    hostile["nodes"][2]["step"] = "<b>section</b> [summary](javascript:alert(1))"
    run_id = start(client, {"trail": hostile})
    wait_for(client, run_id)

    markdown = client.get(f"/v/{run_id}/report.md").content.decode()
    assert "entered at the final step" in markdown
    assert "supported down to: src-a" in markdown
    assert "[summary](javascript" not in markdown and "\\<b\\>section\\</b\\>" in markdown

    html = client.get(f"/v/{run_id}/report.html").content.decode()
    assert "<main>" in html and "<b>section</b>" not in html
    assert "&lt;b&gt;section&lt;/b&gt;" in html
    assert "<mark>The Eiffel Tower opened in Paris in 1889.</mark>" in html

    rows = client.get(f"/v/{run_id}/evidence.csv").content.decode().splitlines()
    assert rows[0] == "sentence,claim,verdict,entered,round,round_verdict,node,selected,summary"
    assert any("sum-1" in row and "painted gold" in row for row in rows[1:])


def test_my_checks_lists_a_trail_run_with_the_share_of_its_claims_fully_supported(client, world, celery_worker):
    response = client.post("/api/trails", {"trail": trail()}, content_type="application/json")
    token = response["X-Client-Token"]
    wait_for(client, response.json()["id"])

    rows = client.get("/api/verifications", HTTP_X_CLIENT_TOKEN=token).json()

    assert [row["id"] for row in rows] == [response.json()["id"]]
    assert rows[0]["score"] == pytest.approx(1 / 3) and rows[0]["band"] == "orange"
    assert rows[0]["evidence"] == "the steps that made it"


def test_a_failed_round_verdict_fails_its_claim_with_the_reason_and_the_run_still_ends(client, world, celery_worker):
    # Only the round verdicts that read an intermediate text's summary (the selections never say this).
    world.llm.fail_words = {"what it says about the claim": 500}
    result = wait_for(client, start(client, {"trail": trail()}))

    assert result["status"] == "done"
    opened = by_text(result)["The Eiffel Tower opened in Paris in 1889."]
    assert opened["status"] == "failed" and opened["error"].startswith("the verdict failed:")
    assert opened["verdict_label"] == "not checked: it failed"  # not "being checked": it never will be
    assert "HTTP 500" in opened["error"]
    # A claim no text supports has no verdict to ask for: it still ends with its entry step.
    aquarium = by_text(result)["The tower hosts a famous underwater aquarium."]
    assert aquarium["verdict"] == "not_fully_supported" and aquarium["entered"]["kind"] == "final_step"


def settled(count, quiet_s: float = 0.5, timeout: float = 30) -> None:
    """Waits until `count()` is above 0 and has not moved for `quiet_s`."""
    deadline, last, since = time.monotonic() + timeout, -1, time.monotonic()
    while time.monotonic() < deadline:
        now = count()
        if now != last:
            last, since = now, time.monotonic()
        elif now and time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.05)
    raise AssertionError(f"still moving: {last}")


def test_a_cancelled_trail_calls_the_model_no_more_and_its_unreached_claims_end_cancelled(
    client, world, celery_worker, settings
):
    # One request at a time, as a laptop's model server takes them: the others wait for its slot.
    settings.LLM_CONCURRENCY = 1
    world.llm.held_words = ("aquarium",)  # every call about the third claim waits (shared calls too)
    run_id = start(client, {"trail": trail()})
    settled(lambda: world.llm.held)  # the run is mid-flight: what is not held is done or waits on it

    cancelled = client.post(f"/api/verifications/{run_id}/cancel", content_type="application/json")
    calls_at_cancel = len(world.llm.requests)
    world.llm.release()
    time.sleep(2)  # what was queued or in flight has had its chance to run

    assert cancelled.status_code == 202, cancelled.content
    assert len(world.llm.requests) == calls_at_cancel  # no call after the cancel; the held ones ended
    result = client.get(f"/api/trails/{run_id}").json()
    assert result["status"] == "cancelled"
    unreached = [claim for claim in result["claims"] if claim["verdict"] is None]
    assert unreached, "every claim had its verdict: nothing was left to cancel"
    for claim in unreached:
        assert claim["status"] == "cancelled" and claim["verdict_label"] == "not checked: the run was cancelled"
    judged = [claim["verdict"] for claim in result["claims"] if claim["verdict"]]
    assert result["score"] == (judged.count("fully_supported") / len(judged) if judged else None)
    assert result["summary"]["verdicts"].get("cancelled") == len(unreached)
    page = client.get(f"/v/{run_id}").content.decode()
    assert page.count("being checked") == 1 and ">not checked</span>" in page  # "being checked": the legend's
    (row,) = client.get("/api/verifications").json()
    assert row["status"] == "cancelled" and row["score"] == result["score"]


VERDICTS = trail_verdict_many.SYSTEM_PROMPT


def verdicts_of(result: dict) -> dict[str, tuple]:
    return {claim["text"]: (claim["verdict"], (claim["entered"] or {}).get("node")) for claim in result["claims"]}


def verdict_prompts(world) -> list[str]:
    """The user prompts of the calls that asked several claims' round verdicts at once."""
    return [r["messages"][-1]["content"] for r in world.llm.requests if r["messages"][0]["content"] == VERDICTS]


def test_the_round_verdicts_of_claims_ready_together_share_a_call_and_each_claim_keeps_its_own(
    client, world, celery_worker, settings
):
    settings.TRAIL_BATCH_CLAIMS = 1  # each claim's verdicts asked alone, as VeriTrail asks them
    alone = wait_for(client, start(client, {"trail": trail()}))
    calls_alone = len(world.llm.requests)
    settings.TRAIL_BATCH_CLAIMS = 8
    cache.clear()  # nothing answered from the first run's answers
    world.llm.requests.clear()
    together = wait_for(client, start(client, {"trail": trail()}))

    assert alone["status"] == together["status"] == "done"
    assert verdicts_of(together) == verdicts_of(alone)
    assert any("[C1] Claim:" in user and "[C2] Claim:" in user for user in verdict_prompts(world))
    assert len(world.llm.requests) < calls_alone


def test_a_shared_verdict_call_that_fails_is_asked_again_alone_for_each_claim(client, world, celery_worker):
    world.llm.fail_words = {"[C2] Claim:": 500}  # only a shared verdict call holds this
    result = wait_for(client, start(client, {"trail": trail()}))

    assert verdict_prompts(world), "no shared verdict call was made"
    assert result["status"] == "done"
    assert all(claim["status"] == "done" for claim in result["claims"]), result["claims"]
    assert by_text(result)["The Eiffel Tower opened in Paris in 1889."]["verdict"] == "fully_supported"


def test_rounds_taken_by_a_verdict_task_whose_worker_died_are_judged_by_the_task_sent_again(
    client, world, celery_worker
):
    """The rounds a verdict task took for its call (its own and other claims') carry its mark; when
    its process dies, the task sent again (resume._send_orphaned_tasks) takes them all over, and
    while the process lives, another task leaves them alone."""
    run_id = start(client, {"trail": trail()})
    before = verdicts_of(wait_for(client, run_id))
    rounds = [
        claim.trail_rounds.order_by("index").last() for claim in Claim.objects.filter(sentence__verification_id=run_id)
    ]
    dead = "task-1 host:4242:dead"
    now = timezone.now()
    WorkerProcess.objects.create(name="host:4242:dead", kind="celery", started_at=now, beat_at=now)
    TrailRound.objects.filter(pk__in=[r.pk for r in rounds]).update(status="running", taken_by=dead, verdict="")
    Claim.objects.filter(pk__in=[r.claim_id for r in rounds]).update(status="searching")
    calls = len(world.llm.requests)

    tasks.trail_verdict(rounds[0].pk)  # its taker is alive: judging it
    assert set(TrailRound.objects.filter(pk__in=[r.pk for r in rounds]).values_list("status", flat=True)) == {"running"}

    WorkerProcess.objects.filter(name="host:4242:dead").update(beat_at=timezone.now() - timedelta(minutes=5))
    tasks.trail_verdict(rounds[0].pk)

    assert set(TrailRound.objects.filter(pk__in=[r.pk for r in rounds]).values_list("status", flat=True)) == {"done"}
    assert len(world.llm.requests) == calls  # the verdicts asked before were kept
    deadline = time.monotonic() + 30
    while Claim.objects.filter(pk__in=[r.claim_id for r in rounds], status="searching").exists():
        assert time.monotonic() < deadline, "the claims did not go on from their judged rounds"
        time.sleep(0.1)
    assert verdicts_of(client.get(f"/api/trails/{run_id}").json()) == before


def test_rounds_of_a_verdict_task_whose_worker_died_on_this_machine_are_taken_over_before_its_beats_are_missed(
    client, world, celery_worker
):
    """A worker killed on this machine is known gone at once (heartbeat.ended_here): the task sent
    again when the new worker is ready does not wait for 15 s of missed beats to judge its rounds."""
    run_id = start(client, {"trail": trail()})
    before = verdicts_of(wait_for(client, run_id))
    gone = subprocess.Popen(["true"])  # its pid runs nothing once it has ended
    gone.wait()
    process = f"{socket.gethostname()}:{gone.pid}:{heartbeat._pid_namespace()}.0badc0de"
    now = timezone.now()
    WorkerProcess.objects.create(name=process, kind="celery", started_at=now, beat_at=now)  # it beat a moment ago
    rounds = [
        claim.trail_rounds.order_by("index").last() for claim in Claim.objects.filter(sentence__verification_id=run_id)
    ]
    TrailRound.objects.filter(pk__in=[r.pk for r in rounds]).update(status="running", taken_by=f"task-2 {process}")
    Claim.objects.filter(pk__in=[r.claim_id for r in rounds]).update(status="searching")

    tasks.trail_verdict(rounds[-1].pk)

    assert set(TrailRound.objects.filter(pk__in=[r.pk for r in rounds]).values_list("status", flat=True)) == {"done"}
    deadline = time.monotonic() + 30
    while Claim.objects.filter(pk__in=[r.claim_id for r in rounds], status="searching").exists():
        assert time.monotonic() < deadline, "the claims did not go on from their judged rounds"
        time.sleep(0.1)
    assert verdicts_of(client.get(f"/api/trails/{run_id}").json()) == before


def test_a_graphrag_answers_markers_never_reach_a_claim_and_the_report_a_sentence_cites_is_read_first(
    client, world, celery_worker
):
    nodes = copy.deepcopy(GRAPHRAG["nodes"])
    answer = f"{MARLOW[:-1]} [Data: Reports (2)]. {QUENBY[:-1]} [Data: Reports (3, 1)].\n\nNo citation here, {HALVARD}"
    nodes[-1]["text"] = answer

    result = wait_for(client, start(client, {"trail": {"nodes": nodes}}))

    assert result["status"] == "done", result["error"]
    claims = by_text(result)
    assert not any("Data" in text or "[" in text for text in claims)
    # Each sentence's span is in the final text as given (the page shows it with its markers).
    assert [answer[s["start"] : s["end"]] for s in result["sentences"]] == [
        f"{MARLOW[:-1]} [Data: Reports (2)].",
        f"{QUENBY[:-1]} [Data: Reports (3, 1)].",
        f"No citation here, {HALVARD}",
    ]
    marlow, quenby = claims[MARLOW], claims[QUENBY]
    assert marlow["rounds"][0]["candidates"] == ["report-2", "report-1", "report-3"]
    assert marlow["verdict"] == "fully_supported"
    assert quenby["rounds"][0]["candidates"] == ["report-3", "report-1", "report-2"]
    assert quenby["entered"]["nodes"] == ["report-3"]
    uncited = next(claim for text, claim in claims.items() if "Halvard" in text)
    assert uncited["rounds"][0]["candidates"] == ["report-1", "report-2", "report-3"]
