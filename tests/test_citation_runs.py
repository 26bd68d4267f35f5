"""A text's own citations read on the real worker (issue 34), against fakes on 127.0.0.1: an AI
search answer whose numbered markers point to a page that supports its sentence, one that says the
opposite, one that says something else, one that is not there (404) and one whose host does not
resolve. Nothing is fetched but 127.0.0.1: the unresolvable host is answered by a stand-in for the
system's resolver (socket.getaddrinfo) that fails for `.invalid` names as a resolver does, so the
real fetcher classifies a real NameResolutionError."""

import socket

import pytest

from tests.test_engine import wait_for
from verification.management.summaries import summary
from verification.models import Citation, Claim, Evidence, Origin, Source, Verification
from verification.selectors.records import permalink

DEAD = "https://depot.invalid/yard"


@pytest.fixture
def no_such_host(monkeypatch):
    """`.invalid` names (RFC 2606) fail to resolve without asking any resolver; others resolve as usual."""
    resolve = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def answer(site) -> str:
    return (
        "Riverton approved a tram line in 2024 [1]. The Riverton tram line will cost 40 million dollars [2]. "
        "The tram line runs along the Riverton boulevard [3]. Riverton ordered twelve tram cars [4]. "
        "The tram depot stands beside the Riverton river [5].\n\n"
        "Sources:\n"
        f"[1] Riverton council minutes {site.url}/minutes\n"
        f"[2] City paper {site.url}/cost\n"
        f"[3] City paper {site.url}/parks\n"
        f"[4] Tram orders {site.url}/gone\n"
        f"[5] Depot {DEAD}\n"
    )


