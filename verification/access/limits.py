"""What one client may ask of the server: API writes only as JSON, so that no other site can make
a visitor's browser send them; RUNS_PER_HOUR runs per client address, and per hour as well
STEP_CALLS_PER_HOUR step calls, RETRIES_PER_HOUR retries and UPLOAD_MB_PER_HOUR of uploads. (The claim budget of a
run, MAX_CLAIMS_PER_RUN, is checked with the text, in forms.py.)"""

import hashlib
import hmac
import inspect
import math
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from verification import selectors, services

WINDOW = timedelta(hours=1)
# `manage.py verify` counts as one client, whoever runs it.
CLI_ADDRESS = "cli"
# `manage.py mcp` (an assistant on this machine, over stdio) counts as one client too, apart from the CLI.
MCP_STDIO_ADDRESS = "mcp-stdio"
# `manage.py evaluate` is an operator's tool on their own machine that starts one run per text of
# a benchmark (hundreds): its runs are stored under this client of their own and are not held to
# RUNS_PER_HOUR, which would otherwise refuse all but the first few of them. No request can
# claim it: a connection's address is never this word.
EVALUATE_ADDRESS = "evaluate"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


# API operations that also take files as multipart/form-data (url names).
UPLOAD_OPERATIONS = frozenset({"verification_create"})
# The header an upload to the API must carry. A browser sends a custom header to another site
# only after a CORS preflight, which we never grant: so no other site can make a visitor's
# browser upload, though a form can be multipart. Any value will do.
UPLOAD_HEADER = "X-Requested-With"


class JsonOnlyApiMiddleware:
    """The API takes no CSRF token, so it must not take what a page on another site can make a
    visitor's browser send: a form or `text/plain` needs no CORS preflight, `application/json`
    does, and we never grant one. django-ninja parses any body as JSON whatever its type, so the
    type is checked here, before the body is read, for every API operation. Uploads
    (multipart/form-data) are taken where an operation reads them, with UPLOAD_HEADER.

    A method the path does not serve is answered first, 405 with Allow, in JSON like the API's
    other errors: no content type makes a PUT on a path that only reads or creates acceptable."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        if "api" not in request.resolver_match.namespaces:
            return None
        allowed = _api_methods(view_func)
        if allowed and request.method not in allowed:
            response = JsonResponse(
                {"detail": f"{request.method} is not allowed here; this path takes {', '.join(sorted(allowed))}."},
                status=405,
            )
            response["Allow"] = ", ".join(sorted(allowed))
            return response
        if request.method not in BODY_METHODS or _has_no_body(request):
            return None
        if request.content_type == "application/json":
            return None
        uploads = request.resolver_match.url_name in UPLOAD_OPERATIONS
        if uploads and request.content_type == "multipart/form-data" and request.headers.get(UPLOAD_HEADER):
            return None
        sent = request.content_type or "none"
        also = f", or multipart/form-data with the header {UPLOAD_HEADER} to upload files" if uploads else ""
        return JsonResponse(
            {
                "detail": f"The API accepts only JSON: send Content-Type: application/json{also} "
                f"(this request sent {sent})."
            },
            status=415,
        )


def _has_no_body(request: HttpRequest) -> bool:
    """A request with no body (`POST …/cancel` with nothing to say) sends nothing to be read as
    JSON, whatever type it declares: there is nothing to refuse. Told by its headers, before the
    body is read: no Content-Length (or 0) and no chunked Transfer-Encoding."""
    if request.headers.get("Transfer-Encoding"):
        return False
    return request.META.get("CONTENT_LENGTH") in (None, "", "0")


def _api_methods(view_func) -> frozenset[str]:
    """The methods a django-ninja view serves: its PathView (which answers a wrong method itself,
    but in plain text) is the one thing its view function closes over. Empty when that changes
    in a new django-ninja: then ninja's own 405 stands."""
    try:
        path_view = inspect.getclosurevars(view_func).nonlocals.get("self")
    except TypeError:  # not a plain function: ninja's schema and docs views (GET only anyway)
        return frozenset()
    operations = getattr(path_view, "operations", ())
    return frozenset(method for operation in operations for method in operation.methods)


def upload_body_limit() -> int | None:
    """The largest request that can carry a run's files: MAX_DOCUMENTS of MAX_UPLOAD_BYTES each,
    and the rest of the form (which Django limits to DATA_UPLOAD_MAX_MEMORY_SIZE). None when
    either limit is off (0)."""
    if settings.MAX_DOCUMENTS <= 0 or settings.MAX_UPLOAD_BYTES <= 0:
        return None
    return settings.MAX_DOCUMENTS * settings.MAX_UPLOAD_BYTES + (settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)


