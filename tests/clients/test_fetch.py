"""PageFetcher against real HTTP servers on 127.0.0.1. Every server here is loopback, so a
fetcher with allow_private=False must refuse all of them; the tests that need a page to load
use allow_private=True."""

import pickle
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.fakes import CHALLENGE_PAGE, FakePage, FakeSite
from tests.pdfs import make_pdf
from verification.clients import fetch
from verification.clients.fetch import PageFetcher, is_public_address
from verification.pipeline.domains import BLOCKED, DomainRules
from verification.pipeline.refusals import CHALLENGE_ERROR, ERROR_PAGE_BYTES
from verification.pipeline.types import StepError

ARTICLE = FakePage("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris.")


class _QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def serve():
    """Starts a one-off server on 127.0.0.1 whose GET runs `respond(handler)`; returns its URL."""
    servers = []

    def start(respond) -> str:
        handler = type("Handler", (_QuietHandler,), {"do_GET": lambda self: respond(self)})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def sites():
    """Starts FakeSites from their pages; returns them started, stopped after the test."""
    started = []

    def start(pages: dict[str, FakePage], **options) -> FakeSite:
        site = FakeSite(pages=pages, **options).start()
        started.append(site)
        return site

    yield start
    for site in started:
        site.stop()


def fetcher(
    *, allow_private: bool = True, timeout: float = 2, max_bytes: int = 1_000_000, max_pdf_bytes: int | None = None
):
    return PageFetcher(timeout=timeout, max_bytes=max_bytes, allow_private=allow_private, max_pdf_bytes=max_pdf_bytes)