def start(client, text: str, **settings) -> str:
    body = {"text": text, "settings": {"retrieval_mode": "sparse", "top_k_passages": 1, "context_size": 0, **settings}}
    response = client.post("/api/verifications", body, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def verdicts_from(url: str) -> set[str]:
    return set(Evidence.objects.filter(source__url=url).values_list("verdict", flat=True))


@pytest.mark.django_db(transaction=True)
def test_each_sentence_is_judged_against_what_it_cites(client, world, celery_worker, cited_site, no_such_host):
    result = wait_for(client, start(client, answer(cited_site)))

    assert result["status"] == "done", result["error"]
    claims = list(Claim.objects.values_list("text", flat=True))
    assert claims and not any("[" in claim or "http" in claim for claim in claims)
    assert [s["text"] for s in result["sentences"]][0] == "Riverton approved a tram line in 2024."
    assert len(result["sentences"]) == 5  # the Sources list is no sentence
    assert verdicts_from(cited_site.url + "/minutes") == {"supported"}
    assert verdicts_from(cited_site.url + "/cost") == {"not_supported"}
    assert verdicts_from(cited_site.url + "/parks") <= {"irrelevant"}
    gone = Source.objects.get(url=cited_site.url + "/gone")
    dead = Source.objects.get(url=DEAD)
    assert (gone.status, gone.error) == ("failed", "the page answered HTTP 404")
    assert (dead.status, dead.error) == ("failed", "the page's host name does not resolve (no such domain)")
    assert set(Source.objects.filter(citations__isnull=False).values_list("origin", flat=True)) == {Origin.CITED}
    # Each cited page is read for the claims of the sentence citing it, not for the others.
    minutes = Source.objects.get(url=cited_site.url + "/minutes")
    assert {r.claim.sentence.index for r in minutes.search_results.all()} == {0}
    assert Citation.objects.filter(source__isnull=False).count() == 5
    # The web was searched as well (also_search, the default).
    assert world.serper.queries
    outcomes = [
        (c["marker"], c["sentence"], c["outcome"], c["outcome_label"], c["reason"]) for c in result["citations"]
    ]
    assert outcomes == [
        ("[1]", 0, "supports", "supports its sentence", ""),
        ("[2]", 1, "contradicts", "contradicts its sentence", ""),
        ("[3]", 2, "does_not_say", "does not say this", "nothing in it is about what its sentence says"),
        ("[4]", 3, "does_not_exist", "does not exist", "the page answered HTTP 404"),
        ("[5]", 4, "does_not_exist", "does not exist", "the page's host name does not resolve (no such domain)"),
    ]
    assert result["citations"][0]["url"] == cited_site.url + "/minutes"
    assert {k: v for k, v in result["citation_counts"].items() if v} == {
        "supports": 1,
        "contradicts": 1,
        "does_not_say": 1,
        "does_not_exist": 2,
    }
    assert {s["origin"] for s in result["sources"] if s["url"].startswith(cited_site.url)} == {"cited"}
    # The CLI, the reports and the page say it too.
    run = Verification.objects.get()
    said = summary(result, run)
    counted = "5 citations: 1 supports its sentence, 1 contradicts it, 1 does not say it, 2 do not exist"
    assert f"Citations: {counted}" in said.splitlines()
    assert f"    cites [4] {cited_site.url}/gone: does not exist (the page answered HTTP 404)" in said.splitlines()
    markdown = client.get(f"{permalink(run)}/report.md").content.decode()
    assert "## Citations" in markdown
    assert "- S4 \\[4\\]: does not exist (the page answered HTTP 404)" in markdown
    html = client.get(f"{permalink(run)}/report.html").content.decode()
    assert "5 citations: 1 supports its sentence" in html
    page = client.get(permalink(run))
    assert page.status_code == 200 and "Riverton approved a tram line in 2024" in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_cited_sources_only_searches_nothing_and_reads_a_page_cited_often_once(
    client, world, celery_worker, cited_site
):
    # Twelve sentences cite [1], one of them three times over: 14 citations of one page.
    text = (
        "Riverton approved a tram line in 2024 [1][1][1]. "
        + "".join(f"The Riverton council approved tram line {n} after a debate [1]. " for n in range(2, 13))
        + "The sky over Riverton was grey.\n\n"
        f"Sources:\n[1] Riverton council minutes {cited_site.url}/minutes\n"
    )
    result = wait_for(client, start(client, text, citations="only"))

    assert result["status"] == "done", result["error"]
    assert world.serper.queries == [] and result["usage"]["searches"] == 0
    assert len(result["citations"]) == 14
    assert cited_site.hits["/minutes"] == 1
    assert Source.objects.filter(url=cited_site.url + "/minutes").count() == 1
    assert result["citations"][0]["outcome"] == "supports"
    assert {c["outcome"] for c in result["citations"]} <= {"supports", "does_not_say"}
    # The sentence that cites nothing has nothing to be checked against.
    last = result["sentences"][-1]
    assert last["text"] == "The sky over Riverton was grey."
    assert all(not claim["evidence"] for claim in last["claims"])


@pytest.mark.django_db(transaction=True)
def test_a_cited_private_address_is_refused_not_fetched(client, world, celery_worker, cited_site, settings):
    settings.ALLOW_PRIVATE_FETCH = False
    text = (
        "Riverton approved a tram line in 2024 [1]. The Riverton tram line will cost 40 million dollars [2].\n\n"
        f"Sources:\n[1] Riverton council minutes {cited_site.url}/minutes\n[2] Router http://10.0.0.1/admin\n"
    )
    result = wait_for(client, start(client, text, citations="only"))

    assert [c["outcome"] for c in result["citations"]] == ["could_not_be_read", "could_not_be_read"]
    assert all("refused" in c["reason"] for c in result["citations"]), result["citations"]
    assert cited_site.hits["/minutes"] == 0


@pytest.mark.django_db(transaction=True)
def test_a_text_without_citations_runs_as_before(client, world, celery_worker):
    result = wait_for(client, start(client, "The Eiffel Tower is in Paris, France. It was completed in 1889."))

    assert result["status"] == "done", result["error"]
    assert [s["text"] for s in result["sentences"]] == [
        "The Eiffel Tower is in Paris, France.",
        "It was completed in 1889.",
    ]
    assert not Citation.objects.exists()
    assert not Source.objects.filter(origin=Origin.CITED).exists()
    assert result["citations"] == [] and not any(result["citation_counts"].values())
    run = Verification.objects.get()
    assert "Citations" not in summary(result, run) and "cites" not in summary(result, run)
    assert "## Citations" not in client.get(f"{permalink(run)}/report.md").content.decode()


@pytest.mark.django_db(transaction=True)
def test_markers_beyond_the_cap_are_marked_and_their_pages_not_read(client, world, celery_worker, cited_site, settings):
    settings.MAX_CITED_SOURCES = 1
    text = (
        "Riverton approved a tram line in 2024 [1]. The Riverton tram line will cost 40 million dollars [2]. "
        "Riverton ordered twelve tram cars [9].\n\n"
        f"Sources:\n[1] Riverton council minutes {cited_site.url}/minutes\n[2] City paper {cited_site.url}/cost\n"
    )
    result = wait_for(client, start(client, text, citations="only"))

    assert result["status"] == "done", result["error"]
    assert [(c["marker"], c["outcome"], c["reason"]) for c in result["citations"]] == [
        ("[1]", "supports", ""),
        ("[2]", "not_checked", "not read: a run reads at most 1 cited address (MAX_CITED_SOURCES)"),
        ("[9]", "unresolved", "no entry 9 in the reference list (2 entries)"),
    ]
    assert cited_site.hits["/cost"] == 0
