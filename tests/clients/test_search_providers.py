"""Every search provider over real HTTP against a server on 127.0.0.1 speaking its API
(tests/fake_search.py; Serper's is tests/fakes.py), the chain that falls back from one to the
next, and the chain providers.search_provider() builds from settings."""

import logging
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.fake_search import FakeBrave, FakeSearxng, FakeTavily, FakeWikipedia
from tests.fakes import FakePage, FakeSerper, FakeSite
from verification.clients import providers
from verification.clients.search import (
    BraveSearch,
    SearchChain,
    SearxngSearch,
    SerperSearch,
    TavilySearch,
    WikipediaSearch,
    retrying_session,
)
from verification.pipeline.search import search_claim
from verification.pipeline.types import SearchHit, StepError

QUERY = "eiffel tower paris"


@pytest.fixture
def site():
    site = FakeSite(
        pages={
            "/eiffel": FakePage("Eiffel Tower", "The Eiffel Tower is a tower in Paris."),
            "/louvre": FakePage("Louvre", "The Louvre is a museum in Paris."),
            "/bread": FakePage("Bread", "Flour, water and salt."),
        }
    ).start()
    yield site
    site.stop()


def no_retries():
    return retrying_session(total=0)


# --- Serper


def test_serper_says_when_the_credits_are_spent_and_does_not_retry(serve):
    serper = serve(FakeSerper(fail_status=400, fail_message="Not enough credits"))

    with pytest.raises(StepError) as error:
        SerperSearch(api_key=serper.api_key, base_url=serper.url, timeout=2).search(QUERY, 5)

    assert str(error.value) == "Serper: not enough credits"
    assert serper.queries == [QUERY]


def test_serper_hits_name_serper(serve, site):
    serper = serve(FakeSerper(sites=[site]))

    hits = SerperSearch(api_key=serper.api_key, base_url=serper.url, timeout=2).search(QUERY, 5)

    assert [(hit.url, hit.provider) for hit in hits] == [
        (site.url + "/eiffel", "serper"),
        (site.url + "/louvre", "serper"),
    ]


# --- Brave


def brave(server, key=None, **kwargs) -> BraveSearch:
    return BraveSearch(api_key=key or server.api_key, base_url=server.url, timeout=2, **kwargs)


def test_brave_sends_a_get_with_the_subscription_token(serve, site):
    server = serve(FakeBrave(sites=[site], api_key="brave-key"))

    brave(server).search(QUERY, 7)

    [request] = server.received
    assert (request.method, request.path) == ("GET", "/res/v1/web/search")
    assert request.params == {"q": QUERY, "count": "7"}
    assert request.headers["X-Subscription-Token"] == "brave-key"
    assert request.headers["Accept"] == "application/json"


def test_brave_maps_web_results_to_hits_in_rank_order(serve, site):
    server = serve(FakeBrave(sites=[site]))

    hits = brave(server).search(QUERY, 5)

    assert hits == [
        SearchHit(site.url + "/eiffel", "Eiffel Tower", "The Eiffel Tower is a tower in Paris.", 1, "brave"),
        SearchHit(site.url + "/louvre", "Louvre", "The Louvre is a museum in Paris.", 2, "brave"),
    ]


def test_brave_asks_for_at_most_the_20_results_its_api_allows(serve, site):
    server = serve(FakeBrave(sites=[site]))

    brave(server).search(QUERY, 50)

    assert server.received[0].params["count"] == "20"


def test_brave_finding_nothing_is_an_empty_answer(serve, site):
    server = serve(FakeBrave(sites=[site]))

    assert brave(server).search("quantum chromodynamics", 5) == []