def send(handler, status: int, body: bytes, content_type: str | None = "text/html") -> None:
    handler.send_response(status)
    if content_type is not None:
        handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def listener():
    """A port on 127.0.0.1 that is open but never accepts: the kernel queues any connection
    made to it, so `connected(listener)` tells whether the fetcher connected at all."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.setblocking(False)
    yield sock
    sock.close()


def connected(sock: socket.socket) -> bool:
    try:
        sock.accept()[0].close()
    except BlockingIOError:
        return False
    return True


# --- which addresses count as public


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2001:4860:4860::8888", True),
        ("::ffff:8.8.8.8", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("100.64.0.1", False),
        ("169.254.169.254", False),
        ("0.0.0.0", False),
        ("255.255.255.255", False),
        ("224.0.0.1", False),
        ("239.255.255.250", False),
        ("::1", False),
        ("::", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:169.254.169.254", False),
        ("fc00::1", False),
        ("fe80::1%eth0", False),
        ("ff0e::1", False),
        ("64:ff9b::7f00:1", False),  # NAT64 for 127.0.0.1
        ("64:ff9b::a00:1", False),  # NAT64 for 10.0.0.1
        ("2002:7f00:1::", False),  # 6to4 for 127.0.0.1
        ("::127.0.0.1", False),  # IPv4-compatible
        ("64:ff9b::808:808", True),  # NAT64 for 8.8.8.8
    ],
)
def test_it_tells_public_addresses_from_the_rest(address, public):
    assert is_public_address(address) is public


# --- refusing the server's own network


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_it_refuses_a_private_address_without_sending_a_request(sites, host):
    site = sites({"/eiffel": ARTICLE})
    port = site.httpd.server_address[1]

    with pytest.raises(StepError) as error:
        fetcher(allow_private=False).fetch(f"http://{host}:{port}/eiffel")

    assert str(error.value) == (f"refused to fetch {host}: it resolves to a non-public address (127.0.0.1)")
    assert site.hits == {}


def test_an_open_and_a_closed_private_port_are_refused_alike(listener):
    open_port = listener.getsockname()[1]
    reasons = []

    for port in (open_port, closed_port()):
        with pytest.raises(StepError) as error:
            fetcher(allow_private=False).fetch(f"http://127.0.0.1:{port}/")
        reasons.append(str(error.value))

    assert reasons == ["refused to fetch 127.0.0.1: it resolves to a non-public address (127.0.0.1)"] * 2
    assert not connected(listener)


def test_it_refuses_a_name_that_resolves_to_a_private_address_without_connecting(listener):
    with pytest.raises(StepError) as error:
        fetcher(allow_private=False).fetch(f"http://localhost:{listener.getsockname()[1]}/")

    assert str(error.value).startswith("refused to fetch localhost: it resolves to a non-public address")
    assert not connected(listener)


def test_it_refuses_a_name_when_any_of_its_addresses_is_private(monkeypatch):
    def resolve(host, port, *args):
        assert host == "mixed.example"
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port)),
        ]

    def connect(*args, **kwargs):
        raise AssertionError(f"connected to {args[0]}")

    monkeypatch.setattr(fetch.socket, "getaddrinfo", resolve)
    monkeypatch.setattr(fetch, "create_connection", connect)

    with pytest.raises(StepError) as error:
        fetcher(allow_private=False).fetch("http://mixed.example/")

    assert str(error.value) == "refused to fetch mixed.example: it resolves to a non-public address (10.0.0.7)"


def test_it_connects_to_the_address_it_checked_without_asking_dns_again(sites, monkeypatch):
    # A rebinding name answers a public address to the check and a private one after it. Here
    # 127.0.0.1 plays the public address (tests reach nothing else) and 10.0.0.7 the private one.
    site = sites({"/eiffel": ARTICLE})
    real_getaddrinfo = socket.getaddrinfo
    lookups = []

    def rebinding(host, port, *args):
        if host != "rebind.example":
            return real_getaddrinfo(host, port, *args)
        lookups.append(host)
        address = "127.0.0.1" if len(lookups) == 1 else "10.0.0.7"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(fetch.socket, "getaddrinfo", rebinding)
    monkeypatch.setattr(fetch, "is_public_address", lambda address: address == "127.0.0.1")

    document = fetcher(allow_private=False).fetch(f"http://rebind.example:{site.httpd.server_address[1]}/eiffel")

    assert b"Eiffel Tower" in document.body
    assert lookups == ["rebind.example"]
    assert site.hits == {"/eiffel": 1}


def test_it_fetches_a_private_address_when_allowed(sites):
    site = sites({"/eiffel": ARTICLE})

    document = fetcher(allow_private=True).fetch(site.url + "/eiffel")

    assert document.url == document.final_url == site.url + "/eiffel"
    assert document.content_type == "text/html"
    assert document.charset == "utf-8"
    assert b"<title>Eiffel Tower</title>" in document.body
    assert site.hits == {"/eiffel": 1}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_it_refuses_a_redirect_to_a_private_address(sites, monkeypatch, host):
    # No public server can take part in a test, so the first address checked (the page that
    # redirects) is declared public and every later one keeps its real, private, verdict. What
    # this proves is that the check runs again for the redirect hop, not once on the URL asked for.
    checked = []

    def only_the_first_address_is_public(address: str) -> bool:
        checked.append(address)
        return len(checked) == 1

    monkeypatch.setattr(fetch, "is_public_address", only_the_first_address_is_public)
    internal = sites({"/secret": FakePage("Internal", "Credentials.")})
    target = f"http://{host}:{internal.httpd.server_address[1]}/secret"
    entry = sites({"/go": FakePage("", "", redirect_to=target)})

    with pytest.raises(StepError) as error:
        fetcher(allow_private=False).fetch(entry.url + "/go")

    assert str(error.value) == f"refused to fetch {host}: it resolves to a non-public address (127.0.0.1)"
    assert entry.hits == {"/go": 1}
    assert internal.hits == {}
    assert checked == ["127.0.0.1", "127.0.0.1"]


def test_it_follows_a_redirect_and_reports_where_it_ended(sites):
    target = sites({"/eiffel": ARTICLE})
    entry = sites({"/go": FakePage("", "", redirect_to=target.url + "/eiffel")})

    document = fetcher().fetch(entry.url + "/go")

    assert document.url == entry.url + "/go"
    assert document.final_url == target.url + "/eiffel"
    assert b"Eiffel Tower" in document.body


def test_it_stops_after_too_many_redirects(sites):
    site = sites({})
    site.pages["/loop"] = FakePage("", "", redirect_to=site.url + "/loop")

    with pytest.raises(StepError, match="redirected more than 5 times"):
        fetcher().fetch(site.url + "/loop")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/file.html"])
@pytest.mark.parametrize("allow_private", [True, False])
def test_it_fetches_only_http_and_https(url, allow_private):
    with pytest.raises(StepError, match="only http:// and https:// pages are fetched"):
        fetcher(allow_private=allow_private).fetch(url)


# --- what the page answers


@pytest.mark.parametrize(("path", "status"), [("/blocked", 403), ("/missing", 404)])
def test_it_reports_an_error_status(sites, path, status):
    site = sites({"/blocked": FakePage("Blocked", "No robots.", status=403)})

    with pytest.raises(StepError) as error:
        fetcher().fetch(site.url + path)

    assert str(error.value) == f"the page answered HTTP {status}"


@pytest.mark.parametrize(
    ("status", "transient"),
    [(403, False), (404, False), (410, False), (408, True), (429, True), (500, True), (503, True)],
)
def test_an_error_status_says_whether_a_retry_may_change_it(serve, status, transient):
    url = serve(lambda handler: send(handler, status, b"<h1>No</h1>", "text/html"))

    with pytest.raises(StepError) as error:
        fetcher().fetch(url + "/page")

    assert str(error.value) == f"the page answered HTTP {status}" and error.value.transient is transient


@pytest.mark.parametrize(("status", "transient"), [(503, True), (429, True), (403, False)])
def test_a_bot_challenge_sent_with_an_error_status_says_so(serve, status, transient):
    """Cloudflare, DDoS-Guard and Sucuri answer a scraper 503 with a challenge: a refusal, with its
    status, and a retry is let through as the status says (a challenge passes with time)."""
    url = serve(lambda handler: send(handler, status, CHALLENGE_PAGE, "text/html; charset=UTF-8"))

    with pytest.raises(StepError) as error:
        fetcher().fetch(url + "/page")

    assert str(error.value) == f"{CHALLENGE_ERROR} (HTTP {status})" and error.value.transient is transient


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (
            b"<html><head><title>503 Service Unavailable</title></head><body><h1>Service Unavailable</h1>",
            "text/html",
        ),
        (CHALLENGE_PAGE, "application/json"),  # not a web page: no challenge is looked for in it
        # A challenge only past the start the fetcher keeps of an error page is never seen.
        (b"<!--" + b"x" * ERROR_PAGE_BYTES + b"-->" + CHALLENGE_PAGE, "text/html"),
    ],
)
def test_any_other_error_page_is_the_servers_failure(serve, body, content_type):
    url = serve(lambda handler: send(handler, 503, body, content_type))

    with pytest.raises(StepError) as error:
        fetcher().fetch(url + "/page")

    assert str(error.value) == "the page answered HTTP 503" and error.value.transient is True


def test_an_error_page_that_stalls_is_still_its_status(serve):
    """Only the start of an error page is waited for, and not past the timeout: the status stays
    the failure, not the slowness of a body nobody reads."""

    release, rest_sent = threading.Event(), threading.Event()

    def respond(handler):
        handler.send_response(503)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        handler.wfile.write(b"<html><head><title>Service Unavailable</title>")
        handler.wfile.flush()
        release.wait(30)  # the rest of the body, held until the test has its answer
        rest_sent.set()

    url = serve(respond)

    with pytest.raises(StepError) as error:
        fetcher(timeout=0.3).fetch(url + "/stalls")
    gave_up_first = not rest_sent.is_set()
    release.set()

    assert str(error.value) == "the page answered HTTP 503" and gave_up_first


def test_refusals_are_permanent_and_a_server_that_cannot_be_reached_is_transient(sites, serve):
    site = sites({"/eiffel": ARTICLE})
    picture = serve(lambda handler: send(handler, 200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "image/png"))
    failures = {}
    for name, call in {
        "private": lambda: fetcher(allow_private=False).fetch(site.url + "/eiffel"),
        "not a page": lambda: fetcher().fetch(picture + "/picture"),
        "closed port": lambda: fetcher().fetch(f"http://127.0.0.1:{closed_port()}/"),
    }.items():
        with pytest.raises(StepError) as error:
            call()
        failures[name] = error.value.transient

    assert failures == {"private": False, "not a page": False, "closed port": True}


def test_a_step_error_keeps_its_kind_across_processes():
    """Pages are read in the CPU pool's processes: the error comes back pickled."""
    error = pickle.loads(pickle.dumps(StepError("the PDF has no text", transient=False)))

    assert str(error) == "the PDF has no text" and error.transient is False
    assert pickle.loads(pickle.dumps(StepError("timed out"))).transient is True


