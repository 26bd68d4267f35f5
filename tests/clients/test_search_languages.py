"""What each search provider asks its engine for a text's language (issue 36), over real HTTP
against the fakes on 127.0.0.1 that record every request (tests/fake_search.py, tests/fakes.py):
Serper's `hl`/`gl`, Brave's `search_lang`/`country`, SearXNG's `language`, the Wikipedia of that
language; and nothing of the kind for a text whose language was not told."""

import pytest

from tests.fake_search import FakeBrave, FakeSearxng, FakeTavily, FakeWikipedia
from tests.fakes import FakePage, FakeSerper, FakeSite
from verification.clients.search import (
    BraveSearch,
    SearchChain,
    SearxngSearch,
    SerperSearch,
    TavilySearch,
    WikipediaSearch,
)
from verification.clients.search.wikipedia import edition
from verification.pipeline.search import merged, search_claim
from verification.pipeline.types import SearchHit

QUERY = "Eiffelturm Paris"


@pytest.fixture
def site():
    site = FakeSite(pages={"/eiffelturm": FakePage("Eiffelturm", "Der Eiffelturm ist ein Turm in Paris.")}).start()
    yield site
    site.stop()


@pytest.mark.parametrize(
    ("language", "sent"),
    [
        ("de", {"hl": "de", "gl": "de"}),
        ("zh", {"hl": "zh-cn", "gl": "cn"}),
        ("ar", {"hl": "ar", "gl": "eg"}),
        ("he", {"hl": "iw", "gl": "il"}),  # Google's own code for Hebrew
        ("eo", {"hl": "eo"}),  # a language of no country: no gl
        (None, {}),
    ],
)
def test_serper_asks_google_for_the_language_and_its_country(serve, site, language, sent):
    serper = serve(FakeSerper(sites=[site]))

    hits = SerperSearch(api_key=serper.api_key, base_url=serper.url, timeout=2).search(QUERY, 5, language=language)

    assert serper.bodies == [{"q": QUERY, "num": 5, **sent}]
    assert [hit.url for hit in hits] == [site.url + "/eiffelturm"]


@pytest.mark.parametrize(
    ("language", "sent"),
    [
        ("de", {"search_lang": "de", "country": "DE"}),
        ("ja", {"search_lang": "jp", "country": "JP"}),  # Brave's own code for Japanese
        ("zh", {"search_lang": "zh-hans", "country": "CN"}),
        ("ar", {"search_lang": "ar"}),  # Egypt is not among Brave's countries
        ("sw", {}),  # nor is Swahili among its languages, nor Tanzania: it would refuse both (422)
        (None, {}),
    ],
)
def test_brave_asks_only_for_the_languages_and_countries_it_lists(serve, site, language, sent):
    server = serve(FakeBrave(sites=[site]))

    BraveSearch(api_key=server.api_key, base_url=server.url, timeout=2).search(QUERY, 5, language=language)

    [request] = server.received
    assert request.params == {"q": QUERY, "count": "5", **sent}


def test_searxng_is_asked_for_the_language(serve, site):
    server = serve(FakeSearxng(sites=[site]))
    searxng = SearxngSearch(base_url=server.url, timeout=2)

    searxng.search(QUERY, 5, language="de")
    searxng.search(QUERY, 5)

    assert [request.params for request in server.received] == [
        {"q": QUERY, "format": "json", "language": "de"},
        {"q": QUERY, "format": "json"},  # the instance's default language
    ]


def test_tavily_takes_no_language_and_is_sent_none(serve, site):
    server = serve(FakeTavily(sites=[site]))

    TavilySearch(api_key=server.api_key, base_url=server.url, timeout=2).search(QUERY, 3, language="de")

    assert server.received[0].body == {"query": QUERY, "max_results": 3}


@pytest.mark.parametrize(
    ("endpoint", "language", "asked"),
    [
        ("https://en.wikipedia.org/w/api.php", "de", "https://de.wikipedia.org/w/api.php"),
        ("https://en.wikipedia.org/w/api.php", "nb", "https://no.wikipedia.org/w/api.php"),
        ("https://de.m.wikipedia.org/w/api.php", "ar", "https://ar.wikipedia.org/w/api.php"),
        ("https://en.wikipedia.org/w/api.php", None, "https://en.wikipedia.org/w/api.php"),
        ("https://wiki.example.org/w/api.php", "de", "https://wiki.example.org/w/api.php"),  # one wiki only
        ("https://mirror.example.org/{lang}/w/api.php", "zh", "https://mirror.example.org/zh/w/api.php"),
        ("https://mirror.example.org/{lang}/w/api.php", None, "https://mirror.example.org/en/w/api.php"),
    ],
)
def test_the_wikipedia_of_the_texts_language_is_searched(endpoint, language, asked):
    assert edition(endpoint, language) == asked


def test_wikipedia_editions_are_asked_at_a_mirrors_address(serve, site):
    server = serve(FakeWikipedia(sites=[site]))
    wikipedia = WikipediaSearch(base_url=server.url + "/{lang}/w/api.php", timeout=2)

    hits = wikipedia.search(QUERY, 5, language="de")
    wikipedia.search(QUERY, 5)

    assert [request.path for request in server.received] == ["/de/w/api.php", "/en/w/api.php"]
    assert [hit.url for hit in hits] == [site.url + "/eiffelturm"]


def test_the_chain_hands_the_language_to_the_provider_that_answers(serve, site):
    failing = serve(FakeSerper(sites=[site], fail_status=403))
    brave = serve(FakeBrave(sites=[site]))
    chain = SearchChain(
        [
            SerperSearch(api_key=failing.api_key, base_url=failing.url, timeout=2),
            BraveSearch(api_key=brave.api_key, base_url=brave.url, timeout=2),
        ]
    )

    hits = search_claim(chain, QUERY, 5, language="ja")

    assert failing.bodies[0]["hl"] == "ja"
    assert brave.received[0].params["search_lang"] == "jp"
    assert [hit.provider for hit in hits] == ["brave"]


def hit(url: str, rank: int) -> SearchHit:
    return SearchHit(url=url, title="", snippet="", rank=rank)


def test_an_english_searchs_results_take_turns_with_the_languages_own():
    own = [hit("https://ar.example/1", 1), hit("https://shared.example/", 2), hit("https://ar.example/3", 3)]
    english = [hit("https://shared.example/", 1), hit("https://en.example/2", 2)]

    found = merged(own, english, 4)

    assert [(h.url, h.rank) for h in found] == [
        ("https://ar.example/1", 1),
        ("https://shared.example/", 2),
        ("https://en.example/2", 3),
        ("https://ar.example/3", 4),
    ]