def test_brave_names_a_refused_key(serve):
    server = serve(FakeBrave(api_key="the-right-key"))

    with pytest.raises(StepError) as error:
        brave(server, key="a-wrong-key").search(QUERY, 5)

    assert str(error.value) == "Brave: the key was refused (HTTP 422): check BRAVE_API_KEY"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("RATE_LIMITED", "Brave: too many requests for the plan's rate limit (HTTP 429)"),
        ("QUOTA_LIMITED", "Brave: the plan's monthly quota is used up (HTTP 429)"),
    ],
)
def test_brave_tells_a_rate_limit_from_a_spent_quota(serve, code, message):
    body = {"type": "ErrorResponse", "error": {"status": 429, "code": code, "detail": "Request limit exceeded."}}
    server = serve(FakeBrave(fail_status=429, fail_body=body))

    with pytest.raises(StepError) as error:
        brave(server, session=no_retries()).search(QUERY, 5)

    assert str(error.value) == message


# --- Tavily


def tavily(server, key=None, **kwargs) -> TavilySearch:
    return TavilySearch(api_key=key or server.api_key, base_url=server.url, timeout=2, **kwargs)


def test_tavily_posts_the_query_with_a_bearer_key(serve, site):
    server = serve(FakeTavily(sites=[site], api_key="tvly-key"))

    tavily(server).search(QUERY, 3)

    [request] = server.received
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["Authorization"] == "Bearer tvly-key"
    assert request.body == {"query": QUERY, "max_results": 3}


def test_tavily_maps_results_to_hits_in_rank_order(serve, site):
    server = serve(FakeTavily(sites=[site]))

    hits = tavily(server).search(QUERY, 5)

    assert [(hit.url, hit.title, hit.snippet, hit.rank, hit.provider) for hit in hits] == [
        (site.url + "/eiffel", "Eiffel Tower", "The Eiffel Tower is a tower in Paris.", 1, "tavily"),
        (site.url + "/louvre", "Louvre", "The Louvre is a museum in Paris.", 2, "tavily"),
    ]


def test_tavily_names_a_refused_key(serve):
    server = serve(FakeTavily(api_key="the-right-key"))

    with pytest.raises(StepError) as error:
        tavily(server, key="a-wrong-key").search(QUERY, 5)

    assert str(error.value) == "Tavily: the key was refused (HTTP 401): check TAVILY_API_KEY"


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (429, "Tavily: too many requests for the plan's rate limit (HTTP 429)"),
        (432, "Tavily: the plan's usage limit is reached (HTTP 432)"),
        (433, "Tavily: the plan's usage limit is reached (HTTP 433)"),
    ],
)
def test_tavily_names_rate_and_usage_limits(serve, status, message):
    server = serve(FakeTavily(fail_status=status, fail_body={"detail": {"error": "This request exceeds your plan."}}))

    with pytest.raises(StepError) as error:
        tavily(server, session=no_retries()).search(QUERY, 5)

    assert str(error.value) == message


# --- SearXNG


def test_searxng_asks_for_json_and_keeps_the_first_results(serve, site):
    server = serve(FakeSearxng(sites=[site]))

    hits = SearxngSearch(base_url=server.url + "/", timeout=2).search(QUERY, 1)

    [request] = server.received
    assert (request.method, request.path, request.params) == ("GET", "/search", {"q": QUERY, "format": "json"})
    assert [(hit.url, hit.title, hit.rank, hit.provider) for hit in hits] == [
        (site.url + "/eiffel", "Eiffel Tower", 1, "searxng")
    ]


def test_searxng_says_when_the_instance_has_json_switched_off(serve, site):
    server = serve(FakeSearxng(sites=[site], json_format=False))

    with pytest.raises(StepError) as error:
        SearxngSearch(base_url=server.url, timeout=2).search(QUERY, 5)

    assert "refused the JSON format (HTTP 403)" in str(error.value)
    assert "search.formats" in str(error.value)


# --- Wikipedia


def wikipedia(server) -> WikipediaSearch:
    return WikipediaSearch(base_url=server.url + "/w/api.php", timeout=2)


