"""Domain lists: which hosts a list covers, how entries are read, and how search hits are
filtered and counted."""

import pytest

from verification.pipeline.domains import (
    BLOCKED,
    NOT_ALLOWED,
    DomainRules,
    InvalidDomain,
    covers,
    filter_hits,
    parse_domain,
    parse_domain_list,
    search_depth,
    split_domain_text,
)
from verification.pipeline.types import SearchHit


@pytest.mark.parametrize(
    ("domain", "host", "expected"),
    [
        ("example.com", "example.com", True),
        ("example.com", "news.example.com", True),
        ("example.com", "a.b.example.com", True),
        ("example.com", "badexample.com", False),
        ("example.com", "example.com.evil.org", False),
        ("news.example.com", "example.com", False),
        ("com", "example.com", True),
    ],
)
def test_a_domain_covers_itself_and_its_subdomains_only(domain, host, expected):
    assert covers(domain, host) is expected


@pytest.mark.parametrize(
    ("url", "refusal"),
    [
        ("https://example.com/a", BLOCKED),
        ("https://NEWS.Example.COM/a", BLOCKED),
        ("https://www.example.com/a", BLOCKED),
        ("https://example.com./a", BLOCKED),
        ("http://example.com:8080/a", BLOCKED),
        ("https://badexample.com/a", None),
        ("https://example.org/a", None),
    ],
)
def test_blocked_hosts_are_matched_case_insensitively_without_www_port_or_trailing_dot(url, refusal):
    assert DomainRules.of(blocked=["Example.com."]).refusal(url) == refusal


def test_with_an_allow_list_only_its_domains_and_subdomains_pass():
    rules = DomainRules.of(allowed=["wikipedia.org", "nih.gov"])

    assert rules.refusal("https://en.wikipedia.org/wiki/X") is None
    assert rules.refusal("https://www.ncbi.nlm.nih.gov/pmc/1") is None
    assert rules.refusal("https://example.com/") == NOT_ALLOWED
    assert rules.refusal("https://fakewikipedia.org/") == NOT_ALLOWED


def test_blocking_wins_over_allowing():
    rules = DomainRules.of(allowed=["wikipedia.org"], blocked=["de.wikipedia.org"])

    assert rules.refusal("https://de.wikipedia.org/wiki/X") == BLOCKED
    assert rules.refusal("https://en.wikipedia.org/wiki/X") is None


def test_internationalised_names_match_in_either_spelling():
    rules = DomainRules.of(blocked=["bücher.example"])

    assert rules.refusal("https://xn--bcher-kva.example/") == BLOCKED
    assert rules.refusal("https://shop.bücher.example/") == BLOCKED


def test_ip_addresses_match_exactly():
    rules = DomainRules.of(blocked=["127.0.0.1"])

    assert rules.refusal("http://127.0.0.1:8000/page") == BLOCKED
    assert rules.refusal("http://127.0.0.10/page") is None


def test_no_lists_refuse_nothing_and_are_falsy():
    rules = DomainRules.of()

    assert not rules
    assert rules.refusal("https://example.com/") is None


def test_entries_that_are_not_domains_are_dropped_from_configured_lists_never_matched_loosely():
    rules = DomainRules.of(blocked=["not a domain", "", "example.com"])

    assert rules.blocked == ("example.com",)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("example.com", "example.com"),
        ("  WWW.Example.COM. ", "example.com"),
        ("https://news.example.com/some/article?x=1", "news.example.com"),
        ("localhost", "localhost"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("[::1]", "::1"),
    ],
)
def test_an_entry_is_read_as_its_canonical_host(entry, expected):
    assert parse_domain(entry) == expected


@pytest.mark.parametrize(
    "entry",
    ["not a domain", "exa_mple.com", "-example.com", "example-.com", "a..b", "http://", "x" * 64 + ".com", "é@x.com"],
)
def test_an_entry_that_is_not_a_domain_is_refused_with_its_text(entry):
    with pytest.raises(InvalidDomain, match="is not a domain"):
        parse_domain(entry)


def test_a_list_keeps_order_and_drops_repeats_and_blanks():
    assert parse_domain_list(["b.com", " ", "a.com", "www.b.com"]) == ["b.com", "a.com"]


def test_typed_text_splits_on_commas_spaces_and_new_lines():
    assert split_domain_text("a.com, b.com\nc.com  d.com,,") == ["a.com", "b.com", "c.com", "d.com"]


def hits(*urls):
    return [SearchHit(url=url, title=f"t{i}", snippet="", rank=i) for i, url in enumerate(urls, start=1)]


def test_filtering_drops_refused_hits_ranks_the_rest_again_and_counts_each_refusal():
    rules = DomainRules.of(blocked=["spam.com"], allowed=["spam.com", "good.org"])
    found = hits("https://spam.com/1", "https://other.net/2", "https://good.org/3", "https://x.good.org/4")

    kept, left_out = filter_hits(found, rules, top_k=5)

    assert [(h.url, h.rank, h.title) for h in kept] == [
        ("https://good.org/3", 1, "t3"),
        ("https://x.good.org/4", 2, "t4"),
    ]
    assert left_out == {BLOCKED: 1, NOT_ALLOWED: 1}


def test_filtering_keeps_at_most_top_k_hits():
    kept, left_out = filter_hits(hits("https://a.com/1", "https://b.com/2", "https://c.com/3"), DomainRules.of(), 2)

    assert [h.url for h in kept] == ["https://a.com/1", "https://b.com/2"]
    assert not left_out


def test_a_run_with_lists_asks_the_search_for_more_results_to_fill_its_top_k():
    assert search_depth(5, DomainRules.of()) == 5
    assert search_depth(5, DomainRules.of(blocked=["a.com"])) == 10
    assert search_depth(10, DomainRules.of(blocked=["a.com"])) == 20
