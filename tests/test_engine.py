"""The whole engine in one process: API → Celery worker on real Redis → fake LLM, search and
sites over real HTTP on 127.0.0.1 → result JSON."""

import csv
import io
import threading
import time
from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlsplit

import lxml.html
import pytest

from tests.fakes import FakePage, FakeSite, LoopbackServer, _SiteHandler
from tests.pipeline.test_refusals import CLOUDFLARE_CHALLENGE
from verification.clients import providers
from verification.models import SearchResult, Verification

JUDGED = ("supported", "not_supported", "irrelevant")

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "The Eiffel Tower is in Paris, France. It was completed in 1889. It is made of steel.\n\nI hope this helps!"


def run(client, text=TEXT, **settings):
    """Starts a run; the client then sends the owner token it was given, as its creator (a retry is theirs)."""
    response = client.post("/api/verifications", {"text": text, "settings": settings}, content_type="application/json")
    assert response.status_code == 201, response.content
    client.defaults["HTTP_X_CLIENT_TOKEN"] = response["X-Client-Token"]
    return response.json()["id"]


def wait_for(client, verification_id, timeout=60, **params):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = client.get(f"/api/verifications/{verification_id}", params).json()
        if result["status"] in ("done", "failed"):
            return result
        time.sleep(0.1)
    raise AssertionError(f"run did not finish: {result['status']} {result['progress']}")


def all_evidence(result):
    return [e for s in result["sentences"] for c in s["claims"] for e in c["evidence"]]


def test_it_verifies_a_text_end_to_end(client, world, celery_worker):
    result = wait_for(client, run(client, retrieval_mode="sparse"))

    assert result["status"] == "done", result["error"]
    texts = [s["text"] for s in result["sentences"]]
    assert texts == [
        "The Eiffel Tower is in Paris, France.",
        "It was completed in 1889.",
        "It is made of steel.",
        "I hope this helps!",
    ]
    claims = [c["text"] for s in result["sentences"] for c in s["claims"]]
    assert "The Eiffel Tower was completed in 1889." in claims  # "It" resolved from context
    greeting = result["sentences"][3]
    assert greeting["claims"] == [] and greeting["score"] is None and "no checkable claim" in greeting["error"]
    assert greeting["outcome"] == "no_claim" and greeting["note"] == greeting["error"]

    steel = result["sentences"][2]
    verdicts = [e["verdict"] for c in steel["claims"] for e in c["evidence"]]
    assert "not_supported" in verdicts, [e for c in steel["claims"] for e in c["evidence"]]
    assert steel["outcome"] in ("contradicted", "mixed") and "contradict" in steel["note"]
    assert result["score_rule"] == "all"
    for sentence in result["sentences"][:3]:
        evidence = [e for c in sentence["claims"] for e in c["evidence"]]
        supported = sum(e["verdict"] == "supported" for e in evidence)
        judged = sum(e["verdict"] in JUDGED for e in evidence)
        assert (sentence["supported"], sentence["total"]) == (supported, judged)
        assert sentence["score"] == (supported / judged if judged else None)
        for claim in sentence["claims"]:
            assert claim["outcome"] in ("supported", "contradicted", "mixed", "unconfirmed", "no_evidence", "failed")
    evidence = all_evidence(result)
    assert {e["source_type"] for e in evidence} >= {"wiki", "news"}
    assert all(e["title"] and e["host"].startswith("127.0.0.1:") for e in evidence if e["verdict"])
    # A reason where the passage decides something; an irrelevant one's verdict comes alone.
    assert all(bool(e["rationale"]) == (e["verdict"] != "irrelevant") for e in evidence if e["verdict"])

    blocked = [s for s in result["sources"] if s["url"].endswith("/blocked")]
    assert blocked and blocked[0]["status"] == "failed" and "HTTP 403" in blocked[0]["error"]

    progress = result["progress"]
    assert progress["percent"] == 100
    assert progress["sentences"]["decomposed"] == progress["sentences"]["total"] == 4
    assert progress["judgements"]["made"] == progress["judgements"]["total"] == len(evidence)
    calls = world.llm.calls
    assert result["usage"]["llm_calls"] == sum(calls.values())
    assert calls["claims"] == 1  # both paragraphs' sentences in one chunk, one call
    assert result["usage"]["prompt_tokens"] > 0 and result["usage"]["searches"] == len(claims)


def test_a_page_is_one_evidence_item_per_claim_whatever_the_passages_per_page(client, world, celery_worker):
    result = wait_for(client, run(client, retrieval_mode="sparse", top_k_passages=3, context_size=0))

    for sentence in result["sentences"]:
        for claim in sentence["claims"]:
            urls = [e["url"] for e in claim["evidence"]]
            assert len(urls) == len(set(urls)), claim
    several = [e for e in all_evidence(result) if len(e["highlights"]) > 1]
    assert several, "no page gave more than one matching passage"
    for item in several:
        marked = [item["passage"][start:end] for start, end in item["highlights"]]
        assert all(text.strip() for text in marked)


