import pytest

from verification.pipeline.search import search_claim, second_query
from verification.pipeline.types import SearchHit


class FakeProvider:
    """Returns the given URLs as hits ranked 1..n, and records what it was asked."""

    def __init__(self, urls: list[str]):
        self.urls = urls
        self.calls: list[tuple[str, int]] = []

    def search(self, query: str, num: int) -> list[SearchHit]:
        self.calls.append((query, num))
        return [
            SearchHit(url=url, title=f"title {i}", snippet=f"snippet {i}", rank=i)
            for i, url in enumerate(self.urls, start=1)
        ]


def urls(hits: list[SearchHit]) -> list[str]:
    return [hit.url for hit in hits]


def test_it_asks_the_provider_for_top_k_results_of_the_query():
    provider = FakeProvider(["https://a.example/1"])

    search_claim(provider, "eiffel tower 1889", top_k=5)

    assert provider.calls == [("eiffel tower 1889", 5)]


def test_it_keeps_the_provider_order_title_and_snippet():
    provider = FakeProvider(["https://a.example/1", "https://b.example/2"])

    assert search_claim(provider, "q", top_k=5) == [
        SearchHit("https://a.example/1", "title 1", "snippet 1", 1),
        SearchHit("https://b.example/2", "title 2", "snippet 2", 2),
    ]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            [
                "https://a.example/page#intro",
                "https://a.example/page",
                "https://a.example/page#end",
            ],
            ["https://a.example/page"],
        ),
        (
            ["https://a.example/page", "https://a.example/page#intro"],
            ["https://a.example/page"],
        ),
        (
            ["  https://a.example/page \n", "https://a.example/page"],
            ["https://a.example/page"],
        ),
        (
            ["https://a.example/page?id=1", "https://a.example/page?id=2"],
            ["https://a.example/page?id=1", "https://a.example/page?id=2"],
        ),
    ],
    ids=["fragments", "fragment-after-plain", "whitespace", "queries-differ"],
)
def test_it_keeps_one_hit_per_page(given, expected):
    assert urls(search_claim(FakeProvider(given), "q", top_k=10)) == expected


@pytest.mark.parametrize(
    "url",
    [
        "ftp://a.example/file.txt",
        "mailto:someone@a.example",
        "javascript:alert(1)",
        "/relative/path",
        "a.example/no-scheme",
        "file:///etc/passwd",
        "",
    ],
)
def test_it_drops_urls_that_are_not_http(url):
    provider = FakeProvider([url, "http://b.example/ok"])

    assert urls(search_claim(provider, "q", top_k=10)) == ["http://b.example/ok"]


def test_it_renumbers_ranks_after_dropping_hits():
    provider = FakeProvider(
        [
            "ftp://a.example/x",
            "https://b.example/1",
            "https://b.example/1#dup",
            "https://c.example/2",
        ]
    )

    hits = search_claim(provider, "q", top_k=10)

    assert [(hit.url, hit.rank) for hit in hits] == [
        ("https://b.example/1", 1),
        ("https://c.example/2", 2),
    ]
    assert [hit.title for hit in hits] == ["title 2", "title 4"]


def test_it_stops_at_top_k():
    provider = FakeProvider([f"https://a.example/{i}" for i in range(10)])

    hits = search_claim(provider, "q", top_k=3)

    assert urls(hits) == ["https://a.example/0", "https://a.example/1", "https://a.example/2"]
    assert [hit.rank for hit in hits] == [1, 2, 3]


def test_it_returns_nothing_when_the_provider_finds_nothing():
    assert search_claim(FakeProvider([]), "q", top_k=3) == []


@pytest.mark.parametrize(
    ("claim", "query", "expected"),
    [
        pytest.param(
            "The Eiffel Tower was completed in 1889.",
            "eiffel tower completion year",
            "The Eiffel Tower was completed in 1889.",
            id="the-claim-when-the-query-was-other-words",
        ),
        pytest.param(
            "The Eiffel Tower was completed in 1889.",
            "The Eiffel Tower was completed in 1889.",
            "Eiffel Tower completed 1889",
            id="its-key-words-when-the-query-was-the-claim",
        ),
        pytest.param(
            "The  Eiffel Tower was completed in 1889",
            "the eiffel tower was completed in 1889.",
            "Eiffel Tower completed 1889",
            id="the-same-words-in-other-case-and-spacing-are-the-same-query",
        ),
        pytest.param("Eiffel Tower 1889", "eiffel tower 1889", "", id="nothing-when-both-were-asked-already"),
        pytest.param("x" * 300, "y", "x" * 200, id="as-long-as-a-query-may-be"),
    ],
)
def test_a_second_query_asks_what_the_first_did_not(claim, query, expected):
    assert second_query(claim, query) == expected