def test_wikipedia_asks_the_mediawiki_api_for_pages_with_their_urls(serve, site):
    server = serve(FakeWikipedia(sites=[site]))

    wikipedia(server).search(QUERY, 4)

    [request] = server.received
    assert (request.method, request.path) == ("GET", "/w/api.php")
    assert request.params == {
        "action": "query",
        "format": "json",
        "formatversion": "2",
        "generator": "search",
        "gsrsearch": QUERY,
        "gsrlimit": "4",
        "gsrnamespace": "0",
        "prop": "info",
        "inprop": "url",
    }
    assert request.headers["User-Agent"].startswith("factsite/")


def test_wikipedia_keeps_the_search_rank_not_the_page_id_order(serve, site):
    server = serve(FakeWikipedia(sites=[site]))

    hits = wikipedia(server).search(QUERY, 5)

    assert [(hit.url, hit.title, hit.rank, hit.provider) for hit in hits] == [
        (site.url + "/eiffel", "Eiffel Tower", 1, "wikipedia"),
        (site.url + "/louvre", "Louvre", 2, "wikipedia"),
    ]


def test_wikipedia_finding_nothing_is_an_empty_answer(serve, site):
    server = serve(FakeWikipedia(sites=[site]))

    assert wikipedia(server).search("quantum chromodynamics", 5) == []


def test_wikipedia_reports_an_api_error_sent_with_http_200(serve, site):
    server = serve(FakeWikipedia(sites=[site]))

    with pytest.raises(StepError) as error:
        wikipedia(server).search("", 5)

    assert str(error.value) == "Wikipedia: the API refused the search (badvalue: Unrecognized value for parameter.)"


# --- every provider alike


@pytest.mark.parametrize(
    "make",
    [
        lambda url: SerperSearch(api_key="k", base_url=url, timeout=2, session=no_retries()),
        lambda url: BraveSearch(api_key="k", base_url=url, timeout=2, session=no_retries()),
        lambda url: TavilySearch(api_key="k", base_url=url, timeout=2, session=no_retries()),
        lambda url: SearxngSearch(base_url=url, timeout=2, session=no_retries()),
        lambda url: WikipediaSearch(base_url=url, timeout=2, session=no_retries()),
    ],
)
def test_every_provider_names_itself_when_it_fails(serve, make):
    outage = serve(FakeBrave(fail_status=502, fail_body={}, fail_content_type="text/html"))
    client = make(outage.url)

    with pytest.raises(StepError) as error:
        client.search(QUERY, 5)

    assert str(error.value).startswith(client.label + ": ")
    assert "502" in str(error.value)


# --- the chain


def test_the_next_provider_takes_over_when_serper_has_no_credits(serve, site, caplog):
    serper = serve(FakeSerper(sites=[site], fail_status=400, fail_message="Not enough credits"))
    wiki = serve(FakeWikipedia(sites=[site]))
    chain = SearchChain([SerperSearch(api_key=serper.api_key, base_url=serper.url, timeout=2), wikipedia(wiki)])

    with caplog.at_level(logging.INFO, logger="verification.clients.search.chain"):
        hits = search_claim(chain, QUERY, 5)

    assert [(hit.url, hit.rank, hit.provider) for hit in hits] == [
        (site.url + "/eiffel", 1, "wikipedia"),
        (site.url + "/louvre", 2, "wikipedia"),
    ]
    assert serper.queries == [QUERY]
    assert "fell back to Wikipedia" in caplog.text and "Serper: not enough credits" in caplog.text


def test_an_empty_answer_is_an_answer_and_the_next_provider_is_not_asked(serve, site):
    first = serve(FakeTavily(sites=[site]))
    second = serve(FakeWikipedia(sites=[site]))
    chain = SearchChain([tavily(first), wikipedia(second)])

    assert chain.search("quantum chromodynamics", 5) == []
    assert len(first.received) == 1 and second.received == []


