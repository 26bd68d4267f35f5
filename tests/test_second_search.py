"""A claim too few of whose pages could be read is searched once more, with its own words, on
the real worker against the fakes on 127.0.0.1: the new results are read, those already seen
are not, the run says how many claims needed it, and nothing searches a claim a third time."""

import itertools

import pytest
from django.db import connection, transaction

from factsite.celery import app as celery_app
from tests.fakes import FakePage, FakeSite
from tests.test_engine import all_evidence, run, wait_for
from verification import services, tasks  # noqa: F401 (tasks: registers the steps run below)
from verification.models import Claim, ClaimStatus, SearchResult, Sentence, Status, Verification
from verification.worker import base, heartbeat, joins, read, resume

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

    # What the rows are rewound from: a first run that did search the claim a second time.
    assert world.serper.queries == [QUERY, TEXT]
    resume.resume(verification_id)
    resumed = wait_for(client, verification_id)

    assert resumed["status"] == "done", resumed["error"]
    assert rounds(verification_id) == {"a-refuses": 1, "b-refuses": 1, "c-reads": 2, "d-reads": 2}
    # Its second query once more (the answer from the cache), never its first, never a third.
    assert world.serper.queries == [QUERY, TEXT]
    assert resumed["usage"]["searches"] == 2 and resumed["usage"]["searches_cached"] == 1


class _Undone(Exception):
    """Rolls one interleaving's writes back (transaction.atomic)."""


def test_a_page_read_while_the_join_of_another_decides_never_skips_the_second_search(
    client, world, refusing_web, monkeypatch, settings
):
    """The claim's two pages are read by two tasks at once: the first's join decides while the
    second's read commits, then the second's join runs (after the first's turn, as
    services.judging_turn has it). Whatever moment of the first join the second read lands at,
    one of the two joins sends the claim to its second search, and neither sends it to the judge
    on its first search's pages (on PostgreSQL a read landing between the join's second-search
    decision and its ready query did: the run then ended with one search)."""
    settings.CPU_PROCESSES = 0
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(base, "send", lambda name, *args, countdown=None: sent.append((name, args)))
    monkeypatch.setattr(heartbeat, "hold", lambda verification_id: None)

    def run_sent() -> None:
        while sent:
            name, args = sent.pop(0)
            celery_app.tasks[base.TASK_PREFIX + name](*args)

    verification_id = run(client, text=TEXT, retrieval_mode="sparse", top_k_results=2)
    with monkeypatch.context() as patched:  # the two pages fetched (both refuse), neither read yet
        patched.setattr(read, "read_results", lambda *args, **kwargs: None)
        run_sent()
    claim = Claim.objects.get(sentence__verification_id=verification_id)
    first, second = SearchResult.objects.filter(claim=claim).select_related("source").order_by("source__url")
    assert claim.status == ClaimStatus.READING and {first.status, second.status} == {Status.PENDING}

    def record_read(result) -> set[int]:  # a page's task, up to its commit (read.read_results)
        return services.results_read([(result, None)], unread_reason=read._unread_reason(result.source))

    def first_join(second_read_before: int | None = None) -> int:
        """The first page's join, the second page's read committed just before its query
        number `second_read_before`; how many queries it made."""
        counter = itertools.count()

        def interleave(execute, sql, params, many, context):
            if next(counter) == second_read_before:
                record_read(second)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(interleave):
            joins.maybe_judge(claim.pk)
        return next(counter)

    def interleaving(second_read_before: int | None) -> int:
        sent.clear()
        try:
            with transaction.atomic():
                assert record_read(first) == {claim.pk}
                queries = first_join(second_read_before)
                if second_read_before is None:
                    raise _Undone
                assert SearchResult.objects.get(pk=second.pk).status == Status.FAILED
                joins.maybe_judge(claim.pk)  # the second page's join

                claim.refresh_from_db()
                assert (claim.status, claim.second_query) == (ClaimStatus.SEARCHING, TEXT), second_read_before
                assert [name for name, _ in sent] == ["claim_search"], (second_read_before, sent)
                raise _Undone
        except _Undone:
            return queries

    for moment in range(interleaving(None)):
        interleaving(moment)


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