def test_the_decisive_rule_leaves_irrelevant_evidence_out(client, world, celery_worker):
    verification_id = run(client, retrieval_mode="sparse")
    everything = wait_for(client, verification_id)
    decisive = client.get(f"/api/verifications/{verification_id}", {"score_rule": "decisive"}).json()

    assert decisive["score_rule"] == "decisive"
    evidence = all_evidence(everything)
    assert any(e["verdict"] == "irrelevant" for e in evidence)
    assert everything["total"] == sum(e["verdict"] in JUDGED for e in evidence)
    assert decisive["total"] == sum(e["verdict"] in ("supported", "not_supported") for e in evidence)
    assert decisive["supported"] == everything["supported"]


def test_each_page_is_fetched_once_per_run(client, world, celery_worker):
    wait_for(client, run(client, retrieval_mode="sparse"))
    for site in world.sites:
        assert all(count == 1 for count in site.hits.values()), site.hits


def test_excluding_evidence_and_types_recomputes_scores(client, world, celery_worker):
    verification_id = run(client, retrieval_mode="sparse")
    result = wait_for(client, verification_id)
    supported = [e for e in all_evidence(result) if e["verdict"] == "supported"]
    assert supported
    first = supported[0]

    narrowed = client.get(
        f"/api/verifications/{verification_id}", {"exclude_evidence": str(first["id"]), "exclude_types": "news"}
    ).json()
    kept = [
        e
        for e in all_evidence(result)
        if e["verdict"] in JUDGED and e["id"] != first["id"] and e["source_type"] != "news"
    ]
    assert narrowed["total"] == len(kept)
    assert narrowed["supported"] == sum(e["verdict"] == "supported" for e in kept)
    assert "news" not in narrowed["source_types"]
    assert not next(e for e in all_evidence(narrowed) if e["id"] == first["id"])["included"]


def test_a_run_with_llm_failures_and_garbage_still_ends_with_reasons(client, world, celery_worker, settings):
    settings.DECOMPOSE_CHUNK_SENTENCES = 1  # a call per sentence: failures stay apart
    world.llm.fail_words = {"1889": 500}
    world.llm.garbage_words = ("steel",)
    result = wait_for(client, run(client, retrieval_mode="sparse"))

    assert result["status"] == "done"
    completed, steel = result["sentences"][1], result["sentences"][2]
    assert completed["status"] == "failed" and "HTTP 500" in completed["error"]
    assert steel["status"] == "failed" and "malformed" in steel["error"]
    assert result["sentences"][0]["score"] is not None
    decompose = next(p for p in result["problems"] if p["step"] == "decompose")
    assert decompose["count"] == 2
    assert sorted(r["count"] for r in decompose["reasons"]) == [1, 1]
    assert completed["outcome"] == "failed" and completed["note"] == completed["error"]


def test_a_failed_chunk_is_asked_again_in_parts_and_fails_only_the_sentence_it_concerns(client, world, celery_worker):
    """Issue 27.4: a chunk whose call fails after its retries is asked again in halves, then one
    sentence at a time; only the sentence the failure concerns fails, with the reason."""
    world.llm.fail_words = {"1889": 500}
    text = "The Eiffel Tower is in Paris, France. It is made of steel. It was completed in 1889. It is tall."
    result = wait_for(client, run(client, text=text))

    assert [s["status"] for s in result["sentences"]] == ["done", "done", "failed", "done"]
    assert "HTTP 500" in result["sentences"][2]["error"]
    # The chunk (asked twice: LLM_MAX_RETRIES=1), its halves (the failing one twice), then each
    # sentence of the failing half (the failing one twice).
    assert world.llm.calls["claims"] == 2 + (1 + 2) + (1 + 2)


def test_a_run_where_every_sentence_fails_is_failed_with_the_reason(client, world, celery_worker):
    world.llm.fail_words = {"Water": 401}
    result = wait_for(client, run(client, text="Water boils at 100 degrees Celsius at sea level."))

    assert result["status"] == "failed"
    assert "no evidence could be judged" in result["error"] and "API key" in result["error"]
    assert Verification.objects.get(pk=result["id"]).finished_at is not None


def test_a_search_outage_fails_the_run_and_a_retry_completes_it_in_place(client, world, celery_worker):
    world.serper.fail_status = 503
    verification_id = run(client, text="The Eiffel Tower is in Paris, France. It was completed in 1889.")
    result = wait_for(client, verification_id)

    claim = result["sentences"][0]["claims"][0]
    assert result["status"] == "failed" and "no evidence could be judged" in result["error"]
    assert claim["status"] == "failed" and "HTTP 503" in claim["error"] and claim["outcome"] == "failed"
    search = next(p for p in result["problems"] if p["step"] == "search")
    assert search["count"] == len([c for s in result["sentences"] for c in s["claims"]])
    assert "HTTP 503" in search["reasons"][0]["reason"]

    world.serper.fail_status = 0
    calls_before = world.llm.calls["claims"]
    response = client.post(f"/api/verifications/{verification_id}/retry", content_type="application/json")
    assert response.status_code == 202, response.content
    assert response.json()["retried"] == search["count"]
    retried = wait_for(client, verification_id)

    assert retried["status"] == "done" and retried["error"] == ""
    assert [p["step"] for p in retried["problems"]] in ([], ["fetch"])  # the sample world's 403 page
    assert retried["retries"] == 1
    assert retried["score"] is not None
    assert world.llm.calls["claims"] == calls_before  # claims were not found again, only searched
    # Only the 403 page is left, and a retry would meet its 403 again: nothing to retry.
    assert retried["retryable"] == 0
    again = client.post(f"/api/verifications/{verification_id}/retry", content_type="application/json")
    assert again.status_code == 409, again.content


