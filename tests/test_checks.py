"""Everyday use (issue 17): "My checks" lists the runs this browser (or API caller) started and
nobody else's; their creator may delete them (the permalink then says so) and cancel one under way."""

import logging
import re
import sys
import time

import lxml.html
import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from factsite.logs import RefusalsWithoutTraceback
from tests.test_trail_views import finished_trail
from verification.models import Claim, DeletedVerification, Evidence, Sentence, Source, Upload, Verification
from verification.selectors.checks import check_rows

TEXT = "The Eiffel Tower is in Paris, France. It was completed in 1889."
TOKEN = "caller-token-" + "a" * 30


def started(client, text=TEXT, **data) -> Verification:
    response = client.post("/", {"text": text, **data})
    assert response.status_code == 302, response.content.decode()[:2000]
    return Verification.objects.get(pk=response["Location"].rsplit("/", 1)[1])


def listed(client) -> list[str]:
    doc = lxml.html.document_fromstring(client.get("/mine").content.decode())
    return [row.get("data-id") for row in doc.cssselect("#check-list tbody tr")]


def wait_for(client, run_id, timeout=60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = client.get(f"/api/verifications/{run_id}").json()
        if result["status"] in ("done", "failed", "cancelled"):
            return result
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end")


@pytest.mark.django_db
def test_my_checks_lists_this_browsers_runs_newest_first_and_nobody_elses(client, configured):
    first, second = started(client), started(client, TEXT + " It is tall.")
    someone_else = Client()
    theirs = started(someone_else, "Paris is the capital of France.")

    assert listed(client) == [str(second.pk), str(first.pk)]
    assert listed(someone_else) == [str(theirs.pk)]
    assert listed(Client()) == []
    page = client.get("/mine").content.decode()
    assert "“The Eiffel Tower is in Paris, France. It was completed in…”" in page
    assert "The web: search for evidence" in page and "pending" in page
    # Linked from every page.
    assert 'href="/mine"' in client.get("/about").content.decode()


@pytest.mark.django_db
def test_each_check_shows_its_overall_score_as_its_page_does(client, configured):
    run = started(client)
    Verification.objects.filter(pk=run.pk).update(status="done", finished_at=timezone.now())
    claim = Claim.objects.create(sentence=make_sentence(run), index=0, text=TEXT, query=TEXT, status="done")
    for verdict in ("supported", "supported", "not_supported"):
        source = Source.objects.create(verification=run, url=f"https://{verdict}.example/{Source.objects.count()}")
        Evidence.objects.create(
            claim=claim, source=source, index=0, passage="p", relevance=0.5, verdict=verdict, status="done"
        )

    doc = lxml.html.document_fromstring(client.get("/mine").content.decode())

    (score,) = doc.cssselect("#check-list td.check-score")
    assert " ".join(score.text_content().split()) == "67% · most evidence supports it"
    assert client.get("/api/verifications").json()[0]["score"] == pytest.approx(2 / 3)


@pytest.mark.django_db
def test_the_list_reads_every_runs_evidence_in_one_query(client, configured, django_assert_num_queries):
    def with_evidence(run):
        claim = Claim.objects.create(sentence=make_sentence(run), index=0, text=TEXT, query=TEXT, status="done")
        source = Source.objects.create(verification=run, url=f"https://e.example/{run.pk}")
        Evidence.objects.create(claim=claim, source=source, index=0, passage="p", relevance=0.5, verdict="supported")

    with_evidence(started(client))
    with django_assert_num_queries(2):  # the runs listed, their evidence
        client.get("/api/verifications")
    for _ in range(4):
        with_evidence(started(client))

    with django_assert_num_queries(2):
        listed = client.get("/api/verifications").json()

    assert [run["score"] for run in listed] == [1.0] * 5


def make_sentence(run):
    """The run's one sentence, checked (in place of the ones it was created with)."""
    Sentence.objects.filter(verification=run).delete()
    return Sentence.objects.create(
        verification=run,
        index=0,
        text=TEXT,
        start=0,
        end=len(TEXT),
        paragraph_index=0,
        context=[TEXT],
        position_in_context=0,
        status="done",
    )


@pytest.mark.django_db
def test_the_api_lists_the_callers_runs_by_token_or_cookie(client, configured):
    headers = {"X-Client-Token": TOKEN}
    mine = client.post("/api/verifications", {"text": TEXT}, content_type="application/json", headers=headers)
    started(client)  # this test client's browser run: another creator

    by_token = client.get("/api/verifications", headers=headers).json()
    by_cookie = client.get("/api/verifications").json()

    assert [run["id"] for run in by_token] == [mine.json()["id"]]
    assert by_token[0]["permalink"].endswith(f"/v/{mine.json()['id']}")
    assert by_token[0]["status"] == "pending" and by_token[0]["band"] == "none" and by_token[0]["score"] is None
    assert len(by_cookie) == 1 and by_cookie[0]["id"] != mine.json()["id"]
    assert Client().get("/api/verifications").json() == []
    assert client.get("/api/verifications", headers={"X-Client-Token": "short"}).status_code == 400


@pytest.mark.django_db
def test_deleting_removes_the_run_its_rows_and_uploads_and_the_permalink_says_so(client, configured):
    notes = SimpleUploadedFile("notes.md", b"# Notes\n\nThe Eiffel Tower is in Paris.\n")
    run = started(client, evidence="both", files=[notes])
    assert Upload.objects.filter(source__verification=run).exists()

    confirm = client.get(f"/v/{run.pk}/delete")
    deleted = client.post(f"/v/{run.pk}/delete")

    assert confirm.status_code == 200 and 'id="confirm-delete"' in confirm.content.decode()
    assert deleted.status_code == 302 and deleted["Location"] == "/mine?done=deleted"
    assert not Verification.objects.filter(pk=run.pk).exists()
    assert not Source.objects.exists() and not Upload.objects.exists()
    assert DeletedVerification.objects.filter(pk=run.pk).exists()
    gone = client.get(f"/v/{run.pk}")
    assert gone.status_code == 404 and "deleted by the person who started it" in gone.content.decode()
    api = client.get(f"/api/verifications/{run.pk}")
    assert api.status_code == 404 and api.json()["detail"].startswith("This verification was deleted")
    assert listed(client) == []


@pytest.mark.django_db
def test_only_the_creator_may_delete(client, configured):
    run = started(client)
    stranger = Client()

    assert stranger.get(f"/v/{run.pk}/delete").status_code == 403
    assert stranger.post(f"/v/{run.pk}/delete").status_code == 403
    assert stranger.delete(f"/api/verifications/{run.pk}").status_code == 403
    assert stranger.delete(f"/api/verifications/{run.pk}", headers={"X-Client-Token": TOKEN}).status_code == 403
    assert Verification.objects.filter(pk=run.pk).exists()
    assert 'id="delete-run"' not in stranger.get(f"/v/{run.pk}").content.decode()
    assert 'id="delete-run"' in client.get(f"/v/{run.pk}").content.decode()

    assert client.delete(f"/api/verifications/{run.pk}").status_code == 204
    assert client.delete(f"/api/verifications/{run.pk}").status_code == 404


@pytest.mark.django_db
def test_a_refused_request_logs_one_line_without_a_traceback(client, configured, caplog):
    run = started(client)
    stranger, forger = Client(), Client(enforce_csrf_checks=True)
    caplog.set_level(logging.INFO)

    refused = {
        f"/v/{run.pk}/delete": stranger.post(f"/v/{run.pk}/delete"),
        f"/v/{run.pk}/cancel": stranger.post(f"/v/{run.pk}/cancel"),
        f"/api/verifications/{run.pk}": stranger.delete(f"/api/verifications/{run.pk}"),
        "/": forger.post("/", {"text": TEXT}),
    }

    assert {response.status_code for response in refused.values()} == {403}
    for path in refused:
        said = [record for record in caplog.records if record.getMessage().endswith(f": {path}")]
        assert len(said) == 1 and said[0].getMessage().startswith("Forbidden"), [r.getMessage() for r in said]
        assert said[0].exc_info is None and said[0].exc_text is None
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(("status", "kept"), [(400, False), (403, False), (500, True), (None, True)])
def test_only_a_refusal_loses_its_traceback_in_the_log(status, kept):
    try:
        raise PermissionDenied("no")
    except PermissionDenied:
        record = logging.makeLogRecord({"msg": "Forbidden", "exc_info": sys.exc_info(), "status_code": status})

    assert RefusalsWithoutTraceback().filter(record) and (record.exc_info is not None) is kept


@pytest.mark.django_db
def test_clearing_the_list_forgets_the_browser_not_its_runs(client, configured):
    run = started(client)

    response = client.post("/mine/forget")

    assert response.status_code == 302 and response.cookies["factsite_owner"].value == ""
    assert listed(client) == []
    assert client.get(f"/v/{run.pk}").status_code == 200
    assert client.post(f"/v/{run.pk}/delete").status_code == 403


# --- cancel, on a real run with the real worker and the fake outside world

HELD = "1889"


def started_with_a_held_call(client, world, held: str) -> str:
    """A run started by TOKEN whose model calls about `held` wait in the model until released."""
    world.llm.held_words = (held,)
    created = client.post(
        "/api/verifications",
        {"text": TEXT, "settings": {"retrieval_mode": "sparse"}},
        content_type="application/json",
        headers={"X-Client-Token": TOKEN},
    )
    deadline = time.monotonic() + 30
    while world.llm.held == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert world.llm.held >= 1
    return created.json()["id"]


@pytest.mark.django_db(transaction=True)
def test_cancelling_a_run_stops_its_spending_and_keeps_what_it_found(client, world, celery_worker):
    run_id = started_with_a_held_call(client, world, HELD)  # the second sentence's work waits in the model

    stranger = client.post(f"/api/verifications/{run_id}/cancel", content_type="application/json")
    cancelled = client.post(
        f"/api/verifications/{run_id}/cancel", content_type="application/json", headers={"X-Client-Token": TOKEN}
    )
    calls_at_cancel = len(world.llm.requests)
    world.llm.release()

    assert stranger.status_code == 403
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
    time.sleep(2)  # what was queued or in flight has had its chance to run
    result = client.get(f"/api/verifications/{run_id}").json()
    assert result["status"] == "cancelled" and "cancelled" in result["error"]
    # The call in flight when it was cancelled may end; nothing after it is sent.
    assert len(world.llm.requests) <= calls_at_cancel
    assert not Evidence.objects.filter(claim__sentence__verification_id=run_id, status="running").exists()
    again = client.post(
        f"/api/verifications/{run_id}/cancel", content_type="application/json", headers={"X-Client-Token": TOKEN}
    )
    assert again.status_code == 409
    retry = client.post(
        f"/api/verifications/{run_id}/retry", content_type="application/json", headers={"X-Client-Token": TOKEN}
    )
    assert retry.status_code == 409 and "cancelled" in retry.json()["detail"]
    page = client.get(f"/v/{run_id}", headers={"X-Client-Token": TOKEN}).content.decode()
    assert 'id="cancelled"' in page and 'hx-trigger="every 1s"' not in page


@pytest.mark.django_db
def test_the_page_offers_cancel_to_its_creator_only(client, configured):
    run = started(client)

    assert 'id="cancel-run"' in client.get(f"/v/{run.pk}").content.decode()
    assert 'id="cancel-run"' not in Client().get(f"/v/{run.pk}").content.decode()
    assert Client().post(f"/v/{run.pk}/cancel").status_code == 403
    assert client.post(f"/v/{run.pk}/cancel").status_code == 302
    assert Verification.objects.get(pk=run.pk).status == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_a_judgement_in_flight_at_cancel_is_counted_but_not_saved_so_every_view_shows_one_score(
    client, world, celery_worker
):
    """Issue 27.7: the page of a cancelled run and My checks showed different scores (a judge
    answer landed after the cancel, the page kept what it had read at the cancel)."""
    run_id = started_with_a_held_call(client, world, "Tower was completed")  # the judge's call for that claim
    cancelled = client.post(
        f"/api/verifications/{run_id}/cancel", content_type="application/json", headers={"X-Client-Token": TOKEN}
    )
    assert cancelled.status_code == 202
    calls_before = Verification.objects.get(pk=run_id).llm_calls
    world.llm.release()
    deadline = time.monotonic() + 10
    while Verification.objects.get(pk=run_id).llm_calls == calls_before and time.monotonic() < deadline:
        time.sleep(0.05)

    assert Verification.objects.get(pk=run_id).llm_calls > calls_before  # what it cost is counted
    held_claim = Evidence.objects.filter(claim__sentence__verification_id=run_id, claim__text__contains="completed")
    assert held_claim.exists() and not held_claim.exclude(verdict="").exists()  # its answer was not saved
    result = client.get(f"/api/verifications/{run_id}").json()
    listed = client.get("/api/verifications", headers={"X-Client-Token": TOKEN}).json()
    assert listed[0]["id"] == run_id and listed[0]["score"] == result["score"]
    # What it will never check says so, instead of "being checked … so far".
    held = next(c for s in result["sentences"] for c in s["claims"] if "completed" in c["text"])
    assert held["outcome"] == "not_checked" and held["note"] == "not checked: the run was cancelled"
    page = client.get(f"/v/{run_id}", headers={"X-Client-Token": TOKEN}).content.decode()
    assert not re.findall(r'class="outcome-tag[^"]*" data-outcome="pending"', page)  # only the legend has it
    assert "Still being checked" not in page and "so far, from" not in page
    assert "finished and are counted in its usage" in page


@pytest.mark.django_db
def test_a_trail_run_is_listed_in_a_trails_words_not_a_web_checks(configured):
    run = finished_trail()  # 1 of its 3 claims fully supported down the trail

    (row,) = check_rows([run])

    assert row.band == "orange" and row.band_label == "1 of 3 claims fully supported"
    assert "evidence" not in row.band_label
