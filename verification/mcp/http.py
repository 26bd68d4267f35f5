"""The streamable HTTP transport at /mcp, served by Django (WSGI: gunicorn, runserver, the test
server) rather than an ASGI server beside it: the SDK's transport is an ASGI app, run here on one
event loop per process (a daemon thread) that every request hands its body to and takes its
answer from, streamed (Server-Sent Events carry a waiting tool's progress).

Stateless (the SDK's stateless_http): no session outlives its request, so any of several web
processes can serve any request. The caller is known as the API knows it (identity.py): its
address, X-Client-Token (a new token, in the answer's header, when it sent none), and the JSON-only
rule for writes. The Host header is Django's to check (ALLOWED_HOSTS); an Origin of another site is
refused, so no page a visitor opens elsewhere can call the tools with their address."""

import asyncio
import logging
import queue
import threading
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.transport_security import TransportSecuritySettings

from verification.access import limits, ownership
from verification.mcp import identity
from verification.mcp.server import server

logger = logging.getLogger(__name__)
# What answers first: the SDK's response headers come at once; a tool answers within
# server.MAX_WAIT_SECONDS, so a minute more is a loop that stopped.
FIRST_EVENT_S = 120
# Hop-by-hop, or Django's to set: never copied from the ASGI answer.
_NOT_COPIED = frozenset({"content-length", "connection", "transfer-encoding", "keep-alive"})


class _Loop:
    """The event loop of this process's MCP transport, started by the first request."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.manager = None

    def get(self):
        with self.lock:
            if self.loop is None:
                ready = threading.Event()
                threading.Thread(target=self._serve, args=(ready,), name="mcp-http", daemon=True).start()
                ready.wait()
        return self.loop, self.manager

    def _serve(self, ready: threading.Event) -> None:
        asyncio.run(self._run(ready))

    async def _run(self, ready: threading.Event) -> None:
        server.streamable_http_app(
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = server.session_manager
        async with manager.run():
            self.loop, self.manager = asyncio.get_running_loop(), manager
            ready.set()
            await asyncio.Event().wait()  # until the process ends


_transport = _Loop()


@csrf_exempt
def endpoint(request: HttpRequest) -> HttpResponse:
    """/mcp: one MCP message (POST) for the SDK's transport."""
    if request.method != "POST":
        # Stateless: no session to end (DELETE), and no stream of the server's own messages to open (GET),
        # which would hold a web thread for as long as the client kept it, saying nothing.
        response = JsonResponse(
            {"detail": f"{request.method} is not allowed here: send each MCP message with POST."}, status=405
        )
        response["Allow"] = "POST"
        return response
    token = ownership.header_token(request)
    if token == "":
        return JsonResponse({"detail": f"{ownership.TOKEN_RULE}, or be left out."}, status=400)
    if (origin := request.headers.get("Origin")) and urlsplit(origin).netloc != request.get_host():
        return JsonResponse({"detail": "MCP requests from another site's pages are refused."}, status=403)
    if request.content_type != "application/json":
        sent = request.content_type or "none"
        detail = f"MCP accepts only JSON: send Content-Type: application/json (this request sent {sent})."
        return JsonResponse({"detail": detail}, status=415)
    body = _body(request)
    if isinstance(body, HttpResponse):
        return body
    new_token = None if token else ownership.new_token()
    who = identity.Identity(
        client=limits.request_client(request),
        token=token or new_token,
        site=request.build_absolute_uri("/"),
    )
    response = _forward(request, body, who)
    if new_token:
        response[ownership.HEADER] = new_token  # as the API's 201: the caller's, to keep
    return response


def _body(request: HttpRequest) -> bytes | HttpResponse:
    """The body, up to what a trail may take (limits.trail_body_limit), as for POST /api/trails."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    limit = limits.trail_body_limit()
    if length > limit:
        detail = f"The request body is too large: the limit is {limit:,} bytes."
        return JsonResponse({"detail": detail}, status=413)
    return request.read(limit + 1) if length else b""


def _forward(request: HttpRequest, body: bytes, who: identity.Identity) -> HttpResponse:
    """Hands the request to the SDK's transport on the loop, and its answer back as Django's."""
    loop, manager = _transport.get()
    events: queue.Queue = queue.Queue()
    gone = threading.Event()  # the WSGI side closed the answer: the client left

    async def receive():
        nonlocal body
        if body is not None:
            sent, body = body, None
            return {"type": "http.request", "body": sent, "more_body": False}
        while not gone.is_set():
            await asyncio.sleep(0.5)
        return {"type": "http.disconnect"}

    async def send(message) -> None:
        events.put(message)

    async def handle() -> None:
        try:
            await manager.handle_request(_scope(request, who), receive, send)
        except Exception:
            logger.exception("the MCP transport failed on %s %s", request.method, request.path)
        finally:
            events.put(None)

    handling = asyncio.run_coroutine_threadsafe(handle(), loop)
    try:
        start = events.get(timeout=FIRST_EVENT_S)
    except queue.Empty:
        start = None
    if start is None or start["type"] != "http.response.start":
        handling.cancel()
        logger.error("the MCP transport gave no answer to %s %s", request.method, request.path)
        return JsonResponse({"detail": "The MCP transport gave no answer."}, status=500)
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in start.get("headers", ())]

    def chunks():
        try:
            while (event := events.get()) is not None:
                if event["type"] == "http.response.body" and event.get("body"):
                    yield event["body"]
        finally:
            gone.set()
            handling.cancel()

    streamed = any(k.lower() == "content-type" and v.startswith("text/event-stream") for k, v in headers)
    response = StreamingHttpResponse(chunks()) if streamed else HttpResponse(b"".join(chunks()))
    response.status_code = start["status"]
    for key, value in headers:
        if key.lower() not in _NOT_COPIED:
            response[key] = value
    return response


def _scope(request: HttpRequest, who: identity.Identity) -> dict:
    """The ASGI scope of the request as the SDK reads it, and the caller's identity beside."""
    host, _, port = request.get_host().partition(":")
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": [(key.lower().encode("latin-1"), value.encode("latin-1")) for key, value in request.headers.items()],
        "client": (limits.client_address(request), 0),
        "server": (host, int(port or (443 if request.is_secure() else 80))),
        identity.SCOPE_KEY: who,
    }