def test_a_retry_requeues_only_the_failures_another_try_may_change(client, world, celery_worker):
    """A 503 (the wiki, down for now) is tried again; the blog's 403 is not fetched again and the
    banner says a retry will not change it."""
    wiki, _news, blog = world.sites
    wiki.fail_status = 503
    verification_id = run(client, retrieval_mode="sparse")
    result = wait_for(client, verification_id)

    fetch = next(p for p in result["problems"] if p["step"] == "fetch")
    reasons = {r["reason"]: r["transient"] for r in fetch["reasons"]}
    # The 403 page's snippet was judged in its place: not a lost item, and still no retry.
    refused = "the page answered HTTP 403; judged from its search snippet instead"
    assert reasons == {"the page answered HTTP 503": True, refused: False}
    transient_pages = sum(r["count"] for r in fetch["reasons"] if r["transient"])
    assert result["retryable"] == transient_pages
    page = client.get(f"/v/{verification_id}").content.decode()
    assert "Retry failed parts" in page and "a retry will not change this" in page

    wiki.fail_status = 0
    blog_hits, wiki_hits = blog.hits["/blocked"], sum(wiki.hits.values())
    response = client.post(f"/api/verifications/{verification_id}/retry", content_type="application/json")
    assert response.status_code == 202 and response.json()["retried"] == transient_pages
    retried = wait_for(client, verification_id)

    assert blog.hits["/blocked"] == blog_hits  # the 403 page was not asked again
    assert sum(wiki.hits.values()) == wiki_hits + transient_pages
    fetch = next(p for p in retried["problems"] if p["step"] == "fetch")
    assert fetch["reasons"] == [{"reason": refused, "count": 1, "transient": False, "read_from_snippet": True}]
    assert (fetch["count"], fetch["read_from_snippet"]) == (0, 1)
    assert retried["retryable"] == 0
    page = client.get(f"/v/{verification_id}").content.decode()
    assert "Retry failed parts" not in page and "No retry is offered" not in page
    # The 403 page read from its snippet is no failure: told in a plain notice, not the red banner.
    assert (
        "Parts of this verification failed" not in page
        and "1 page could not be read, and its search snippet was judged" in page
    )
    refused = client.post(f"/api/verifications/{verification_id}/retry", content_type="application/json")
    assert refused.status_code == 409 and "would fail the same way" in refused.json()["detail"]


def test_the_duration_counts_the_time_worked_not_the_wait_before_a_retry(client, world, celery_worker):
    world.sites[0].fail_status = 503
    verification_id = run(client, retrieval_mode="sparse")
    first = wait_for(client, verification_id)
    assert first["working_seconds"] is not None and first["retried_at"] is None
    time.sleep(3)  # the run sits finished before someone retries it

    world.sites[0].fail_status = 0
    retry = client.post(f"/api/verifications/{verification_id}/retry", content_type="application/json")
    assert retry.status_code == 202, retry.content
    second = wait_for(client, verification_id)

    run_row = Verification.objects.get(pk=verification_id)
    since_retry = (run_row.finished_at - run_row.retried_at).total_seconds()
    assert second["working_seconds"] == pytest.approx(first["working_seconds"] + since_retry, abs=0.01)
    wall_clock = (run_row.finished_at - run_row.created_at).total_seconds()
    assert second["working_seconds"] < wall_clock - 2.5
    facts = client.get(f"/v/{verification_id}").content.decode()
    assert f"{second['working_seconds']:.1f} s working, over 2 passes" in facts
    assert second["retried_at"] == run_row.retried_at.isoformat()


def test_a_page_that_fails_is_read_again_on_retry(client, world, celery_worker):
    site = world.sites[0]
    site.fail_status = 503
    verification_id = run(client, retrieval_mode="sparse")
    result = wait_for(client, verification_id)
    fetch = next(p for p in result["problems"] if p["step"] == "fetch")
    assert fetch["count"] >= 1 and any("503" in r["reason"] for r in fetch["reasons"])

    site.fail_status = 0
    retry = client.post(f"/api/verifications/{verification_id}/retry", content_type="application/json")
    assert retry.status_code == 202, retry.content
    retried = wait_for(client, verification_id)

    assert retried["status"] == "done"
    assert all(p["step"] != "fetch" or all("503" not in r["reason"] for r in p["reasons"]) for p in retried["problems"])
    assert len(all_evidence(retried)) > len(all_evidence(result))


