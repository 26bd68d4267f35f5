import pytest

from tests.pipeline.fake_model import FakeModel
from verification.pipeline.categorize import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_MANY,
    categorize_by_rules,
    categorize_many_with_llm,
    categorize_with_llm,
    parse_source_type,
    parse_source_types,
)
from verification.pipeline.types import MalformedAnswer, SourceType

T = SourceType


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("wikipedia.org", T.WIKI),
        ("en.wikipedia.org", T.WIKI),
        ("en.m.wikipedia.org", T.WIKI),
        ("reuters.com", T.NEWS),
        ("news.bbc.co.uk", T.NEWS),
        ("abcnews.go.com", T.NEWS),
        ("x.com", T.SOCIAL_MEDIA),
        ("old.reddit.com", T.SOCIAL_MEDIA),
        ("someone.blogspot.com", T.BLOG),
        ("nature.com", T.SCIENTIFIC_MEDICAL_ARTICLE),
        ("who.int", T.GOVERNMENT_WEBSITE),
    ],
)
def test_it_matches_a_domain_and_its_subdomains(host, expected):
    assert categorize_by_rules(host) == expected


@pytest.mark.parametrize(
    "host",
    [
        "cdc.gov",
        "data.cdc.gov",
        "whitehouse.gov",
        "army.mil",
        "gov.uk",
        "service.gov.uk",
        "canada.gc.ca",
        "mext.go.jp",
        "health.govt.nz",
        "ec.europa.eu",
    ],
)
def test_it_knows_government_suffixes(host):
    assert categorize_by_rules(host) == T.GOVERNMENT_WEBSITE


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("pubmed.ncbi.nlm.nih.gov", T.SCIENTIFIC_MEDICAL_ARTICLE),
        ("www.ncbi.nlm.nih.gov", T.SCIENTIFIC_MEDICAL_ARTICLE),
        ("medlineplus.gov", T.SCIENTIFIC_MEDICAL_ARTICLE),
        ("nih.gov", T.GOVERNMENT_WEBSITE),
        ("www.nih.gov", T.GOVERNMENT_WEBSITE),
        ("blog.wikipedia.org", T.WIKI),
    ],
)
def test_the_longest_matching_suffix_wins(host, expected):
    assert categorize_by_rules(host) == expected


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("WWW.Reuters.COM", T.NEWS),
        ("www.cdc.gov", T.GOVERNMENT_WEBSITE),
        ("reuters.com.", T.NEWS),
        ("example.gov:8080", T.GOVERNMENT_WEBSITE),
        ("en.wikipedia.org:443", T.WIKI),
    ],
)
def test_it_ignores_case_www_a_trailing_dot_and_the_port(host, expected):
    assert categorize_by_rules(host) == expected


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("blog.example.com", T.BLOG),
        ("blogs.example.com", T.BLOG),
        ("news.example.com", T.NEWS),
        ("wiki.example.org", T.WIKI),
        ("blog.com", T.BLOG),
    ],
)
def test_it_reads_a_hint_from_a_host_label(host, expected):
    assert categorize_by_rules(host) == expected


@pytest.mark.parametrize(
    "host",
    [
        "example.com",
        "wikipedia.org.evil.com",
        "notwikipedia.org",
        "gov.example.com",
        "mynews.com",
        "example.com.blog",
        "localhost",
        "127.0.0.1:8000",
        "",
    ],
)
def test_it_returns_none_for_a_host_it_does_not_know(host):
    assert categorize_by_rules(host) is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"source_type": "news"}, T.NEWS),
        ({"source_type": "scientific_medical_article"}, T.SCIENTIFIC_MEDICAL_ARTICLE),
        ("wiki", T.WIKI),
        (" News ", T.NEWS),
        ("Blog.", T.BLOG),
        ("social media", T.SOCIAL_MEDIA),
        ("Social-Media", T.SOCIAL_MEDIA),
        ("social/media", T.SOCIAL_MEDIA),
        ("Government website", T.GOVERNMENT_WEBSITE),
        ("other", T.OTHER),
        ("It is a government_website.", T.GOVERNMENT_WEBSITE),
    ],
)
def test_parse_source_type_accepts_variants(answer, expected):
    assert parse_source_type(answer) == expected


