"""Who started a run, without accounts: a long random owner token, kept by a browser in an
HttpOnly cookie and sent by API callers in the X-Client-Token header. A run stores a keyed hash
of it (`Verification.creator`), never the token, so a database leak hands no one a way in.

Only the creator may change a run (retry, cancel, delete) or use its documents again (Edit text);
anyone with the permalink still sees the result as it was, and may check its text again as a run
of their own."""

import hashlib
import hmac
import re
import secrets

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from verification.models import Verification

COOKIE = "factsite_owner"
HEADER = "X-Client-Token"
# Browsers keep a cookie at most 400 days; each run started renews it.
COOKIE_MAX_AGE = 400 * 24 * 3600
# A caller's own token must be hard to guess too: at least 20 URL-safe characters (ours are 43).
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{20,200}")
TOKEN_RULE = f"{HEADER} must be 20 to 200 letters, digits, '-' or '_'"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def header_token(request: HttpRequest) -> str | None:
    """The header's token; "" when the header is there but not a token (the API refuses it)."""
    value = request.headers.get(HEADER)
    if value is None:
        return None
    value = value.strip()
    return value if TOKEN_PATTERN.fullmatch(value) else ""


def request_token(request: HttpRequest) -> str | None:
    """The caller's token: the header's (API), else the cookie's (browser); None without one."""
    token = header_token(request)
    if token:
        return token
    cookie = request.COOKIES.get(COOKIE, "")
    return cookie if TOKEN_PATTERN.fullmatch(cookie) else None


def creator_key(token: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), f"owner:{token}".encode(), hashlib.sha256).hexdigest()


def is_creator(request: HttpRequest, verification: Verification | None) -> bool:
    """Whether the request comes from the browser or API caller that started the run. Runs
    from before owner tokens (and CLI runs) have no creator: nobody may reuse their documents."""
    return token_is_creator(request_token(request), verification)


def token_is_creator(token: str | None, verification: Verification | None) -> bool:
    """is_creator for a caller known by its token alone (an MCP client)."""
    if verification is None or not verification.creator or token is None:
        return False
    return hmac.compare_digest(creator_key(token), verification.creator)


def may_read_trail_texts(request: HttpRequest, verification: Verification) -> bool:
    """A trail's texts are its creator's documents. A copy that Check again made for someone who
    could not read them (`texts_withheld`) keeps them closed to its own creator too."""
    return token_may_read_trail_texts(request_token(request), verification)


def token_may_read_trail_texts(token: str | None, verification: Verification) -> bool:
    return token_is_creator(token, verification) and not verification.settings.get("texts_withheld")


NOT_CREATOR = "Only the browser or API caller that started this verification can do that."
RETRY_REFUSED = (
    "Only the browser or API caller that started this verification can retry it. Check its text again as a run "
    "of your own instead (Check again on its page, or POST /api/verifications)."
)


def remember(response: HttpResponse, request: HttpRequest, token: str) -> HttpResponse:
    """Keeps the browser's token in an HttpOnly cookie (scripts never read it), sent on
    same-site requests and top-level navigations only (SameSite=Lax)."""
    response.set_cookie(
        COOKIE, token, max_age=COOKIE_MAX_AGE, httponly=True, samesite="Lax", secure=request.is_secure()
    )
    return response