def test_a_second_run_reuses_cached_answers(client, world, celery_worker):
    first = wait_for(client, run(client, retrieval_mode="sparse"))
    second = wait_for(client, run(client, retrieval_mode="sparse"))

    assert first["usage"]["llm_calls"] > 0 and first["usage"]["searches"] > 0
    cached = {name: second["usage"].pop(name) for name in ("llm_cached", "searches_cached")}
    assert second["usage"] == {
        "llm_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "reasoning_tokens": 0,
        "searches": 0,
        "claims_searched_again": 0,
    }
    # It says where its answers came from: every claim's search and judgement, each chunk's claims.
    assert cached["searches_cached"] == first["usage"]["searches"]
    assert cached["llm_cached"] >= len(all_evidence(second)) + 1
    assert first["usage"]["llm_cached"] == first["usage"]["searches_cached"] == 0
    details = client.get(f"/v/{second['id']}").content.decode()
    assert f"{cached['llm_cached']} answers reused from earlier runs (cache)" in details
    assert f"{cached['searches_cached']} reused from earlier runs (cache)" in details
    assert [s["score"] for s in second["sentences"]] == [s["score"] for s in first["sentences"]]
    assert len(world.serper.queries) == first["usage"]["searches"]  # the second run sent none


def test_an_edited_text_pays_only_for_the_paragraph_that_changed(client, world, celery_worker):
    text = "The Eiffel Tower is in Paris, France. It was completed in 1889.\n\nThe Eiffel Tower is made of steel."
    wait_for(client, run(client, text=text, retrieval_mode="sparse"))
    calls_before = dict(world.llm.calls)
    edited = wait_for(
        client, run(client, text=text.replace("made of steel", "made of wrought iron"), retrieval_mode="sparse")
    )

    new_calls = {kind: world.llm.calls[kind] - calls_before.get(kind, 0) for kind in world.llm.calls}
    assert new_calls["claims"] == 1  # only the changed paragraph's one sentence is decomposed again
    assert edited["usage"]["searches"] == 1
    assert edited["usage"]["llm_calls"] == sum(new_calls.values())


def test_an_unknown_host_is_categorized_once_however_many_pages_it_has(client, world, celery_worker):
    result = wait_for(client, run(client, retrieval_mode="sparse"))

    hosts = {s["host"] for s in result["sources"]}
    assert len(result["sources"]) > len(hosts)  # the blog host has two pages
    assert world.llm.hosts_asked() == dict.fromkeys(hosts, 1)
    assert all(s["source_type"] for s in result["sources"])


def test_the_unknown_hosts_of_one_search_are_asked_about_in_one_call(client, world, celery_worker):
    result = wait_for(client, run(client, text="The Eiffel Tower is in Paris.", retrieval_mode="sparse"))

    hosts = {s["host"] for s in result["sources"]}
    assert len(hosts) > 1
    assert world.llm.calls["source_types"] == 1 and world.llm.calls["source_type"] == 0
    assert world.llm.hosts_asked() == dict.fromkeys(hosts, 1)
    assert {s["type_decided_by"] for s in result["sources"]} == {"llm"}


def test_when_the_hosts_question_fails_every_host_of_it_falls_back_and_the_run_ends(client, world, celery_worker):
    world.llm.fail_words = {"Host: ": 400}  # a client error: not retried by the LLM client
    result = wait_for(client, run(client, text="The Eiffel Tower is in Paris.", retrieval_mode="sparse"))

    assert result["status"] == "done", result["error"]
    decided = {s["host"]: s["type_decided_by"] for s in result["sources"]}
    assert len(decided) > 1 and all(by.startswith("fallback: ") for by in decided.values())
    assert world.llm.calls["source_type"] == 0  # asked together, and not again one by one
    assert set(world.llm.hosts_asked()) == set(decided)
    assert {s["source_type"] for s in result["sources"]} == {"other"}
    (categorize,) = [p for p in result["problems"] if p["step"] == "categorize"]
    assert categorize["count"] == len(result["sources"])  # one per source typed by the fallback


def test_a_host_the_answer_left_out_is_asked_about_again_on_its_own(client, world, celery_worker):
    skipped = providers.host_of(world.sites[0].url)
    world.llm.skipped_hosts = (skipped,)
    result = wait_for(client, run(client, text="The Eiffel Tower is in Paris.", retrieval_mode="sparse"))

    hosts = {s["host"] for s in result["sources"]}
    assert skipped in hosts
    assert (world.llm.calls["source_types"], world.llm.calls["source_type"]) == (1, 1)
    assert world.llm.hosts_asked() == {host: 2 if host == skipped else 1 for host in hosts}
    assert {s["type_decided_by"] for s in result["sources"]} == {"llm"}


def test_a_run_whose_model_was_removed_fails_with_a_readable_reason(client, world, celery_worker):
    from verification import services
    from verification.worker import start

    verification = services.verification_create(
        text="Water boils at 100 degrees Celsius at sea level.",
        settings={
            "model": "retired-model",
            "retrieval_mode": "sparse",
            "top_k_results": 3,
            "top_k_passages": 2,
            "context_size": 1,
        },
    )
    start.enqueue_verification(verification)
    result = wait_for(client, verification.pk)

    assert result["status"] == "failed"
    assert "retired-model is not configured any more" in result["error"]
    assert "internal error" not in result["error"]


