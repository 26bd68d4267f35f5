"""SerperSearch over real HTTP against search servers on 127.0.0.1: FakeSerper where a small
search engine is wanted, a scripted server where a test needs a given sequence of answers."""

import json
import socket
import threading
import time
from email.message import Message
from http.server import BaseHTTPRequestHandler

import pytest

from tests.fakes import FakePage, FakeSerper, FakeSite, LoopbackServer
from verification.clients.search import SerperSearch, retrying_session
from verification.pipeline.types import SearchHit, StepError

RESULTS = {
    "organic": [
        {"title": "Eiffel Tower", "link": "https://wiki.example/eiffel", "snippet": "A tower."},
        {"title": "Paris", "link": "https://news.example/paris", "snippet": "A city."},
    ]
}


class _ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: "ScriptedSearch"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        status, data, delay = self.owner.next_reply(self.path, self.headers, json.loads(body))
        time.sleep(delay)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.owner.answered.set()


class ScriptedSearch(LoopbackServer):
    """Answers POSTs with `replies` (status, body, delay) in order, the last one repeating,
    recording each request's path, headers and JSON body."""

    def __init__(self, replies: list[tuple[int, bytes, float]]) -> None:
        self.replies = replies
        self.requests: list[tuple[str, Message, dict]] = []
        self.answered = threading.Event()  # a reply was written
        self._lock = threading.Lock()
        super().__init__(_ScriptedHandler)
        self.start()

    def next_reply(self, path: str, headers: Message, body: dict) -> tuple[int, bytes, float]:
        with self._lock:
            self.requests.append((path, headers, body))
            return self.replies[min(len(self.requests), len(self.replies)) - 1]


@pytest.fixture
def scripted():
    servers = []

    def start(*replies) -> ScriptedSearch:
        server = ScriptedSearch([_reply(reply) for reply in replies])
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _reply(reply: tuple) -> tuple[int, bytes, float]:
    """(status, JSON payload or raw bytes[, delay in seconds])"""
    status, payload, *delay = reply
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return status, body, delay[0] if delay else 0.0


def searcher(url: str, *, api_key="test-key", session=None, timeout=2.0) -> SerperSearch:
    return SerperSearch(api_key=api_key, base_url=url, timeout=timeout, session=session)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_it_sends_the_key_and_the_query(scripted):
    server = scripted((200, RESULTS))

    searcher(server.url + "/", api_key="secret-key").search("eiffel tower height", 7)

    [(path, headers, body)] = server.requests
    assert path == "/search"
    assert headers["X-API-KEY"] == "secret-key"
    assert body == {"q": "eiffel tower height", "num": 7}


def test_it_maps_organic_results_to_hits_in_rank_order(scripted):
    server = scripted((200, RESULTS))

    hits = searcher(server.url).search("eiffel tower", 10)

    assert hits == [
        SearchHit("https://wiki.example/eiffel", "Eiffel Tower", "A tower.", rank=1, provider="serper"),
        SearchHit("https://news.example/paris", "Paris", "A city.", rank=2, provider="serper"),
    ]


def test_it_finds_pages_through_fake_serper():
    site = FakeSite(
        pages={
            "/eiffel": FakePage("Eiffel Tower", "The Eiffel Tower is in Paris."),
            "/bread": FakePage("Bread", "Flour, water and salt."),
        }
    ).start()
    serper = FakeSerper(sites=[site]).start()
    try:
        hits = SerperSearch(api_key=serper.api_key, base_url=serper.url, timeout=2).search("eiffel tower paris", 5)
    finally:
        serper.stop()
        site.stop()

    assert [(hit.url, hit.title, hit.rank) for hit in hits] == [(site.url + "/eiffel", "Eiffel Tower", 1)]
    assert hits[0].snippet.startswith("The Eiffel Tower")
    assert serper.queries == ["eiffel tower paris"]


def test_it_skips_results_without_a_link_and_fills_missing_text(scripted):
    organic = [
        {"title": "No link"},
        {"link": "https://a.example/"},
        "not a result",
        {"link": "https://b.example/", "title": None, "snippet": "B"},
    ]
    server = scripted((200, {"organic": organic}))

    hits = searcher(server.url).search("q", 10)

    assert [(hit.url, hit.title, hit.snippet) for hit in hits] == [
        ("https://a.example/", "", ""),
        ("https://b.example/", "", "B"),
    ]


@pytest.mark.parametrize("payload", [{}, {"organic": None}, {"organic": []}])
def test_it_returns_no_hits_when_there_are_no_results(scripted, payload):
    server = scripted((200, payload))

    assert searcher(server.url).search("q", 10) == []


def test_it_reports_a_refused_key_with_fake_serper():
    serper = FakeSerper(api_key="the-right-key").start()
    try:
        with pytest.raises(StepError) as error:
            SerperSearch(api_key="a-wrong-key", base_url=serper.url, timeout=2).search("q", 5)
    finally:
        serper.stop()

    assert str(error.value) == "Serper: the key was refused (HTTP 403): check SERPER_API_KEY"
    assert serper.queries == []


@pytest.mark.parametrize("status", [401, 403])
def test_it_reports_a_refused_key_without_retrying(scripted, status):
    server = scripted((status, {"message": "Unauthorized."}))

    with pytest.raises(StepError, match=f"HTTP {status}.*SERPER_API_KEY"):
        searcher(server.url).search("q", 5)

    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_it_retries_a_transient_failure_and_succeeds(scripted, status):
    server = scripted((status, {"message": "busy"}), (200, RESULTS))

    hits = searcher(server.url).search("eiffel tower", 10)

    assert [hit.url for hit in hits] == [
        "https://wiki.example/eiffel",
        "https://news.example/paris",
    ]
    assert [body for _, _, body in server.requests] == [{"q": "eiffel tower", "num": 10}] * 2


def test_it_reports_a_failure_that_outlasts_the_retries(scripted):
    server = scripted((500, {"message": "down"}))

    with pytest.raises(StepError) as error:
        searcher(server.url, session=retrying_session(total=1)).search("q", 5)

    assert str(error.value) == "Serper: the service answered HTTP 500 (down)"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "payload",
    [b"<html>Bad gateway</html>", b"[1, 2]", b"null", b'{"organic": 5}'],
)
def test_it_refuses_an_answer_that_is_not_serper_json(scripted, payload):
    server = scripted((200, payload))

    with pytest.raises(StepError) as error:
        searcher(server.url).search("q", 5)

    assert str(error.value).startswith("Serper: the answer is not the JSON its API sends")


def test_it_reports_a_service_that_cannot_be_reached():
    url = f"http://127.0.0.1:{closed_port()}"

    with pytest.raises(StepError, match=r"^Serper: could not reach the service \(ConnectionError\)$"):
        searcher(url, session=retrying_session(total=0)).search("q", 5)


def test_it_reports_a_service_that_does_not_answer_in_time(scripted):
    # The reply comes after 30 s: giving up is seen as the order of events (no reply written
    # yet), not as a duration a loaded machine could stretch.
    server = scripted((200, RESULTS, 30))

    with pytest.raises(StepError, match="Serper: could not reach the service"):
        searcher(server.url, session=retrying_session(total=0), timeout=0.2).search("q", 5)

    assert not server.answered.is_set()