@pytest.mark.parametrize("content_type", ["image/png", "application/octet-stream", "application/zip"])
def test_it_refuses_a_document_that_is_not_a_web_page_or_a_pdf(serve, content_type):
    url = serve(lambda handler: send(handler, 200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, content_type))

    with pytest.raises(StepError) as error:
        fetcher().fetch(url + "/picture")

    assert str(error.value) == f"not a web page ({content_type})"


# --- PDFs


@pytest.mark.parametrize("header", ["application/pdf", "application/octet-stream", "text/html", None])
def test_it_fetches_a_pdf_by_its_type_or_by_its_first_bytes(serve, header):
    body = make_pdf([["The tower is 330 metres tall."]])
    url = serve(lambda handler: send(handler, 200, body, header))

    document = fetcher().fetch(url + "/paper")

    assert document.content_type == "application/pdf"
    assert document.body == body


def test_a_pdf_over_the_page_limit_is_read_whole_up_to_the_pdf_limit(serve):
    body = make_pdf([[f"Line {n} of a long report on the tower." for n in range(40)] for _ in range(30)])
    url = serve(lambda handler: send(handler, 200, body, "application/pdf"))

    document = fetcher(max_bytes=len(body) // 4, max_pdf_bytes=len(body)).fetch(url + "/report.pdf")

    assert document.body == body


@pytest.mark.parametrize("declares_length", [True, False])
def test_a_pdf_over_the_pdf_limit_is_refused_not_cut(serve, declares_length):
    body = b"%PDF-1.7\n" + b"0" * 300_000

    def respond(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/pdf")
        if declares_length:
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    url = serve(respond)

    with pytest.raises(StepError) as error:
        fetcher(max_bytes=50_000, max_pdf_bytes=200_000).fetch(url + "/big.pdf")

    assert str(error.value) == "the PDF is larger than 0.2 MB"


def test_it_asks_for_pdfs_too(serve):
    seen = {}

    def respond(handler):
        seen.update(handler.headers)
        send(handler, 200, b"<p>Hello</p>")

    fetcher().fetch(serve(respond) + "/")

    assert "application/pdf" in seen["Accept"]


@pytest.mark.parametrize(
    ("header", "content_type"),
    [
        ("text/html", "text/html"),
        ("TEXT/HTML; charset=utf-8", "text/html"),
        ("application/xhtml+xml", "application/xhtml+xml"),
        ("text/plain; charset=utf-8", "text/plain"),
        (None, "text/html"),
    ],
)
def test_it_accepts_web_pages_and_plain_text(serve, header, content_type):
    url = serve(lambda handler: send(handler, 200, b"<p>Hello</p>", header))

    document = fetcher().fetch(url + "/")

    assert document.content_type == content_type
    assert document.body == b"<p>Hello</p>"


@pytest.mark.parametrize(
    ("header", "charset"),
    [
        ("text/html; charset=windows-1252", "windows-1252"),
        ('text/html; charset="UTF-8"', "UTF-8"),
        ("text/html; charset=ISO-8859-1", "ISO-8859-1"),
        ("text/html", None),
    ],
)
def test_it_reports_the_charset_the_server_declared(sites, header, charset):
    site = sites({"/page": FakePage("Page", "Text.", content_type=header)})

    assert fetcher().fetch(site.url + "/page").charset == charset


def test_it_leaves_an_undeclared_charset_to_the_reader(serve):
    body = "<p>Café – “quoted” in cp1252</p>".encode("cp1252")
    url = serve(lambda handler: send(handler, 200, body, "text/html"))

    document = fetcher().fetch(url + "/")

    assert document.charset is None
    assert document.body == body


def test_it_identifies_itself_to_the_site(serve):
    seen = {}

    def respond(handler):
        seen.update(handler.headers)
        send(handler, 200, b"<p>Hello</p>")

    url = serve(respond)

    fetcher().fetch(url + "/")

    assert "factsite" in seen["User-Agent"]
    assert "text/html" in seen["Accept"]


# --- large, slow and absent servers


def test_it_keeps_only_the_first_max_bytes_of_a_large_page(serve):
    start = b"<p>" + bytes(range(256)) * 1000
    rest_sent = threading.Event()

    def respond(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(start) * 40))
        handler.end_headers()
        handler.wfile.write(start)
        handler.wfile.flush()
        # Far more than the cap, sent only after the fetcher would have timed out waiting:
        # reading past the cap turns into a timeout instead of a truncated page.
        time.sleep(3)
        handler.wfile.write(start * 39)
        rest_sent.set()

    url = serve(respond)

    document = fetcher(timeout=1, max_bytes=100_000).fetch(url + "/")

    assert document.body == start[:100_000]
    assert not rest_sent.is_set()


def test_it_gives_up_on_a_page_that_does_not_answer_in_time(serve):
    # The page answers only when the test lets it: giving up is seen as the order of events,
    # not as a duration a loaded machine could stretch.
    release, answered = threading.Event(), threading.Event()

    def respond(handler):
        release.wait(30)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.end_headers()
        handler.wfile.write(b"<html><body><p>late</p></body></html>")
        answered.set()

    url = serve(respond)
    try:
        with pytest.raises(StepError) as error:
            fetcher(timeout=0.2).fetch(url + "/slow")
        gave_up_before_the_answer = not answered.is_set()
    finally:
        release.set()

    assert str(error.value) == "the page did not answer within 0.2 s"
    assert gave_up_before_the_answer


def test_it_gives_up_on_a_page_that_trickles_in(serve):
    def respond(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        # Each chunk comes well within the read timeout, the whole page does not: it trickles
        # until the test has seen the fetcher give up (or the client hangs up), 30 s at most.
        try:
            for _ in range(600):
                if release.is_set():
                    break
                handler.wfile.write(b"400\r\n" + b"x" * 1024 + b"\r\n")
                handler.wfile.flush()
                time.sleep(0.05)
            handler.wfile.write(b"0\r\n\r\n")
            finished.set()
        except OSError:
            pass  # the fetcher hung up

    release, finished = threading.Event(), threading.Event()
    url = serve(respond)
    try:
        with pytest.raises(StepError, match="too slow to download"):
            fetcher(timeout=0.2).fetch(url + "/")
        gave_up_before_the_end = not finished.is_set()
    finally:
        release.set()

    assert gave_up_before_the_end


def test_it_reports_a_server_that_cannot_be_reached():
    with pytest.raises(StepError) as error:
        fetcher().fetch(f"http://127.0.0.1:{closed_port()}/")

    assert str(error.value) == "could not connect to the page's server"


@pytest.mark.parametrize("allow_private", [True, False], ids=["private-allowed", "public-only"])
def test_it_says_when_a_host_name_does_not_resolve(monkeypatch, allow_private):
    # No resolver is asked: the system's resolver answers as it does for a name that does not exist.
    def no_such_name(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)
    with pytest.raises(StepError) as error:
        fetcher(allow_private=allow_private).fetch("https://depot.invalid/yard")

    assert str(error.value) == "the page's host name does not resolve (no such domain)"


def test_a_page_that_stalls_mid_body_is_reported_as_too_slow(serve):
    def respond(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        handler.wfile.write(b"<p>start")
        handler.wfile.flush()
        time.sleep(1.5)

    url = serve(respond)

    with pytest.raises(StepError, match="did not answer within 0.3 s"):
        fetcher(timeout=0.3).fetch(url + "/stalls")


def test_a_pdf_with_a_content_length_that_is_not_a_number_is_still_read(serve):
    pdf = make_pdf([["The Eiffel Tower is in Paris."]])

    def respond(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/pdf")
        handler.send_header("Content-Length", "lots")
        handler.end_headers()
        handler.wfile.write(pdf)
        handler.wfile.flush()
        handler.close_connection = True

    url = serve(respond)

    document = fetcher(timeout=2).fetch(url + "/report.pdf")

    assert (document.content_type, document.body) == ("application/pdf", pdf)


# --- one reading of an address: the domain lists judge the host the fetcher contacts


@pytest.fixture
def counting(serve):
    """A server on 127.0.0.1 answering every path with a page; returns (its port, the paths it
    was asked for, whatever they were)."""

    def start(redirect_to: str = "") -> tuple[int, list[str]]:
        asked: list[str] = []

        def respond(handler) -> None:
            asked.append(handler.path)
            if redirect_to:
                handler.send_response(302)
                # As UTF-8 bytes, as servers send a non-ASCII Location (http.server writes latin-1).
                handler.send_header("Location", redirect_to.encode().decode("latin-1"))
                handler.send_header("Content-Length", "0")
                handler.end_headers()
            else:
                send(handler, 200, ARTICLE.html())

        return int(serve(respond).rsplit(":", 1)[1]), asked

    return start


@pytest.fixture
def test_names_resolve_to_loopback(monkeypatch):
    """Names under .test resolve to 127.0.0.1 (as /etc/hosts would have them), so an
    internationalised name can name a real server here; every other name resolves as usual."""
    resolve = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".test"):
            host = "127.0.0.1"
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def read_as_a_run_would(url: str, rules: DomainRules) -> str:
    """What a run does with a search hit: its domain lists first, then the fetch, with the lists
    asked again at every redirect. The refusal, or the fetch's error, or "read"."""
    refusal = rules.refusal(url)
    if refusal:
        return refusal
    try:
        fetcher().fetch(url, refuse=rules.reason)
    except StepError as error:
        return str(error)
    return "read"


@pytest.mark.parametrize(
    ("hit", "blocked", "outcome"),
    [
        # Python's urlsplit reads the host after the "@" (the other server), urllib3 and browsers
        # before the "\" (the blocked one): it was let through and sent to the blocked server.
        ("http://localhost:{blocked}\\@127.0.0.1:{other}/page", "localhost", "contains a backslash"),
        ("http://127.0.0.1:{other}\\@localhost:{blocked}/page", "localhost", "contains a backslash"),
        # User info before the host hides which host it is; every parser reads the last one.
        ("http://127.0.0.1:{other}@localhost:{blocked}/page", "localhost", "has a user name before its host"),
        ("http://localhost:{blocked}@127.0.0.1:{other}/page", "localhost", "has a user name before its host"),
        # Python drops tabs and line breaks inside the host; urllib3 keeps them.
        ("http://local\thost:{blocked}/page", "localhost", "contains a space, a tab, a line break"),
        ("http://local\nhost:{blocked}/page", "localhost", "contains a space, a tab, a line break"),
        ("http://localhost\r:{blocked}/page", "localhost", "contains a space, a tab, a line break"),
        # A percent-encoded host is the host a browser decodes it to.
        ("http://local%68ost:{blocked}/page", "localhost", BLOCKED),
        ("http://%6c%6f%63%61%6c%68%6f%73%74:{blocked}/page", "localhost", BLOCKED),
        # Internationalised names: the lists read straße as strasse (IDNA 2003), the fetcher as
        # xn--strae-oqa (UTS 46, as browsers do): a list naming either let the other through.
        ("http://straße.test:{blocked}/page", "xn--strae-oqa.test", BLOCKED),
        ("http://xn--strae-oqa.test:{blocked}/page", "straße.test", BLOCKED),
        ("http://ＳＴＲＡßＥ.test:{blocked}/page", "straße.test", BLOCKED),
    ],
)
def test_an_address_parsers_disagree_on_never_reaches_a_blocked_server(
    counting, test_names_resolve_to_loopback, hit, blocked, outcome
):
    blocked_port, blocked_asked = counting()
    other_port, other_asked = counting()
    url = hit.format(blocked=blocked_port, other=other_port)

    result = read_as_a_run_would(url, DomainRules.of(blocked=[blocked]))

    assert outcome in result
    assert blocked_asked == []
    if outcome != BLOCKED:  # refused before any connection: the other server was not asked either
        assert result.startswith("refused before connecting: the URL") and other_asked == []


def test_an_address_parsers_disagree_on_never_reaches_a_server_outside_the_allowed_list(counting):
    outside_port, outside_asked = counting()
    allowed_port, allowed_asked = counting()
    url = f"http://localhost:{outside_port}\\@127.0.0.1:{allowed_port}/page"

    result = read_as_a_run_would(url, DomainRules.of(allowed=["127.0.0.1"]))

    assert result.startswith("refused before connecting: the URL") and "backslash" in result
    assert outside_asked == [] and allowed_asked == []


@pytest.mark.parametrize(
    ("target", "outcome"),
    [
        ("http://localhost:{blocked}\\@127.0.0.1:{other}/page", "redirected to an address refused before connecting"),
        ("http://127.0.0.1:{other}@localhost:{blocked}/page", "redirected to an address refused before connecting"),
        ("http://straße.test:{blocked}/page", "redirected to another site: xn--strae-oqa.test is on a blocked"),
        ("http://local%68ost:{blocked}/page", "redirected to another site: localhost is on a blocked domain list"),
    ],
)
def test_a_redirect_parsers_disagree_on_never_reaches_a_blocked_server(
    counting, test_names_resolve_to_loopback, target, outcome
):
    blocked_port, blocked_asked = counting()
    other_port, other_asked = counting()
    entry_port, _ = counting(redirect_to=target.format(blocked=blocked_port, other=other_port))
    rules = DomainRules.of(blocked=["localhost", "xn--strae-oqa.test"])

    result = read_as_a_run_would(f"http://127.0.0.1:{entry_port}/moved", rules)

    assert outcome in result
    assert blocked_asked == [] and other_asked == []


def test_a_redirect_is_followed_to_the_address_as_the_lists_read_it(counting, test_names_resolve_to_loopback):
    target_port, target_asked = counting()
    entry_port, _ = counting(redirect_to=f"http://ＳＴＲＡßＥ.test:{target_port}/page?x=1")

    document = fetcher().fetch(f"http://127.0.0.1:{entry_port}/moved")

    assert document.final_url == f"http://xn--strae-oqa.test:{target_port}/page?x=1"
    assert target_asked == ["/page?x=1"]