def test_a_sentence_whose_claims_exceed_the_runs_budget_is_skipped_with_the_reason(
    client, world, celery_worker, settings
):
    # Two sentences of three claims each (the fake model splits on ";"), a budget of four: the
    # first sentence decomposed takes three, the other does not fit and is not checked.
    settings.MAX_CLAIMS_PER_RUN = 4
    text = (
        "The Eiffel Tower is in Paris; it was completed in 1889; it is made of iron.\n\n"
        "The Colosseum is in Rome; it was completed in 80 AD; it held many spectators."
    )
    result = wait_for(client, run(client, text))

    skipped = [s for s in result["sentences"] if s["outcome"] == "failed"]
    checked = [s for s in result["sentences"] if s["outcome"] != "failed"]
    assert len(skipped) == 1 and len(checked) == 1, [(s["outcome"], s["note"]) for s in result["sentences"]]
    assert skipped[0]["note"] == "skipped: this run's budget of 4 claims (MAX_CLAIMS_PER_RUN) was spent"
    assert skipped[0]["claims"] == [] and len(checked[0]["claims"]) == 3
    assert Verification.objects.get(pk=result["id"]).claims_used == 3
    assert result["status"] == "done"  # the checked sentence's evidence was judged
    assert "decompose" in {p["step"] for p in result["problems"]}  # (the sample web has a 403 page too)


def test_a_slow_page_holds_back_only_the_sentence_that_cites_it(client, world, celery_worker):
    # Two sentences decomposed in one call, each with its own page: the second page takes
    # seconds. The first sentence's claim is judged without waiting for it (at most the judge's
    # short linger for a shared call).
    fast = FakeSite(pages={"/vostok": FakePage("Lake Vostok", "Lake Vostok lies under the Antarctic ice sheet.")})
    slow = FakeSite(
        pages={"/trench": FakePage("Mariana Trench", "The Mariana Trench is the deepest point of the ocean.")},
        latency=6.0,
    )
    world.serper.sites[:] = [fast.start(), slow.start()]
    text = "Lake Vostok lies under the Antarctic ice sheet. The Mariana Trench is the deepest point of the ocean."
    try:
        verification_id = run(client, text=text, retrieval_mode="sparse")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            early = client.get(f"/api/verifications/{verification_id}").json()
            if early["sentences"] and early["sentences"][0]["score"] is not None:
                break
            time.sleep(0.05)

        assert early["sentences"][0]["score"] is not None, early["progress"]
        assert early["status"] == "running" and early["sentences"][1]["score"] is None
        assert wait_for(client, verification_id)["status"] == "done"
    finally:
        fast.stop()
        slow.stop()


def test_a_sentences_claims_are_searched_while_the_model_still_writes_the_others(client, world, celery_worker):
    # One decompose call for the text's four sentences, written at 30 tokens a second (~3 s):
    # the first sentence's claim is searched as soon as its lines are written.
    world.llm.tokens_per_s = 30
    verification_id = run(client, retrieval_mode="sparse")
    deadline = time.monotonic() + 30
    while not world.serper.queries and time.monotonic() < deadline:
        time.sleep(0.01)

    assert world.serper.queries and "claims" not in world.llm.finished
    result = wait_for(client, verification_id)
    assert result["status"] == "done", result["error"]
    assert world.llm.calls["claims"] == 1
    assert [len(s["claims"]) for s in result["sentences"]] == [1, 1, 1, 0]


