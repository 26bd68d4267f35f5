"""Search fallback through the whole engine (API → Celery worker on real Redis → fake LLM,
search APIs and sites on 127.0.0.1): the result names the provider that found each page."""

import pytest

from tests.fake_search import FakeWikipedia
from tests.test_engine import all_evidence, run, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fake_wikipedia(world, settings):
    """A MediaWiki API over the world's sites, at WIKIPEDIA_BASE_URL."""
    wikipedia = FakeWikipedia(sites=world.sites).start()
    settings.WIKIPEDIA_BASE_URL = wikipedia.url + "/w/api.php"
    yield wikipedia
    wikipedia.stop()


def test_wikipedia_takes_over_when_serper_has_no_credits(client, world, fake_wikipedia, settings, celery_worker):
    settings.SEARCH_PROVIDERS = ["serper", "wikipedia"]
    world.serper.fail_status, world.serper.fail_message = 400, "Not enough credits"

    verification_id = run(client, retrieval_mode="sparse")
    result = wait_for(client, verification_id)

    assert result["status"] == "done", result["error"]
    assert world.serper.queries, "Serper was not asked first"
    claims = [c for s in result["sentences"] for c in s["claims"]]
    assert len(fake_wikipedia.received) == len(world.serper.queries) == len(claims)
    evidence = all_evidence(result)
    assert evidence and {e["provider"] for e in evidence} == {"wikipedia"}
    assert any(e["verdict"] == "supported" for e in evidence)
    assert result["sources"] and all(s["providers"] == ["wikipedia"] for s in result["sources"])
    shown = sum(
        client.get(f"/v/{verification_id}", {"sentence": s["index"]}).content.decode().count("found by Wikipedia")
        for s in result["sentences"]
    )
    assert shown == len(evidence)


def test_with_no_search_key_the_default_list_verifies_against_wikipedia(
    client, world, fake_wikipedia, settings, celery_worker
):
    settings.SEARCH_PROVIDERS = ["serper", "brave", "tavily", "searxng", "wikipedia"]
    settings.SERPER_API_KEY = settings.BRAVE_API_KEY = settings.TAVILY_API_KEY = settings.SEARXNG_URL = ""

    result = wait_for(client, run(client, retrieval_mode="sparse"))

    assert result["status"] == "done", result["error"]
    assert world.serper.queries == []
    evidence = all_evidence(result)
    assert evidence and {e["provider"] for e in evidence} == {"wikipedia"}


def test_when_every_provider_fails_each_claim_fails_with_every_reason(
    client, world, fake_wikipedia, settings, celery_worker
):
    settings.SEARCH_PROVIDERS = ["serper", "wikipedia"]
    world.serper.fail_status, world.serper.fail_message = 400, "Not enough credits"
    fake_wikipedia.fail_status = 500

    result = wait_for(client, run(client, retrieval_mode="sparse"))

    claims = [c for s in result["sentences"] for c in s["claims"]]
    assert claims and all(c["status"] == "failed" for c in claims)
    assert {c["error"] for c in claims} == {
        "web search failed: every search provider failed: Serper: not enough credits; "
        "Wikipedia: the API answered HTTP 500"
    }


def test_the_search_step_names_the_provider_of_each_hit(client, world, fake_wikipedia, settings):
    settings.SEARCH_PROVIDERS = ["serper", "wikipedia"]
    world.serper.fail_status, world.serper.fail_message = 400, "Not enough credits"

    response = client.post("/api/steps/search", {"query": "eiffel tower paris"}, content_type="application/json")

    assert response.status_code == 200, response.content
    hits = response.json()
    assert hits and {hit["provider"] for hit in hits} == {"wikipedia"}
    assert [hit["rank"] for hit in hits] == list(range(1, len(hits) + 1))


def test_the_search_step_names_an_unknown_provider_with_a_503(client, world, settings):
    settings.SEARCH_PROVIDERS = ["serper", "bing"]

    response = client.post("/api/steps/search", {"query": "eiffel tower paris"}, content_type="application/json")

    assert response.status_code == 503
    assert "SEARCH_PROVIDERS names bing" in response.json()["detail"]
    assert world.serper.queries == []
