"""A claim too few of whose pages could be read is searched once more, with its own words, on
the real worker against the fakes on 127.0.0.1: the new results are read, those already seen
are not, the run says how many claims needed it, and nothing searches a claim a third time."""

import pytest

from tests.fakes import FakePage, FakeSite
from tests.test_engine import all_evidence, run, wait_for
from verification.models import Claim, ClaimStatus, SearchResult, Sentence, Status, Verification
from verification.worker import resume

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "The Zanzibar museum opened in 1801."
QUERY = "1801 museum opened zanzibar"  # what the fake model writes as the claim's search query
STATES = "The Zanzibar museum opened in 1801, the records of the island say."


@pytest.fixture
def refusing_web(world):
    """One site whose two best pages for the claim refuse to be read, then two that can be read:
    results come in path order, as every page shares the claim's four words."""
    site = FakeSite(
        pages={
            "/a-refuses": FakePage("Zanzibar museum 1801", STATES, status=403),
            "/b-refuses": FakePage("Zanzibar museum opened", STATES, status=403),
            "/c-reads": FakePage("Zanzibar museum history", STATES),
            "/d-reads": FakePage("Museum of Zanzibar", STATES),
        }
    ).start()
    world.serper.sites[:] = [site]
    yield site
    site.stop()


def rounds(verification_id) -> dict[str, int]:
    results = SearchResult.objects.filter(claim__sentence__verification_id=verification_id).select_related("source")
    return {result.source.url.rsplit("/", 1)[1]: result.search_round for result in results}


def test_a_claim_whose_pages_refuse_is_searched_again_with_its_text(client, world, refusing_web, celery_worker):
    verification_id = run(client, text=TEXT, retrieval_mode="sparse", top_k_results=2)
    result = wait_for(client, verification_id)

    assert result["status"] == "done", result["error"]
    (claim,) = [c for s in result["sentences"] for c in s["claims"]]
    assert claim["query"] == QUERY and claim["second_query"] == claim["text"] == TEXT
    assert world.serper.queries == [QUERY, TEXT]
    # The second search found all four pages; the two it had seen were neither saved nor fetched again.
    assert rounds(verification_id) == {"a-refuses": 1, "b-refuses": 1, "c-reads": 2, "d-reads": 2}
    assert all(count == 1 for count in refusing_web.hits.values()), refusing_web.hits
    judged = {e["url"].rsplit("/", 1)[1] for e in all_evidence(result) if e["verdict"]}
    assert {"c-reads", "d-reads"} <= judged
    assert result["usage"]["searches"] == 2 and result["usage"]["claims_searched_again"] == 1
    page = client.get(f"/v/{verification_id}").content.decode()
    assert "1 claim searched a second time, with another query" in page


def test_a_retry_reads_its_pages_again_but_never_searches_a_third_time(client, world, refusing_web, celery_worker):
    refusing_web.pages["/b-refuses"].status = 503  # a failure a retry may change
    verification_id = run(client, text=TEXT, retrieval_mode="sparse", top_k_results=2)
    assert wait_for(client, verification_id)["status"] == "done"
    assert world.serper.queries == [QUERY, TEXT]

    refusing_web.pages["/b-refuses"].status = 200
    response = client.post(f"/api/verifications/{verification_id}/retry", content_type="application/json")
    assert response.status_code == 202, response.content
    retried = wait_for(client, verification_id)

    assert retried["status"] == "done" and refusing_web.hits["/b-refuses"] == 2
    assert world.serper.queries == [QUERY, TEXT]
    assert retried["usage"]["searches"] == 2 and retried["usage"]["claims_searched_again"] == 1


def test_a_second_search_a_dead_worker_left_is_resumed_once(client, world, refusing_web, celery_worker):
    verification_id = run(client, text=TEXT, retrieval_mode="sparse", top_k_results=2)
    assert wait_for(client, verification_id)["status"] == "done"
    # As a worker leaves it that dies right after the join sent the claim to search again.
    SearchResult.objects.filter(search_round=2).delete()
    Claim.objects.update(status=ClaimStatus.SEARCHING)
    Sentence.objects.update(status=Status.RUNNING)
    Verification.objects.update(status=Status.RUNNING, finished_at=None)

    resume.resume(verification_id)
    resumed = wait_for(client, verification_id)

    assert resumed["status"] == "done", resumed["error"]
    assert rounds(verification_id) == {"a-refuses": 1, "b-refuses": 1, "c-reads": 2, "d-reads": 2}
    # Its second query once more (the answer from the cache), never its first, never a third.
    assert world.serper.queries == [QUERY, TEXT]
    assert resumed["usage"]["searches"] == 2 and resumed["usage"]["searches_cached"] == 1


def test_a_run_on_documents_alone_never_searches(client, world, refusing_web, celery_worker):
    created = client.post(
        "/api/verifications",
        {
            "text": TEXT,
            "settings": {"evidence": "documents", "retrieval_mode": "sparse"},
            "sources": [{"url": refusing_web.url + "/a-refuses"}],
        },
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    result = wait_for(client, created.json()["id"])

    assert result["status"] in ("done", "failed")
    assert world.serper.queries == [] and result["usage"]["searches"] == 0
    assert result["usage"]["claims_searched_again"] == 0
