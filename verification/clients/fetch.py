"""Fetching web pages for evidence, safely: server-side requests must not reach the server's
own network (SSRF). Every connection, redirect hops included, resolves its host once, refuses
it if any address is not public, and only then connects, to an address it checked: nothing is
sent to a private address (so its open and closed ports look the same: no port scan), and a
DNS answer that changes between check and connect (rebinding) is never asked for."""

import ipaddress
import socket
import time
from collections.abc import Callable, Iterator
from urllib.parse import urljoin

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError, ReadTimeoutError
from urllib3.util.connection import allowed_gai_family, create_connection

from verification.pipeline import refusals
from verification.pipeline.types import FetchedDocument, RefusedAddress, StepError
from verification.pipeline.urls import UnsafeAddress, parse_web_address

USER_AGENT = "Mozilla/5.0 (compatible; factsite/0.1; fact verification of AI-written text)"
PDF = "application/pdf"
# text/markdown is read as Markdown (extract.read_markdown), not shown with its markup.
ACCEPTED_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "text/markdown", PDF)
ACCEPT_HEADER = "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8"
MAX_REDIRECTS = 5
# Client errors that say "not now" rather than "never": a retry may be answered (with 5xx).
TRANSIENT_STATUSES = frozenset({408, 425, 429})
# Where a PDF's header may start (its specification allows a little junk before it).
PDF_HEADER_WITHIN = 1024