@pytest.mark.parametrize("answer", ["unknown", "government", "scientific", "", {"source_type": "shop"}])
def test_parse_source_type_rejects_an_unknown_category(answer):
    with pytest.raises(MalformedAnswer, match="not a category"):
        parse_source_type(answer)


@pytest.mark.parametrize("answer", [None, 3, {}, {"type": "news"}, {"source_type": 3}])
def test_parse_source_type_rejects_an_answer_of_the_wrong_shape(answer):
    with pytest.raises(MalformedAnswer, match="source_type"):
        parse_source_type(answer)


def test_categorize_with_llm_sends_the_host_and_title():
    model = FakeModel("blog")

    source_type = categorize_with_llm(model, "example.net", "My trip to Paris")

    assert source_type == T.BLOG
    assert model.calls == [
        {
            "system": SYSTEM_PROMPT,
            "user": "Host: example.net\nA page title on it: My trip to Paris",
            "schema_name": "source_type",
            "schema": None,
        }
    ]


def test_categorize_with_llm_leaves_out_a_missing_title():
    model = FakeModel("other")

    assert categorize_with_llm(model, "example.net") == T.OTHER
    assert model.calls[0]["user"] == "Host: example.net"


def test_categorize_with_llm_cuts_a_long_title():
    model = FakeModel("other")

    categorize_with_llm(model, "example.net", "t" * 500)

    assert model.calls[0]["user"] == "Host: example.net\nA page title on it: " + "t" * 200


def test_categorize_with_llm_raises_malformed_answer_so_the_model_can_ask_again():
    with pytest.raises(MalformedAnswer):
        categorize_with_llm(FakeModel("I am not sure."), "example.net")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("This is a personal blog rather than a news outlet", SourceType.BLOG),
        ("I would say government_website rather than news", SourceType.GOVERNMENT_WEBSITE),
    ],
)
def test_a_prose_answer_means_the_category_it_names_first(answer, expected):
    assert parse_source_type(answer) == expected


def test_categorize_many_sends_every_host_with_its_title_in_one_call():
    model = FakeModel("H1: blog\nH2: news")

    found = categorize_many_with_llm(model, [("trips.example", "My trip to Paris"), ("daily.example", "")])

    assert found == {"trips.example": T.BLOG, "daily.example": T.NEWS}
    assert model.calls == [
        {
            "system": SYSTEM_PROMPT_MANY,
            "user": "H1. Host: trips.example\nA page title on it: My trip to Paris\nH2. Host: daily.example",
            "schema_name": "source_types",
            "schema": None,
        }
    ]


LABELS = {"H1": "a.example", "H2": "b.example", "H3": "c.example"}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # the model's own order, and a lower-case label
        (
            {"types": [{"host": "h2", "source_type": "wiki"}, {"host": "H1", "source_type": "news"}]},
            {"a.example": T.NEWS, "b.example": T.WIKI},
        ),
        # plain lines as asked, reworded as models do; a line without a label is skipped
        (
            "H1: news\n**H2** - Wiki.\n3. H3: blog\nOverall these are mixed.",
            {"a.example": T.NEWS, "b.example": T.WIKI, "c.example": T.BLOG},
        ),
        # the host named instead of its label
        ({"types": [{"host": "c.example", "source_type": "blog"}]}, {"c.example": T.BLOG}),
        # a bare list; unknown labels, a second answer for a host and unusable entries are skipped
        (
            [
                {"host": "H1", "source_type": "wiki"},
                {"host": "H1", "source_type": "news"},
                {"host": "H9", "source_type": "news"},
                {"host": "H2", "source_type": "a cooking site?"},
                "H3: blog",
            ],
            {"a.example": T.WIKI},
        ),
    ],
)
def test_parse_source_types_keeps_what_it_can_use(answer, expected):
    assert parse_source_types(answer, LABELS) == expected


@pytest.mark.parametrize(
    "answer", [None, "news", "H7: news", {"types": []}, {"types": [{"host": "H7", "source_type": "news"}]}]
)
def test_parse_source_types_rejects_an_answer_that_types_no_host(answer):
    with pytest.raises(MalformedAnswer):
        parse_source_types(answer, LABELS)
