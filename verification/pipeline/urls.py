"""Web addresses, read one way: the domain lists, the fetcher (every redirect hop too) and the
API's checks all take the host from `parse_web_address`, and the fetcher sends the address it
returns, so the host a list judged is the host that is contacted.

Parsers disagree about some addresses. In `http://blocked.test\\@1.2.3.4/page` Python's urlsplit
finds the host 1.2.3.4 while urllib3 (and a browser, which reads "\\" as "/") connects to
blocked.test; Python drops a tab inside a host name where urllib3 refuses the name; `straße.test`
is `strasse.test` to Python's IDNA 2003 codec and `xn--strae-oqa.test` to urllib3 and browsers
(UTS 46). So an address with user info, a backslash, a control character or a space is refused
before anything is contacted, rather than read one way and fetched another; a percent-encoded
or internationalised host name is decoded and encoded as a browser does (WHATWG URL: percent-
decoding, then UTS 46 without transitional mapping, as urllib3's `idna` does too)."""

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import idna
from urllib3.util import parse_url

SCHEMES = ("http", "https")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")
# Labels of a host name once in ASCII. Underscores occur in real host names and browsers take them.
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
# WHATWG reads a host whose last label is a number as an IPv4 address, in any of its old forms
# (0x7f.1, 2130706433, 0177.0.0.1); resolvers take them too. Only the dotted-decimal form is taken.
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)", re.IGNORECASE)


class UnsafeAddress(ValueError):
    """An address refused before any connection; its message says why, for a person."""


@dataclass(frozen=True)
class WebAddress:
    url: str  # what is fetched: the address rebuilt around `host`, without its fragment
    scheme: str
    host: str  # ASCII, lowercase; an IP address in its standard form (IPv6 without brackets)
    port: int | None  # as written; None when the scheme's default


def parse_web_address(url: str) -> WebAddress:
    """The address as every part of factsite reads it, or UnsafeAddress."""
    shown = url[:100]
    if "\\" in url:
        raise UnsafeAddress(f"the URL {shown!r} contains a backslash, which browsers and servers read differently")
    if _CONTROL_OR_SPACE.search(url):
        raise UnsafeAddress(f"the URL {shown!r} contains a space, a tab, a line break or a control character")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise UnsafeAddress(f"not a valid URL ({error})") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise UnsafeAddress(f"only http:// and https:// pages are fetched, not {scheme or shown}://")
    if not url[len(scheme) + 1 :].startswith("//") or not parts.netloc:
        raise UnsafeAddress(f"the URL {shown!r} has no host name")
    if "@" in parts.netloc:
        # http://trusted.example@evil.example/ is evil.example to every parser, and made to mislead.
        raise UnsafeAddress(f"the URL {shown!r} has a user name before its host, which hides the host")
    written = parts.netloc.rsplit(":", 1)[0] if port is not None else parts.netloc.removesuffix(":")
    if not written:
        raise UnsafeAddress(f"the URL {shown!r} has no host name")
    host = web_host(written)
    if not host:
        raise UnsafeAddress(f"the URL {shown!r} has an invalid host name")
    address = WebAddress(_rebuilt(scheme, host, port, parts.path, parts.query), scheme, host, port)
    # The fetcher parses what it sends with urllib3: it must find this very host.
    if (parse_url(address.url).host or "").strip("[]") != host:
        raise UnsafeAddress(f"the URL {shown!r} is read differently by the fetcher")
    return address


def web_host(text: str) -> str:
    """A host as written in an address or a domain list → its ASCII form ("" when it is not a
    host): percent-decoded, IDNA-encoded (UTS 46), lowercase; an IP address in standard form."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            return str(ipaddress.IPv6Address(text[1:-1]))
        except ValueError:
            return ""
    try:
        host = unquote(text, errors="strict")
    except UnicodeDecodeError:
        return ""
    if not host or _CONTROL_OR_SPACE.search(host) or any(c in host for c in "/\\?#@:[]%"):
        return ""
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError:
            return ""
    host = host.lower()
    labels = host.removesuffix(".").split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        try:
            return str(ipaddress.IPv4Address(host.removesuffix(".")))
        except ValueError:
            return ""
    if len(host) > 254 or not all(_LABEL.fullmatch(label) for label in labels):
        return ""
    return host


def _rebuilt(scheme: str, host: str, port: int | None, path: str, query: str) -> str:
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return f"{scheme}://{netloc}{path or '/'}{'?' + query if query else ''}"
