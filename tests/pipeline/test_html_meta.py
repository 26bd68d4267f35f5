import json
from datetime import date

import pytest
import trafilatura

from verification.pipeline.html_meta import description, page_title, published_date

BODY = "<body><article><p>The Eiffel Tower was completed in 1889.</p></article></body>"


def tree(head: str, body: str = BODY):
    return trafilatura.load_html(f"<!doctype html><html><head>{head}</head>{body}</html>")


def json_ld(data: dict) -> str:
    return f'<script type="application/ld+json">{json.dumps(data)}</script>'


# --- titles: one fixture per way the old title went wrong


def test_og_title_wins_over_a_title_with_the_site_name():
    head = (
        "<title>Tower to close for repairs | City News – Latest headlines</title>"
        '<meta property="og:title" content="Tower to close for repairs">'
        '<meta property="og:site_name" content="City News">'
    )

    assert page_title(tree(head)) == "Tower to close for repairs"


def test_a_page_with_only_og_title_has_that_title():
    assert page_title(tree('<meta property="og:title" content="Only the og title">')) == "Only the og title"


def test_twitter_title_is_used_when_there_is_no_og_title():
    head = '<title>Site - Section - Page</title><meta name="twitter:title" content="The real headline">'

    assert page_title(tree(head)) == "The real headline"


def test_the_json_ld_headline_comes_first_however_nested():
    graph = {
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "Organization", "name": "City News"},
            {"@type": "BreadcrumbList", "itemListElement": [{"position": 1, "name": "Home"}]},
            {"@type": "NewsArticle", "headline": "Tower to close for repairs in May"},
        ],
    }
    head = json_ld(graph) + '<meta property="og:title" content="Tower closes"><title>Tower | City News</title>'

    assert page_title(tree(head)) == "Tower to close for repairs in May"


def test_broken_json_ld_is_passed_over():
    head = '<script type="application/ld+json">{"headline": </script><meta property="og:title" content="Fine">'

    assert page_title(tree(head)) == "Fine"


def test_a_title_is_kept_whole_with_its_dash():
    # Cutting at " - " to drop a site name would leave "COVID-19" here.
    assert page_title(tree("<title>COVID-19 - what we know so far</title>")) == "COVID-19 - what we know so far"


def test_a_meta_title_that_is_only_the_site_name_is_passed_over():
    head = (
        '<meta property="og:title" content="City News"><meta property="og:site_name" content="City News">'
        "<title>Tower to close for repairs - City News</title>"
    )

    assert page_title(tree(head)) == "Tower to close for repairs - City News"


@pytest.mark.parametrize("generic", ["Home", "home page", " Untitled "])
def test_a_generic_meta_title_is_passed_over(generic):
    head = f'<meta property="og:title" content="{generic}"><title>The real page</title>'

    assert page_title(tree(head)) == "The real page"


def test_a_page_without_title_is_known_by_its_first_heading():
    body = "<body><nav>Home › News › Tower</nav><h1> Tower to\n close </h1><h1>Second</h1><p>Text.</p></body>"

    assert page_title(tree("", body)) == "Tower to close"


def test_a_title_repeated_in_meta_h1_and_breadcrumb_comes_out_once_and_clean():
    head = (
        '<meta property="og:title" content="Tower to close for repairs">'
        '<meta name="twitter:title" content="Tower to close for repairs"><title>Tower to close for repairs</title>'
    )
    body = (
        '<body><nav class="breadcrumbs">Home › Local › Tower to close for repairs</nav>'
        "<h1>Tower to close for repairs</h1><p>The tower closes in May.</p></body>"
    )

    assert page_title(tree(head, body)) == "Tower to close for repairs"


def test_whitespace_and_entities_in_a_title_are_tidied():
    assert page_title(tree("<title>\n  Caf&eacute;   &amp; tower\t</title>")) == "Café & tower"


def test_a_page_with_no_title_anywhere_has_none():
    assert page_title(tree("", "<body><p>Just text.</p></body>")) == ""


# --- descriptions


def test_the_description_prefers_og_description():
    head = '<meta name="description" content="Plain."><meta property="og:description" content=" Shared  text. ">'

    assert description(tree(head)) == "Shared text."


def test_a_page_without_description_has_none():
    assert description(tree("<title>T</title>")) == ""


# --- publication dates


@pytest.mark.parametrize(
    "head",
    [
        '<meta property="article:published_time" content="2014-03-02T10:00:00+00:00">',
        '<meta name="date" content="2014-03-02">',
        json_ld({"@context": "https://schema.org", "@type": "Article", "datePublished": "2014-03-02"}),
    ],
    ids=["article-published-time", "meta-date", "json-ld"],
)
def test_the_published_date_is_read_from_meta_tags_and_json_ld(head):
    assert published_date(tree(head)) == date(2014, 3, 2)


def test_the_original_date_wins_over_the_last_modified_one():
    head = (
        '<meta property="article:published_time" content="2014-03-02">'
        '<meta property="article:modified_time" content="2023-11-20">'
    )

    assert published_date(tree(head)) == date(2014, 3, 2)


def test_a_page_that_states_no_date_has_none():
    assert published_date(tree("<title>Undated</title>")) is None
