"""Wikipedia through the MediaWiki Action API, keyless: the search as a generator of pages,
each with its URL (prop=info, inprop=url), so the API itself says where a page lives.
Errors come with HTTP 200 as {"error": {"code", "info"}}.

A text in another language is searched in that language's Wikipedia (`edition`): the English
one's articles rarely hold a German query's words."""

import re
from urllib.parse import urlsplit, urlunsplit

from verification.pipeline import languages
from verification.pipeline.types import SearchHit, StepError

from .http import HttpProvider, json_object, send

# Wikimedia asks API clients to say who they are; generic library agents get blocked.
USER_AGENT = "factsite/0.1 (fact verification of AI-written text; MediaWiki API search) python-requests"
# Search results per request for clients without the higher "apihighlimits" right.
MAX_LIMIT = 50


class WikipediaSearch(HttpProvider):
    name, label = "wikipedia", "Wikipedia"

    def search(self, query: str, num: int, *, language: str | None = None) -> list[SearchHit]:
        params = {
            "action": "query",
            "format": "json",
            "formatversion": "2",
            "generator": "search",
            "gsrsearch": query,
            "gsrlimit": min(num, MAX_LIMIT),
            "gsrnamespace": "0",
            "prop": "info",
            "inprop": "url",
        }
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        endpoint = edition(self.endpoint, language)
        response = send(self.session, self.label, "GET", endpoint, params=params, headers=headers, timeout=self.timeout)
        if response.status_code != 200:
            raise StepError(f"Wikipedia: the API answered HTTP {response.status_code}")
        data = json_object(response, self.label)
        if isinstance(data.get("error"), dict):
            error = data["error"]
            raise StepError(f"Wikipedia: the API refused the search ({error.get('code')}: {error.get('info')})")
        return _hits(data.get("query") or {}, self.label, self.name)


# Wikipedia's subdomains where they are not the ISO 639-1 code (Bokmål is no.wikipedia.org).
_EDITIONS = {"nb": "no"}
_WIKIPEDIA_HOST = re.compile(r"^[a-z][a-z-]*\.(?:m\.)?wikipedia\.org$")


def edition(endpoint: str, language: str | None) -> str:
    """The API of the Wikipedia in `language`: a *.wikipedia.org address gets that edition's
    subdomain, and an address with "{lang}" in it (a mirror of several editions) gets the code
    there; any other address, or no known language, is used as it is ("{lang}" as "en")."""
    found = languages.language(language)
    code = _EDITIONS.get(found.code, found.code) if found else ""
    if "{lang}" in endpoint:
        return endpoint.replace("{lang}", code or "en")
    parts = urlsplit(endpoint)
    if not code or not _WIKIPEDIA_HOST.match(parts.hostname or ""):
        return endpoint
    host = f"{code}.wikipedia.org" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=host))


def _hits(query: dict, label: str, provider: str) -> list[SearchHit]:
    """Pages come in page-id order, not in rank order: `index` is the search rank."""
    pages = query.get("pages") if isinstance(query, dict) else None
    if pages is None:
        return []
    if not isinstance(pages, list):
        raise StepError(f"{label}: the answer is not the JSON its API sends (its pages are not a list)")
    found = [page for page in pages if isinstance(page, dict) and page.get("fullurl")]
    found.sort(key=lambda page: page["index"] if isinstance(page.get("index"), int) else float("inf"))
    return [
        SearchHit(
            url=str(page["fullurl"]), title=str(page.get("title") or ""), snippet="", rank=rank, provider=provider
        )
        for rank, page in enumerate(found, start=1)
    ]