def test_a_page_that_refuses_is_judged_from_its_search_snippet(client, world, celery_worker):
    """The blog's page answers 403: each claim that found it gets one item judged from the search
    engine's title and snippet, marked so in the JSON and the CSV, with the reason."""
    blog = world.sites[2]
    blog.pages["/locked"] = FakePage(
        "Eiffel Tower history | Locked blog",
        "Records show the Eiffel Tower was completed in 1889, two years after work on it began.",
        status=403,
    )
    verification_id = run(client, retrieval_mode="sparse")
    result = wait_for(client, verification_id)

    assert result["status"] == "done", result["error"]
    snippets = [e for e in all_evidence(result) if e["snippet_only"]]
    locked = [e for e in snippets if e["url"].endswith("/locked")]
    citing = SearchResult.objects.filter(source__url=blog.url + "/locked")
    assert len(locked) == citing.count() > 0  # one item per claim that cited it
    assert {e["unread_reason"] for e in snippets} == {"HTTP 403"}
    assert all(e["url"].endswith(("/locked", "/blocked")) for e in snippets)
    assert not any(e["unread_reason"] for e in all_evidence(result) if not e["snippet_only"])
    completed = next(
        e
        for s in result["sentences"]
        for c in s["claims"]
        for e in c["evidence"]
        if e["url"].endswith("/locked") and "1889" in c["text"]
    )
    assert (
        completed["passage"] == "Records show the Eiffel Tower was completed in 1889, two years after work on it began."
    )
    assert completed["duplicate_of"] is None  # judged on its own, not as a copy of a page read
    assert completed["title"] == "Eiffel Tower history | Locked blog"
    assert completed["verdict"] == "supported" and completed["rationale"] and completed["included"]
    assert any("two years after work on it began" in r["messages"][-1]["content"] for r in world.llm.requests)
    assert all(result_row.title for result_row in citing)  # the search engine's title, kept per result
    assert blog.hits["/locked"] == 1
    fetch = next(p for p in result["problems"] if p["step"] == "fetch")
    assert {r["reason"] for r in fetch["reasons"]} == {
        "the page answered HTTP 403; judged from its search snippet instead"
    }
    snippet_claim = next(c for s in result["sentences"] for c in s["claims"] if completed in c["evidence"])
    assert snippet_claim["counts"]["snippets"] >= 1 and "search snippet" in snippet_claim["note"]

    without = client.get(f"/api/verifications/{verification_id}", {"exclude_kinds": "snippet"}).json()
    assert without["excluded_kinds"] == ["snippet"]
    assert all(not e["included"] for e in all_evidence(without) if e["snippet_only"])
    assert all(e["included"] for e in all_evidence(without) if not e["snippet_only"])
    judged_snippets = sum(e["verdict"] in JUDGED for e in snippets)
    assert without["total"] == result["total"] - judged_snippets
    assert without["counts"]["excluded"] == len(snippets) and without["counts"]["snippets"] == 0

    rows = list(csv.DictReader(io.StringIO(client.get(f"/v/{verification_id}/evidence.csv").content.decode()[1:])))
    marked = [row for row in rows if row["snippet_only"] == "yes"]
    assert len(marked) == len(snippets) and {row["unread_reason"] for row in marked} == {"HTTP 403"}
    assert {row["unread_reason"] for row in rows if row["snippet_only"] == "no"} == {""}


# Quick mode (issue 29): the model knows the date well enough, doubts the steel, and has no idea
# about Paris; its server gives logprobs unless a test turns them off.
KNOWS = {"1889": ("true", 0.999), "steel": ("false", 0.9)}


def claims_of(result):
    return {c["text"]: c for s in result["sentences"] for c in s["claims"]}


def test_quick_mode_answers_a_claim_the_model_is_sure_of_without_searching_it(client, world, celery_worker):
    world.llm.knows = KNOWS
    verification_id = run(client, retrieval_mode="sparse", quick=True)
    result = wait_for(client, verification_id)

    assert result["status"] == "done", result["error"]
    claims = claims_of(result)
    known = claims["The Eiffel Tower was completed in 1889."]
    assert known["from_model_knowledge"] and known["model_label"] == "true"
    assert known["model_label_probability"] == pytest.approx(0.999)
    assert known["status"] == "done" and known["evidence"] == []
    assert "from the model's own knowledge, not checked against any source" in known["note"]
    assert known["query"] not in world.serper.queries
    doubted = claims["The Eiffel Tower is made of steel."]
    assert not doubted["from_model_knowledge"] and doubted["model_label"] == "false"
    assert doubted["model_label_probability"] == pytest.approx(0.9) and doubted["evidence"]
    assert sorted(world.serper.queries) == sorted(c["query"] for c in claims.values() if c is not known)
    assert result["usage"]["searches"] == 2
    assert result["quick"]["skipped_claims"] == result["quick"]["searches_saved"] == 1
    assert result["quick"]["pages_saved"] == 5 and result["quick"]["logprobs"] is True
    assert "1 claim answered from the model's own knowledge" in result["quick"]["note"]

    # Left out of the score by default; the tick (model_knowledge=1) counts it as supporting.
    assert known["outcome"] == "no_evidence" and known["counts"]["excluded"] == 1 and known["total"] == 0
    counted = wait_for(client, verification_id, model_knowledge=1)
    counted_known = claims_of(counted)["The Eiffel Tower was completed in 1889."]
    assert counted_known["outcome"] == "supported" and counted_known["supported"] == counted_known["total"] == 1
    assert (counted["supported"], counted["total"]) == (result["supported"] + 1, result["total"] + 1)
    assert counted["source_types"] == result["source_types"]

    sentence = next(s["index"] for s in result["sentences"] if any(c is known for c in s["claims"]))
    page = client.get(f"/v/{verification_id}?sentence={sentence}").content.decode()
    assert 'class="claim from-model"' in page and "not checked against any source" in page
    assert 'id="include-model-knowledge"' in page and "1 claim answered from the model's own knowledge" in page
    ticked = client.get(f"/v/{verification_id}?sentence={sentence}&model_knowledge=1").content.decode()
    assert 'id="include-model-knowledge" checked' in ticked
    rows = list(csv.DictReader(io.StringIO(client.get(f"/v/{verification_id}/evidence.csv").content.decode()[1:])))
    model_rows = [row for row in rows if row["from_model_knowledge"] == "yes"]
    assert [(row["claim"], row["counted"]) for row in model_rows] == [(known["text"], "no")]
    assert "says true" in model_rows[0]["verdict"]
    report = client.get(f"/v/{verification_id}/report.md").content.decode()
    assert "1 claim answered from the model's own knowledge, not checked against any source, left out" in report
    assert "the model says true (probability 0.999)" in report and "- Quick mode: 1 claim answered" in report