def test_when_every_provider_fails_the_message_gives_each_reason(serve):
    serper = serve(FakeSerper(fail_status=400, fail_message="Not enough credits"))
    brave_api = serve(FakeBrave(api_key="the-right-key"))
    searxng = serve(FakeSearxng(json_format=False))
    chain = SearchChain(
        [
            SerperSearch(api_key=serper.api_key, base_url=serper.url, timeout=2),
            BraveSearch(api_key="a-wrong-key", base_url=brave_api.url, timeout=2),
            SearxngSearch(base_url=searxng.url, timeout=2),
        ]
    )

    with pytest.raises(StepError) as error:
        chain.search(QUERY, 5)

    assert str(error.value) == (
        "every search provider failed: Serper: not enough credits; "
        "Brave: the key was refused (HTTP 422): check BRAVE_API_KEY; "
        "SearXNG: the instance refused the JSON format (HTTP 403): add json to search.formats in its settings.yml"
    )


def test_a_chain_with_no_provider_says_search_is_not_configured():
    with pytest.raises(StepError, match=r"no search provider is configured \(SEARCH_PROVIDERS\)"):
        SearchChain([]).search(QUERY, 5)


# --- the chain from settings


@pytest.fixture
def no_search_keys(settings):
    settings.SERPER_API_KEY = settings.BRAVE_API_KEY = settings.TAVILY_API_KEY = settings.SEARXNG_URL = ""
    settings.WIKIPEDIA_BASE_URL = "http://127.0.0.1:9/w/api.php"


def chain_names() -> list[str]:
    return [provider.name for provider in providers.search_provider().providers]


def test_providers_without_a_key_or_address_are_skipped_in_the_listed_order(settings, no_search_keys):
    settings.SEARCH_PROVIDERS = ["wikipedia", "serper", "brave", "tavily", "searxng"]
    assert chain_names() == ["wikipedia"]

    settings.TAVILY_API_KEY = "tvly-key"
    settings.SEARXNG_URL = "http://127.0.0.1:9"
    assert chain_names() == ["wikipedia", "tavily", "searxng"]

    settings.SEARCH_PROVIDERS = "Searxng, serper,tavily"  # as a string, spaced and capitalised
    settings.SERPER_API_KEY = "serper-key"
    assert chain_names() == ["searxng", "serper", "tavily"]


def test_with_only_a_language_model_the_default_list_searches_wikipedia(settings, no_search_keys):
    settings.SEARCH_PROVIDERS = ["serper", "brave", "tavily", "searxng", "wikipedia"]

    assert chain_names() == ["wikipedia"]
    assert providers.search_problem() == ""


def test_a_list_with_no_configured_provider_names_what_to_set(settings, no_search_keys):
    settings.SEARCH_PROVIDERS = ["serper", "searxng"]

    problem = providers.search_problem()

    assert problem.startswith("Web search is not configured: set SERPER_API_KEY")
    assert "SEARXNG_URL" in problem and "add wikipedia" in problem
    assert problem in providers.configuration_problems()


def test_an_unknown_provider_name_is_a_configuration_problem(settings):
    settings.SEARCH_PROVIDERS = ["serper", "bing"]

    assert any("SEARCH_PROVIDERS names bing" in problem for problem in providers.configuration_problems())


def test_a_fresh_clone_with_only_a_language_model_searches_wikipedia():
    """The defaults as a separate process reads them (the tests' own settings pin Serper)."""
    environment = {"PATH": os.environ["PATH"], "DJANGO_SECRET_KEY": "x", "OPENAI_API_KEY": "sk-test"}
    code = (
        "from verification.clients import providers; "
        "print(providers.search_provider_names()); print(providers.search_provider().endpoint); "
        "print(providers.configuration_problems())"
    )

    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "['serper', 'brave', 'tavily', 'searxng', 'wikipedia']",
        "https://en.wikipedia.org/w/api.php",
        "[]",
    ]
