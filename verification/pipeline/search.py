"""Claim query → the top web results worth fetching."""

from dataclasses import replace
from urllib.parse import urldefrag, urlsplit

from .types import SearchHit, SearchProvider


def search_claim(provider: SearchProvider, query: str, top_k: int) -> list[SearchHit]:
    """The provider's results in rank order, one per page (fragments ignored), http(s) only."""
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for hit in provider.search(query, num=top_k):
        url = urldefrag(hit.url.strip()).url
        if not _fetchable(url) or url in seen:
            continue
        seen.add(url)
        hits.append(replace(hit, url=url, rank=len(hits) + 1))
        if len(hits) == top_k:
            break
    return hits


def _fetchable(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. "http://[::1" — one broken result must not sink the search
        return False