def test_quick_mode_against_a_server_without_logprobs_searches_every_claim_and_says_so(client, world, celery_worker):
    world.llm.knows, world.llm.logprobs = KNOWS, False
    result = wait_for(client, run(client, retrieval_mode="sparse", quick=True))

    assert result["status"] == "done", result["error"]
    claims = claims_of(result).values()
    assert not any(c["from_model_knowledge"] for c in claims)
    assert {c["model_label"] for c in claims} == {"true", "false", "unsure"}
    assert all(c["model_label_probability"] is None for c in claims)
    assert sorted(world.serper.queries) == sorted(c["query"] for c in claims)
    assert result["quick"]["skipped_claims"] == 0 and result["quick"]["logprobs"] is False
    assert "gave no token probabilities (logprobs)" in result["quick"]["note"]
    page = client.get(f"/v/{result['id']}").content.decode()
    assert "gave no token probabilities (logprobs)" in page


# The model is sure of every claim of TEXT: none is searched.
KNOWS_ALL = {"Paris": ("true", 0.999), "1889": ("true", 0.999), "steel": ("false", 0.999)}
FROM_MODEL = "from the model's own knowledge, not checked against any source"


def test_a_quick_run_the_model_answered_wholly_ends_done_and_says_why_it_has_no_score(client, world, celery_worker):
    world.llm.knows = KNOWS_ALL
    verification_id = run(client, retrieval_mode="sparse", quick=True)
    result = wait_for(client, verification_id)

    assert (result["status"], result["error"], result["problems"]) == ("done", "", [])
    claims = claims_of(result).values()
    assert len(claims) == 3 and all(c["from_model_knowledge"] and c["status"] == "done" for c in claims)
    assert all(c["note"].startswith(FROM_MODEL) and c["evidence"] == [] for c in claims)
    assert not world.serper.queries and result["usage"]["searches"] == 0
    assert (result["score"], result["total"], result["counts"]["excluded"]) == (None, 0, 3)
    assert all(s["note"].startswith(FROM_MODEL) for s in result["sentences"] if s["claims"])

    doc = lxml.html.document_fromstring(client.get(f"/v/{verification_id}").content.decode())
    assert not doc.cssselect("#problems, #no-claims") and doc.get_element_by_id("overall-score").text_content() == "—"
    note = " ".join(doc.get_element_by_id("no-score-note").text_content().split())
    assert note == (
        f"No score: every claim was answered {FROM_MODEL}, and such answers are left out of the score. "
        "Tick “Count the 3 claims answered from the model's own knowledge” to count them in."
    )
    assert doc.get_element_by_id("include-model-knowledge").get("checked") is None
    assert doc.get_element_by_id("run-ended-message").text_content().startswith("Verification finished")
    sentence = " ".join(doc.get_element_by_id("note-0").text_content().split())
    assert FROM_MODEL in sentence and "evidence item" not in sentence

    ticked = lxml.html.document_fromstring(client.get(f"/v/{verification_id}?model_knowledge=1").content.decode())
    assert ticked.get_element_by_id("overall-score").get("data-score") == str(2 / 3)
    assert not ticked.cssselect("#no-score-note")


def test_a_quick_run_whose_only_answers_are_the_models_is_not_failed_for_want_of_evidence(
    client, world, celery_worker, settings
):
    """A sentence fails (its decomposition), and the model knew every claim of the others: the run
    has answers, so it is done with the failure told, not failed as "no evidence could be judged"."""
    settings.DECOMPOSE_CHUNK_SENTENCES = 1  # a call per sentence: the failure stays apart
    world.llm.knows = {"Paris": ("true", 0.999), "1889": ("true", 0.999)}
    world.llm.fail_words = {"steel": 500}
    result = wait_for(client, run(client, retrieval_mode="sparse", quick=True))

    assert result["status"] == "done", result["error"]
    assert [p["step"] for p in result["problems"]] == ["decompose"]
    claims = claims_of(result).values()
    assert len(claims) == 2 and all(c["from_model_knowledge"] and c["note"].startswith(FROM_MODEL) for c in claims)
    assert result["score"] is None and not world.serper.queries
    page = client.get(f"/v/{result['id']}").content.decode()
    assert "Parts of this verification failed (1 item)" in page and 'id="no-score-note"' in page