class PrivateAddressError(NewConnectionError):
    def __init__(self, conn: object, message: str) -> None:
        super().__init__(conn, message)
        self.message = message


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def is_public_address(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    return all(candidate.is_global and not candidate.is_multicast for candidate in _addresses_within(ip))


def _addresses_within(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list:
    """The address and every IPv4 address an IPv6 one carries (mapped, 6to4, Teredo, NAT64,
    IPv4-compatible): any of them could route to a private IPv4 network."""
    found = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = [ip.ipv4_mapped, ip.sixtofour, ip.teredo[1] if ip.teredo else None]
        if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
            embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        found += [address for address in embedded if address is not None]
    return found


class _PublicOnlyMixin:
    """Replaces urllib3's resolve-and-connect with resolve, check every address, connect."""

    def _new_conn(self) -> socket.socket:
        try:
            found = socket.getaddrinfo(self._dns_host, self.port, allowed_gai_family(), socket.SOCK_STREAM)
        except socket.gaierror as error:
            raise NameResolutionError(self.host, self, error) from error
        addresses = list(dict.fromkeys(sockaddr[0] for *_, sockaddr in found))
        # One private answer refuses the name, rather than narrowing it to its public answers:
        # a public site has no reason to point into anyone's own network.
        for address in addresses:
            if not is_public_address(address):
                raise PrivateAddressError(
                    self, f"refused to fetch {self.host}: it resolves to a non-public address ({address})"
                )
        error = OSError(f"{self.host} resolves to no address")
        for address in addresses:
            try:
                # A literal address: create_connection resolves nothing more.
                return create_connection(
                    (address, self.port),
                    self.timeout,
                    source_address=self.source_address,
                    socket_options=self.socket_options,
                )
            except OSError as failure:
                error = failure
        if isinstance(error, TimeoutError):
            raise ConnectTimeoutError(self, f"Connection to {self.host} timed out") from error
        raise NewConnectionError(self, f"Failed to establish a new connection: {error}") from error


class _PublicHTTPConnection(_PublicOnlyMixin, HTTPConnection):
    pass


class _PublicHTTPSConnection(_PublicOnlyMixin, HTTPSConnection):
    pass


class _PublicHTTPPool(HTTPConnectionPool):
    ConnectionCls = _PublicHTTPConnection


class _PublicHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _PublicHTTPSConnection


class PublicOnlyAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _PublicHTTPPool, "https": _PublicHTTPSPool}


class PageFetcher:
    def __init__(
        self, *, timeout: float, max_bytes: int, allow_private: bool, max_pdf_bytes: int | None = None
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        # A PDF cut short cannot be read at all (its index is at the end), so it gets its own,
        # larger, limit and is refused over it rather than truncated.
        self.max_pdf_bytes = max_pdf_bytes or max_bytes
        self.session = requests.Session()
        # Environment proxies would make the peer check see the proxy, not the page's host.
        self.session.trust_env = allow_private
        self.session.max_redirects = MAX_REDIRECTS
        adapter = HTTPAdapter(pool_maxsize=32) if allow_private else PublicOnlyAdapter(pool_maxsize=32)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def fetch(self, url: str, *, refuse: Callable[[str], str | None] | None = None) -> FetchedDocument:
        """`refuse(url)`: a reason not to follow a redirect to `url` (a blocked domain), asked
        before that host is contacted. The address and every redirect's are read by
        urls.parse_web_address, as the domain lists read them, and sent as it rebuilt them."""
        try:
            address = parse_web_address(url)
        except UnsafeAddress as error:
            raise RefusedAddress(f"refused before connecting: {error}") from None
        try:
            with self.session.get(
                address.url,
                stream=True,
                timeout=self.timeout,
                headers={"User-Agent": USER_AGENT, "Accept": ACCEPT_HEADER},
                hooks={"response": _redirect_guard(self.session, refuse)},
            ) as response:
                return self._read(url, response)
        except requests.exceptions.InvalidSchema as error:
            raise StepError("only http and https pages are fetched", transient=False) from error
        except requests.exceptions.TooManyRedirects as error:
            raise StepError(f"the page redirected more than {MAX_REDIRECTS} times", transient=False) from error
        except requests.exceptions.Timeout as error:
            raise StepError(f"the page did not answer within {self.timeout:g} s") from error
        except requests.exceptions.ConnectionError as error:
            # A read timeout while streaming the body arrives as a ConnectionError.
            if error.args and isinstance(error.args[0], ReadTimeoutError):
                raise StepError(f"the page did not answer within {self.timeout:g} s") from error
            raise _connection_failure(error) from error
        except requests.RequestException as error:
            raise StepError(f"the page could not be fetched ({type(error).__name__})") from error

    def _read(self, url: str, response: requests.Response) -> FetchedDocument:
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if response.status_code >= 400:
            status = response.status_code
            # A bot challenge sent with an error status is a refusal, not the server's failure (a
            # snippet stands in for it); a retry may still be let through, as the status says.
            refused = None
            if content_type in ("", *refusals.HTML_TYPES):
                start = self._error_start(response)
                refused = refusals.error_page_failure(status, start.decode("utf-8", errors="replace"))
            raise StepError(
                refused or f"the page answered HTTP {status}",
                transient=status in TRANSIENT_STATUSES or status >= 500,
            )
        charset = requests.utils.get_encoding_from_headers(response.headers)
        if charset == "ISO-8859-1" and "charset" not in response.headers.get("Content-Type", "").lower():
            charset = None  # requests' default for text/*, not something the server said
        chunks = response.iter_content(64 * 1024)
        body = bytearray(next(chunks, b""))
        # A PDF is known by its first bytes too: servers label PDFs application/octet-stream,
        # binary/octet-stream, even text/html.
        if b"%PDF-" in body[:PDF_HEADER_WITHIN]:
            content_type = PDF
        if content_type and content_type not in ACCEPTED_TYPES:
            raise StepError(f"not a web page ({content_type})", transient=False)
        if content_type == PDF:
            self._read_whole(body, chunks, response)
        else:
            self._read_start(body, chunks)
        return FetchedDocument(url, response.url, content_type or "text/html", charset, bytes(body))

    def _error_start(self, response: requests.Response) -> bytes:
        """The first ERROR_PAGE_BYTES of an error response's body, to look for a challenge in: less
        when it ends, breaks off or comes slowly (the status is the failure either way). Its
        markers and the words that matter are ASCII: no need to know its encoding."""
        start = bytearray()
        deadline = time.monotonic() + self.timeout
        try:
            for chunk in response.iter_content(16 * 1024):
                start += chunk
                if len(start) >= refusals.ERROR_PAGE_BYTES or time.monotonic() > deadline:
                    break
        except requests.RequestException:
            pass
        return bytes(start[: refusals.ERROR_PAGE_BYTES])

    def _read_start(self, body: bytearray, chunks: Iterator[bytes]) -> None:
        """Over the cap, keep the start: the main text of a page comes early."""
        deadline = time.monotonic() + 3 * self.timeout
        # Checked before asking for the next chunk: past the cap, nothing more is read.
        while len(body) < self.max_bytes and (chunk := next(chunks, None)) is not None:
            body += chunk
            if time.monotonic() > deadline:
                raise StepError("the page was too slow to download")
        del body[self.max_bytes :]

    def _read_whole(self, body: bytearray, chunks: Iterator[bytes], response: requests.Response) -> None:
        too_large = StepError(f"the PDF is larger than {_megabytes(self.max_pdf_bytes)}", transient=False)
        if _declared_length(response) > self.max_pdf_bytes:
            raise too_large  # said up front: nothing more is downloaded
        deadline = time.monotonic() + 3 * self.timeout
        for chunk in chunks:
            body += chunk
            if len(body) > self.max_pdf_bytes:
                raise too_large
            if time.monotonic() > deadline:
                raise StepError("the PDF was too slow to download")


def _declared_length(response: requests.Response) -> int:
    """The Content-Length the server sent, 0 when absent or not a number (a hostile or broken
    header is not a reason to fail the page: the download's own count still limits it)."""
    try:
        return int(response.headers.get("Content-Length") or 0)
    except ValueError:
        return 0


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:g} MB"


def _redirect_guard(session: requests.Session, refuse: Callable[[str], str | None] | None):
    """A response hook: requests runs it on every hop before following the next, so a refused
    redirect target is never connected to. The target it lets through is put back in the
    Location header as parse_web_address rebuilt it: requests then follows the host judged."""

    def check(response: requests.Response, **kwargs) -> requests.Response:
        if response.is_redirect:
            try:
                # Read as requests reads it (a non-ASCII Location arrives as UTF-8 bytes).
                target = parse_web_address(urljoin(response.url, session.get_redirect_target(response)))
            except UnsafeAddress as error:
                response.close()
                raise RefusedAddress(f"the page redirected to an address refused before connecting: {error}") from None
            reason = refuse(target.url) if refuse else None
            if reason:
                response.close()
                raise StepError(f"the page redirected to another site: {reason}", transient=False)
            response.headers["Location"] = target.url
        return response

    return check


def _connection_failure(error: requests.exceptions.ConnectionError) -> StepError:
    # requests wraps urllib3's MaxRetryError, whose `reason` is the connection's own error.
    reason = getattr(error.args[0], "reason", None) if error.args else None
    if isinstance(reason, PrivateAddressError):
        return RefusedAddress(reason.message)  # a refused address stays refused
    if isinstance(reason, NameResolutionError):
        return StepError(refusals.NO_SUCH_HOST, transient=True)
    return StepError("could not connect to the page's server", transient=True)
