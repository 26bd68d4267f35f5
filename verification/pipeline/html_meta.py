"""What a web page says about itself: its title, publication date and description."""

import json
from collections.abc import Iterator
from datetime import date

import htmldate
from lxml.html import HtmlElement

# Meta titles in the order publishers mean them: the article's own headline first.
_META_TITLES = (
    "//meta[@property='og:title']/@content",
    "//meta[@name='twitter:title']/@content",
    "//meta[@property='twitter:title']/@content",
)
_DESCRIPTIONS = (
    "//meta[@property='og:description']/@content",
    "//meta[@name='description']/@content",
    "//meta[@name='twitter:description']/@content",
)
_GENERIC_TITLES = frozenset({"home", "homepage", "home page", "index", "untitled", "welcome"})


def page_title(tree: HtmlElement) -> str:
    """The title a reader knows the page by, as its publisher wrote it.

    The headline the publisher declares for sharing (JSON-LD `headline`, then `og:title`, then
    `twitter:title`) names the article and, unlike <title>, rarely carries the site's name or
    section. Failing those, <title> whole: cutting at " - " or " | " to drop a site name also cuts
    real titles ("COVID-19 - what we know"), and the host is shown next to the title anyway. A
    page with no title at all is known by its first heading. A declared title that is only the
    site's name (or "Home") says nothing about the page and is passed over."""
    site_name = _clean(_first(tree, "//meta[@property='og:site_name']/@content")).casefold()
    candidates = [
        *_json_ld_headlines(tree),
        *(_first(tree, path) for path in _META_TITLES),
        _first(tree, "//title/text()") if tree.find(".//title") is not None else "",
        " ".join(tree.xpath("string((//h1)[1])").split()),
    ]
    for candidate in map(_clean, candidates):
        if candidate and candidate.casefold() not in (site_name, *_GENERIC_TITLES):
            return candidate
    return ""


def description(tree: HtmlElement) -> str:
    return next((text for text in (_clean(_first(tree, path)) for path in _DESCRIPTIONS) if text), "")


def published_date(tree: HtmlElement) -> date | None:
    """When the page was first published, as it states it (meta tags, JSON-LD, <time>, the
    URL): htmldate's fast mode, and the original date rather than the last update, since a
    source's age is what tells a reader whether it may be out of date."""
    try:
        found = htmldate.find_date(tree, extensive_search=False, original_date=True)
    except Exception:  # a date it cannot parse is no date, never a failed page
        return None
    return date.fromisoformat(found) if found else None


def _first(tree: HtmlElement, path: str) -> str:
    found = tree.xpath(path)
    return str(found[0]) if found else ""


def _clean(text: str) -> str:
    return " ".join(text.split())


def _json_ld_headlines(tree: HtmlElement) -> Iterator[str]:
    for script in tree.xpath("//script[@type='application/ld+json']/text()"):
        try:
            data = json.loads(script)
        except ValueError:
            continue
        yield from _headlines(data)


def _headlines(data: object) -> Iterator[str]:
    """Every `headline` in a JSON-LD document, however nested (@graph, lists, mainEntity)."""
    if isinstance(data, list):
        for item in data:
            yield from _headlines(item)
    elif isinstance(data, dict):
        if isinstance(data.get("headline"), str):
            yield data["headline"]
        for value in data.values():
            if isinstance(value, dict | list):
                yield from _headlines(value)