def test_a_snippet_gives_way_to_its_page_once_a_retry_reads_it(client, world, celery_worker):
    """HTTP 429 says "not now": the snippet stands in, and a retry that reads the page judges the
    page's own passage instead of keeping both."""
    wiki = world.sites[0]
    wiki.pages["/eiffel"].status = 429
    verification_id = run(client, retrieval_mode="sparse")
    first = wait_for(client, verification_id)
    stood_in = [e for e in all_evidence(first) if e["url"].endswith("/eiffel")]
    assert stood_in and all(e["snippet_only"] and e["unread_reason"] == "HTTP 429" for e in stood_in)
    assert first["retryable"] > 0

    wiki.pages["/eiffel"].status = 200
    response = client.post(f"/api/verifications/{verification_id}/retry", content_type="application/json")
    assert response.status_code == 202, response.content
    retried = wait_for(client, verification_id)

    read = [e for e in all_evidence(retried) if e["url"].endswith("/eiffel")]
    assert len(read) == len(stood_in)  # one item per claim, the page's now
    assert not any(e["snippet_only"] or e["unread_reason"] for e in read)
    assert all(e["verdict"] in JUDGED and e["highlights"] for e in read)


@dataclass
class ChallengePage(FakePage):
    """Answers 200 with a bot challenge's HTML; the search engine still shows `body` as its snippet."""

    def html(self) -> bytes:
        return CLOUDFLARE_CHALLENGE.encode()


def test_a_bot_challenge_answered_with_200_is_not_read_as_the_page(client, world, celery_worker):
    news = world.sites[1]
    news.pages["/guarded"] = ChallengePage(
        "Eiffel Tower facts | Guarded News", "Records show the Eiffel Tower was completed in 1889 after two years."
    )
    verification_id = run(client, retrieval_mode="sparse")
    result = wait_for(client, verification_id)

    guarded = [e for e in all_evidence(result) if e["url"].endswith("/guarded")]
    assert guarded and all(e["snippet_only"] and e["unread_reason"] == "a bot challenge" for e in guarded)
    assert not any("Just a moment" in e["passage"] or "JavaScript" in e["passage"] for e in all_evidence(result))
    source = next(s for s in result["sources"] if s["url"].endswith("/guarded"))
    assert source["status"] == "failed" and source["error"] == "the server sent a bot challenge instead of the page"


class _OwnBodyHandler(_SiteHandler):
    def do_GET(self) -> None:
        site: FakeSite = self.owner
        page = site.pages.get(urlsplit(self.path).path)
        if page is None or page.status == 200:
            return super().do_GET()
        with site.lock:
            site.hits[self.path] += 1
        self._send(page.status, page.html(), page.content_type)


class OwnBodySite(FakeSite):
    """A FakeSite that sends each page's own HTML with its status, an error status too (FakeSite
    sends a stock body with one): a bot challenge answered with 503."""

    def __post_init__(self) -> None:
        LoopbackServer.__init__(self, _OwnBodyHandler)
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()


def test_a_bot_challenge_answered_with_503_is_judged_from_its_snippet_and_may_be_retried(client, world, celery_worker):
    """Cloudflare answers a scraper 503 "Just a moment...": a refusal, not a server failure, so the
    snippet is judged in its place, with the reason; a challenge passes with time, so a retry
    fetches the page again, and the page read replaces the snippet."""
    title, words = (
        "Eiffel Tower facts | Guarded News",
        "Records show the Eiffel Tower was completed in 1889 after two years.",
    )
    guarded = OwnBodySite(pages={"/guarded": ChallengePage(title, words, status=503)}).start()
    world.serper.sites.append(guarded)  # the world's own list: stopped with its sites
    verification_id = run(client, retrieval_mode="sparse")
    result = wait_for(client, verification_id)

    assert result["status"] == "done", result["error"]
    stood_in = [e for e in all_evidence(result) if e["url"].endswith("/guarded")]
    assert stood_in and all(e["snippet_only"] and e["unread_reason"] == "a bot challenge, HTTP 503" for e in stood_in)
    completed = next(
        e
        for s in result["sentences"]
        for c in s["claims"]
        for e in c["evidence"]
        if e in stood_in and "1889" in c["text"]
    )
    assert completed["passage"] == words and completed["title"] == title and completed["verdict"] in JUDGED
    assert not any("Just a moment" in e["passage"] for e in all_evidence(result))
    source = next(s for s in result["sources"] if s["url"].endswith("/guarded"))
    error = "the server sent a bot challenge instead of the page (HTTP 503)"
    assert source["status"] == "failed" and source["error"] == error
    fetch = next(p for p in result["problems"] if p["step"] == "fetch")
    reasons = {r["reason"]: r["transient"] for r in fetch["reasons"]}
    assert reasons[f"{error}; judged from its search snippet instead"] is True  # a retry may pass it
    assert result["retryable"] > 0 and guarded.hits["/guarded"] == 1

    guarded.pages["/guarded"] = FakePage(title, words)  # the challenge is passed now
    response = client.post(f"/api/verifications/{verification_id}/retry", content_type="application/json")
    assert response.status_code == 202, response.content
    retried = wait_for(client, verification_id)

    assert guarded.hits["/guarded"] == 2
    read = [e for e in all_evidence(retried) if e["url"].endswith("/guarded")]
    assert len(read) == len(stood_in) and not any(e["snippet_only"] or e["unread_reason"] for e in read)
