"""Search APIs on 127.0.0.1 besides Serper's (tests/fakes.py), each speaking its provider's
real protocol: Brave's web search, Tavily, a SearXNG instance and the MediaWiki Action API.
Like FakeSerper, each ranks the pages of the given sites by the words they share with the
query. Each records what it was sent, so tests can assert the request's shape."""

import json
import re
import threading
from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

from tests.fakes import LoopbackServer, _Handler, content_words


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: dict


def ranked_pages(sites, query: str, num: int) -> list[tuple[str, object]]:
    """(url, page) of the searchable pages sharing words with the query, most shared first."""
    words = content_words(query)
    scored = []
    for site in sites:
        for path, page in site.pages.items():
            overlap = len(words & content_words(page.title + " " + page.body))
            if overlap and page.searchable:
                scored.append((-overlap, site.url + path, page))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [(url, page) for _, url, page in scored[:num]]


class _ApiHandler(_Handler):
    def _receive(self, method: str) -> None:
        server: FakeSearchApi = self.owner
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        received = Received(
            method=method,
            path=parts.path,
            params={name: values[-1] for name, values in parse_qs(parts.query).items()},
            headers=dict(self.headers.items()),
            body=json.loads(raw) if raw else {},
        )
        with server.lock:
            server.received.append(received)
        if server.fail_status:
            return self._send(server.fail_status, json.dumps(server.fail_body).encode(), server.fail_content_type)
        status, payload = server.answer(received)
        self._json(status, payload)

    def do_GET(self) -> None:
        self._receive("GET")

    def do_POST(self) -> None:
        self._receive("POST")


@dataclass
class FakeSearchApi(LoopbackServer):
    """`fail_status` (with `fail_body`) answers every request with that error, as the real API
    words it."""

    sites: list = field(default_factory=list)
    api_key: str = "test-key"
    fail_status: int = 0
    fail_body: dict = field(default_factory=dict)
    fail_content_type: str = "application/json"

    def __post_init__(self) -> None:
        LoopbackServer.__init__(self, _ApiHandler)
        self.received: list[Received] = []
        self.lock = threading.Lock()

    def answer(self, request: Received) -> tuple[int, dict]:
        raise NotImplementedError


@dataclass
class FakeBrave(FakeSearchApi):
    """GET /res/v1/web/search?q=&count= with X-Subscription-Token."""

    INVALID_TOKEN: ClassVar[dict] = {
        "type": "ErrorResponse",
        "error": {"id": "x", "status": 422, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The token is invalid."},
    }

    def answer(self, request: Received) -> tuple[int, dict]:
        if request.path != "/res/v1/web/search":
            return 404, {"type": "ErrorResponse", "error": {"status": 404, "code": "NOT_FOUND"}}
        if request.headers.get("X-Subscription-Token") != self.api_key:
            return 422, self.INVALID_TOKEN
        found = ranked_pages(self.sites, request.params["q"], int(request.params.get("count", 20)))
        payload = {"type": "search", "query": {"original": request.params["q"]}}
        if found:  # Brave leaves the "web" section out when it found nothing
            results = [
                {"type": "search_result", "title": page.title, "url": url, "description": page.body[:150]}
                for url, page in found
            ]
            payload["web"] = {"type": "search", "results": results}
        return 200, payload


@dataclass
class FakeTavily(FakeSearchApi):
    """POST /search with `Authorization: Bearer <key>` and {"query", "max_results"}."""

    def answer(self, request: Received) -> tuple[int, dict]:
        if request.path != "/search":
            return 404, {"detail": "Not Found"}
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}
        found = ranked_pages(self.sites, request.body["query"], int(request.body.get("max_results", 5)))
        results = [
            {"title": page.title, "url": url, "content": page.body[:150], "score": 0.9, "raw_content": None}
            for url, page in found
        ]
        return 200, {"query": request.body["query"], "answer": None, "images": [], "results": results}


@dataclass
class FakeSearxng(FakeSearchApi):
    """GET /search?q=&format=json; `json_format=False` is an instance whose settings leave json
    out of search.formats (it answers 403)."""

    json_format: bool = True

    def answer(self, request: Received) -> tuple[int, dict]:
        if request.path != "/search":
            return 404, {}
        if request.params.get("format") != "json" or not self.json_format:
            return 403, {}
        found = ranked_pages(self.sites, request.params["q"], 20)
        results = [
            {"url": url, "title": page.title, "content": page.body[:150], "engine": "fake", "category": "general"}
            for url, page in found
        ]
        return 200, {"query": request.params["q"], "number_of_results": len(results), "results": results}


@dataclass
class FakeWikipedia(FakeSearchApi):
    """The MediaWiki Action API at /w/api.php: action=query with generator=search and
    prop=info&inprop=url, formatversion=2. Like the real one it lists the pages in page-id
    order, with their search rank in `index`, and errors come with HTTP 200. Editions are
    served as a mirror of several editions serves them, under /<code>/w/api.php (WIKIPEDIA_BASE_URL with
    "{lang}"): `received` tells which edition was asked."""

    def answer(self, request: Received) -> tuple[int, dict]:
        if not re.fullmatch(r"(?:/[a-z]{2,3})?/w/api\.php", request.path):
            return 404, {}
        if request.headers.get("User-Agent", "").startswith("python-requests"):
            return 403, {"error": {"code": "blocked", "info": "Please set a user-agent and respect our robot policy."}}
        params = request.params
        if params.get("action") != "query" or params.get("generator") != "search" or not params.get("gsrsearch"):
            return 200, {"error": {"code": "badvalue", "info": "Unrecognized value for parameter."}}
        found = ranked_pages(self.sites, params["gsrsearch"], int(params.get("gsrlimit", 10)))
        if not found:
            return 200, {"batchcomplete": True}
        pages = [
            {
                # Page ids run against the rank, so page-id order is not rank order.
                "pageid": 1000 - rank,
                "ns": 0,
                "title": page.title,
                "index": rank,
                "contentmodel": "wikitext",
                "fullurl": url,
                "canonicalurl": url,
                "editurl": url + "?action=edit",
            }
            for rank, (url, page) in enumerate(found, start=1)
        ]
        pages.sort(key=lambda page: page["pageid"])
        return 200, {"batchcomplete": True, "query": {"pages": pages}}
