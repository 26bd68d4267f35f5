"""What one client may ask of the server: API writes only as JSON, so that no other site can make
a visitor's browser send them, and RUNS_PER_HOUR runs per client address. (The claim budget of a
run, MAX_CLAIMS_PER_RUN, is checked with the text, in forms.py.)"""

import hashlib
import hmac
import math
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from verification import selectors

WINDOW = timedelta(hours=1)
# `manage.py verify` counts as one client, whoever runs it.
CLI_ADDRESS = "cli"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class JsonOnlyApiMiddleware:
    """The API takes no CSRF token, so it must not take what a page on another site can make a
    visitor's browser send: a form or `text/plain` needs no CORS preflight, `application/json`
    does, and we never grant one. django-ninja parses any body as JSON whatever its type, so the
    type is checked here, before the body is read, for every API operation."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        if request.method not in BODY_METHODS or "api" not in request.resolver_match.namespaces:
            return None
        if request.content_type == "application/json":
            return None
        sent = request.content_type or "none"
        return JsonResponse(
            {"detail": f"The API accepts only JSON: send Content-Type: application/json (this request sent {sent})."},
            status=415,
        )


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
    runs: int
    limit: int
    retry_after: int  # seconds until the client may start a run again

    def message(self, who: str = "your address") -> str:
        minutes = math.ceil(self.retry_after / 60)
        return (
            f"Too many verifications from {who}: {self.runs} in the last hour (RUNS_PER_HOUR={self.limit}). "
            f"Try again in {minutes} minute{'' if minutes == 1 else 's'}."
        )


def rate_limited(client: str) -> RateLimited | None:
    """None while the client may start a run: fewer than RUNS_PER_HOUR of its runs were created in
    the last hour. Counted from the runs themselves, so the limit holds across web processes and
    does not depend on the cache."""
    limit = settings.RUNS_PER_HOUR
    if limit <= 0:
        return None
    now = timezone.now()
    created = selectors.client_run_times(client, since=now - WINDOW)
    if len(created) < limit:
        return None
    # A run may start once enough of the oldest have left the window to bring the count under the
    # limit: when the limit is not lowered meanwhile, that is the oldest one.
    frees_at = created[len(created) - limit] + WINDOW
    return RateLimited(runs=len(created), limit=limit, retry_after=max(1, math.ceil((frees_at - now).total_seconds())))
