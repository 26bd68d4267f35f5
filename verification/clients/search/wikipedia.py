"""Wikipedia through the MediaWiki Action API, keyless: the search as a generator of pages,
each with its URL (prop=info, inprop=url), so the API itself says where a page lives.
Errors come with HTTP 200 as {"error": {"code", "info"}}."""

from verification.pipeline.types import SearchHit, StepError

from .http import HttpProvider, json_object, send

# Wikimedia asks API clients to say who they are; generic library agents get blocked.
USER_AGENT = "factsite/0.1 (fact verification of AI-written text; MediaWiki API search) python-requests"
# Search results per request for clients without the higher "apihighlimits" right.
MAX_LIMIT = 50


class WikipediaSearch(HttpProvider):
    name, label = "wikipedia", "Wikipedia"

    def search(self, query: str, num: int) -> list[SearchHit]:
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
        response = send(
            self.session, self.label, "GET", self.endpoint, params=params, headers=headers, timeout=self.timeout
        )
        if response.status_code != 200:
            raise StepError(f"Wikipedia: the API answered HTTP {response.status_code}")
        data = json_object(response, self.label)
        if isinstance(data.get("error"), dict):
            error = data["error"]
            raise StepError(f"Wikipedia: the API refused the search ({error.get('code')}: {error.get('info')})")
        return _hits(data.get("query") or {}, self.label, self.name)


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
