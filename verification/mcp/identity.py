"""Who an MCP client is, as the API knows its callers: a client address (its keyed hash, for the
hourly limits) and an owner token (X-Client-Token's rules: only the run's creator may cancel it
or read its trail's texts). Over HTTP both come from the request, as for the API; over stdio the
process is one client, `limits.MCP_STDIO_ADDRESS`, with one token (MCP_CLIENT_TOKEN, or a new
one)."""

from dataclasses import dataclass

from verification.access import ownership

# Where http.py leaves a request's identity in its ASGI scope, for the tools to read.
SCOPE_KEY = "factsite.identity"


@dataclass(frozen=True)
class Identity:
    client: str  # limits.client_key(address)
    token: str  # the owner token
    site: str  # the site's address, for absolute permalinks: "https://factsite.example"

    @property
    def creator(self) -> str:
        return ownership.creator_key(self.token)

    def url(self, path: str) -> str:
        return self.site.rstrip("/") + path


_process: list[Identity] = []


def serve_as(identity: Identity) -> None:
    """The identity of every call this process serves over stdio."""
    _process[:] = [identity]


def of_request(request) -> Identity:
    """The identity of a tool call: the HTTP request's (http.py), else the process's (stdio)."""
    scope = getattr(request, "scope", None)
    if scope is not None and SCOPE_KEY in scope:
        return scope[SCOPE_KEY]
    if _process:
        return _process[0]
    raise LookupError("no client identity: serve MCP through manage.py mcp or the web app's /mcp")