class UploadSizeMiddleware:
    """Refuses an upload larger than any run can take before a byte of it is read: Django would
    otherwise stream every file to disk (the CSRF check reads the form first) and only then
    could a view say it is too large."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        if request.method in BODY_METHODS and request.content_type == "multipart/form-data":
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = upload_body_limit()
            if limit is not None and length > limit:
                message = (
                    f"The upload is {length / 2**20:.1f} MB; a run takes at most {settings.MAX_DOCUMENTS} files "
                    f"of {settings.MAX_UPLOAD_BYTES / 2**20:.1f} MB each (MAX_DOCUMENTS, MAX_UPLOAD_BYTES)."
                )
                return JsonResponse({"detail": message}, status=413)
        return self.get_response(request)


# JSON writes any character in at most 6 bytes (\u00e9); a node's id, step, inputs and document
# address take at most TRAIL_NODE_BYTES besides its text.
JSON_BYTES_PER_CHAR = 6
TRAIL_NODE_BYTES = 4096
# API operations whose body is a trail (url names).
TRAIL_OPERATIONS = frozenset({"trail_create"})


def trail_body_limit() -> int:
    """The largest trail the settings allow (TRAIL_MAX_CHARS, TRAIL_MAX_NODES) as a JSON body or
    file. Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB), meant for forms, refused any trail of over
    about 2.5 million characters, half of what TRAIL_MAX_CHARS allowed (issue 38)."""
    trail = JSON_BYTES_PER_CHAR * settings.TRAIL_MAX_CHARS + TRAIL_NODE_BYTES * settings.TRAIL_MAX_NODES
    return max(trail, settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)


def trail_too_large(size: int, limit: int) -> str:
    return (
        f"The trail is {size / 2**20:.1f} MB; the limit is {limit / 2**20:.1f} MB, enough for the "
        f"{settings.TRAIL_MAX_CHARS:,} characters of text a trail may hold (TRAIL_MAX_CHARS)."
    )


class TrailBodyMiddleware:
    """Reads a trail's body under the trail's own limit (trail_body_limit) before the API does,
    which would hold it to DATA_UPLOAD_MAX_MEMORY_SIZE; a larger one is refused unread, 413."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if request.method not in BODY_METHODS or "api" not in match.namespaces:
            return None
        if match.url_name not in TRAIL_OPERATIONS:
            return None
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > (limit := trail_body_limit()):
            return JsonResponse({"detail": trail_too_large(length, limit)}, status=413)
        # HttpRequest.body returns what was read here instead of checking DATA_UPLOAD_MAX_MEMORY_SIZE.
        request._body = request.read()
        return None


def client_address(request: HttpRequest) -> str:
    """The connection's address, or, behind TRUSTED_PROXY_COUNT proxies that each append the
    address they were reached from to X-Forwarded-For, the entry the outermost of them appended.
    Entries further left were sent by the client and can say anything."""
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = [a.strip() for a in request.headers.get("X-Forwarded-For", "").split(",") if a.strip()]
    if proxies > 0 and forwarded:
        return forwarded[-min(proxies, len(forwarded))]
    return request.META.get("REMOTE_ADDR", "")


def client_key(address: str) -> str:
    """What a run stores of who asked: a keyed hash, so the database never holds an address."""
    return hmac.new(settings.SECRET_KEY.encode(), address.encode(), hashlib.sha256).hexdigest()


def request_client(request: HttpRequest) -> str:
    return client_key(client_address(request))


@dataclass(frozen=True)
class RateLimited:
    used: int  # what the client spent in the last hour, in the limit's unit
    limit: int
    retry_after: int  # seconds until the client may spend again
    what: str = "verifications"
    setting: str = "RUNS_PER_HOUR"

    def message(self, who: str = "your address") -> str:
        minutes = math.ceil(self.retry_after / 60)
        return (
            f"Too many {self.what} from {who}: {self.used} in the last hour ({self.setting}={self.limit}). "
            f"Try again in {minutes} minute{'' if minutes == 1 else 's'}."
        )


@dataclass(frozen=True)
class Budget:
    kind: str  # Spending.kind
    setting: str  # the settings name of its hourly limit (0: no limit)
    what: str  # what the message counts
    unit: int = 1  # the limit's unit, in the amounts recorded (bytes per megabyte for uploads)


STEP_CALLS = Budget("step", "STEP_CALLS_PER_HOUR", "step calls")
RETRIES = Budget("retry", "RETRIES_PER_HOUR", "retries")
UPLOADS = Budget("upload", "UPLOAD_MB_PER_HOUR", "megabytes uploaded", unit=2**20)
# The requests that spend, by url name: step API calls that reach a model, a search or a page (or
# rank with the model), and retries from the page or the API. Segment and score are cheap.
SPENDING_OPERATIONS = {
    "step_decompose": STEP_CALLS,
    "step_search": STEP_CALLS,
    "step_extract": STEP_CALLS,
    "step_passages": STEP_CALLS,
    "step_categorize": STEP_CALLS,
    "step_judge": STEP_CALLS,
    "verification_retry": RETRIES,
    "retry": RETRIES,
}


