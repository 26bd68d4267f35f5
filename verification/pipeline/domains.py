"""Domain lists: which search results a run may read. A listed domain covers its subdomains
("example.com" covers "news.example.com", never "badexample.com"); hosts and list entries are
compared lowercased, without a trailing dot or a leading "www.", and internationalised names
in their ASCII (punycode) form, so one site cannot slip past the list by spelling its name
another way. The host of a URL is the one the fetcher contacts: both read it with urls.py."""

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .types import SearchHit
from .urls import UnsafeAddress, parse_web_address, web_host

# A run's own block list is typed by a person: enough for every site they distrust, small
# enough that a request cannot make each search hit compare against thousands of entries.
MAX_RUN_BLOCKED_DOMAINS = 50

BLOCKED = "blocked"
NOT_ALLOWED = "not_allowed"

_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")


class InvalidDomain(ValueError):
    """A list entry that is not a host name or an IP address; its message names the entry."""


def canonical_host(host: str) -> str:
    """A list entry's host in the form hosts are compared in; "" when it cannot be a host name.
    Stricter than a URL's host (no underscores): entries are typed by people."""
    host = host.strip()
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        pass
    host = _compared(web_host(host))
    if ":" in host:  # an IPv6 address
        return host
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in host.split(".")):
        return ""
    return host


def _compared(host: str) -> str:
    """A host as parsed (urls.web_host) → the form it is compared in."""
    return host.rstrip(".").removeprefix("www.")


def _url_host(url: str) -> str | None:
    """The host the fetcher would contact, comparable; None for an address it refuses anyway
    (before any connection, saying why)."""
    try:
        return _compared(parse_web_address(url).host)
    except UnsafeAddress:
        return None


def parse_domain(entry: str) -> str:
    """A list entry as typed (a host name, "www." or a trailing dot, or a pasted URL, whose host
    is taken) → its canonical host. Raises InvalidDomain with a message a person understands."""
    text = entry.strip()
    host = text
    if "://" in text:
        try:
            host = parse_web_address(text).host
        except UnsafeAddress:
            host = ""
    host = canonical_host(host)
    if not host:
        raise InvalidDomain(f"“{text[:80]}” is not a domain (expected something like example.com)")
    return host


def parse_domain_list(entries: Iterable[str]) -> list[str]:
    """Entries → canonical hosts, in order, without repeats or blanks."""
    return list(dict.fromkeys(parse_domain(entry) for entry in entries if entry.strip()))


def split_domain_text(text: str) -> list[str]:
    """What a person types in a box: domains separated by commas, spaces or new lines."""
    return [part for part in re.split(r"[\s,]+", text) if part]


def covers(domain: str, host: str) -> bool:
    """True when `host` is `domain` or one of its subdomains (both canonical)."""
    return host == domain or host.endswith("." + domain)


@dataclass(frozen=True)
class DomainRules:
    """Hosts a run never reads: every blocked domain, and, when an allow list is given, every
    host outside it. Blocking wins over allowing."""

    blocked: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()

    @classmethod
    def of(cls, *, blocked: Iterable[str] = (), allowed: Iterable[str] = ()) -> "DomainRules":
        """From entries that may not be canonical yet (settings, stored runs); an entry that is
        not a domain is dropped, never matched loosely."""
        return cls(blocked=_canonical_entries(blocked), allowed=_canonical_entries(allowed))

    def __bool__(self) -> bool:
        return bool(self.blocked or self.allowed)

    def refusal(self, url: str) -> str | None:
        """BLOCKED or NOT_ALLOWED when a page at `url` must not be read, else None. An address
        the fetcher refuses (no host, user info, a backslash…) passes: the fetcher refuses it
        before any connection, and the page then says why, which a count here would not."""
        host = _url_host(url)
        if host is None:
            return None
        if any(covers(domain, host) for domain in self.blocked):
            return BLOCKED
        if self.allowed and not any(covers(domain, host) for domain in self.allowed):
            return NOT_ALLOWED
        return None

    def reason(self, url: str) -> str | None:
        """A readable reason to refuse the page, or None."""
        refusal = self.refusal(url)
        if refusal is None:
            return None
        host = _url_host(url)
        if refusal == BLOCKED:
            return f"{host} is on a blocked domain list"
        return f"{host} is not on the allowed domain list"


def _canonical_entries(entries: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(host for host in map(canonical_host, entries) if host))


def filter_hits(hits: Sequence[SearchHit], rules: DomainRules, top_k: int) -> tuple[list[SearchHit], Counter]:
    """The hits a run may read, at most `top_k`, ranked again from 1, and how many were left
    out for each refusal (BLOCKED, NOT_ALLOWED)."""
    kept: list[SearchHit] = []
    left_out: Counter = Counter()
    for hit in hits:
        refusal = rules.refusal(hit.url)
        if refusal:
            left_out[refusal] += 1
        elif len(kept) < top_k:
            kept.append(replace(hit, rank=len(kept) + 1))
    return kept, left_out


def search_depth(top_k: int, rules: DomainRules, *, most: int = 20) -> int:
    """How many results to ask the search for: more when lists may drop some, so that a run
    with a block list still reads about `top_k` pages."""
    return min(max(top_k, most), top_k * 2) if rules else top_k