def spend(client: str, budget: Budget, amount: int = 1):
    """Records the spending if it fits in the client's last hour, and returns the row (to undo
    if the request ends up spending nothing); else returns RateLimited; None (nothing recorded)
    when the limit is off. Recorded first and counted after, so concurrent requests cannot all
    slip under the limit."""
    limit = getattr(settings, budget.setting) * budget.unit
    if limit <= 0:
        return None
    now = timezone.now()
    spending = services.spending_add(client=client, kind=budget.kind, amount=amount, forget_before=now - WINDOW)
    spent = selectors.client_spending(client, budget.kind, since=now - WINDOW)
    total = sum(amount for _, amount in spent)
    if total <= limit:
        return spending
    services.spending_undo(spending)
    return RateLimited(
        used=math.ceil((total - amount) / budget.unit),
        limit=limit // budget.unit,
        retry_after=_frees_at(selectors.client_spending(client, budget.kind, since=now - WINDOW), total - limit, now),
        what=budget.what,
        setting=budget.setting,
    )


def _frees_at(spent: list, needed: int, now) -> int:
    """Seconds until the oldest spending has left the window by `needed` or more; an hour when
    even an empty window would not take the request (an upload larger than the hourly limit)."""
    freed = 0
    for at, amount in spent:
        freed += amount
        if freed >= needed:
            return max(1, math.ceil((at + WINDOW - now).total_seconds()))
    return math.ceil(WINDOW.total_seconds())


def uploads_limited(client: str, files) -> RateLimited | None:
    """Records the bytes of a request's uploaded files against UPLOAD_MB_PER_HOUR, or says why not."""
    size = sum(file.size for file in files)
    spent = spend(client, UPLOADS, size) if size else None
    return spent if isinstance(spent, RateLimited) else None


class SpendingLimitMiddleware:
    """Per-client hourly limits of the requests that spend without starting a run (step calls,
    retries), for the API and the page alike; a request refused or failed (4xx/5xx) spends nothing."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        response = self.get_response(request)
        spending = getattr(request, "factsite_spending", None)
        if spending is not None and response.status_code >= 400:
            services.spending_undo(spending)
        return response

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        budget = SPENDING_OPERATIONS.get(request.resolver_match.url_name)
        if request.method != "POST" or budget is None:
            return None
        spent = spend(request_client(request), budget)
        if isinstance(spent, RateLimited):
            return limited_response(request, spent)
        request.factsite_spending = spent
        return None


def limited_response(request: HttpRequest, limited: RateLimited) -> HttpResponse:
    """429 with Retry-After: JSON for the API, a plain sentence for a page's form."""
    if "api" in request.resolver_match.namespaces:
        response = JsonResponse({"detail": limited.message()}, status=429)
    else:
        response = HttpResponse(limited.message(), status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(limited.retry_after)
    return response


@contextmanager
def run_slot(client: str, files=()):
    """Around starting a run: yields None while the client may (RUNS_PER_HOUR, and
    UPLOAD_MB_PER_HOUR for `files`), else RateLimited. The count and the run's creation inside
    the block are one transaction that no other request of the same client can interleave with
    (SQLite's IMMEDIATE transactions take the write lock at once; PostgreSQL takes an advisory
    lock on the client): simultaneous submissions are counted one after the other, so exactly
    RUNS_PER_HOUR of them start. Counted from the runs themselves, so the limit holds across
    web processes."""
    with transaction.atomic():
        _one_at_a_time(client)
        yield rate_limited(client) or uploads_limited(client, files)


def _one_at_a_time(client: str) -> None:
    if connection.vendor == "postgresql":
        key = int.from_bytes(hashlib.sha256(f"factsite-run:{client}".encode()).digest()[:8], "big", signed=True)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])
    # SQLite: the transaction began IMMEDIATE (settings), holding the database's write lock.


def rate_limited(client: str) -> RateLimited | None:
    """None while the client may start a run: fewer than RUNS_PER_HOUR of its runs were created in
    the last hour. A check alone: a request that starts a run takes `run_slot`, which is exact
    under simultaneous submissions."""
    limit = settings.RUNS_PER_HOUR
    if limit <= 0:
        return None
    now = timezone.now()
    created = selectors.client_run_times(client, since=now - WINDOW)
    if len(created) < limit:
        return None
    return _run_limit(created, limit, now)


def _run_limit(created: list, limit: int, now) -> RateLimited:
    # A run may start once enough of the oldest have left the window to bring the count under the
    # limit: when the limit is not lowered meanwhile, that is the oldest one.
    frees_at = created[len(created) - limit] + WINDOW
    return RateLimited(used=len(created), limit=limit, retry_after=max(1, math.ceil((frees_at - now).total_seconds())))
