"""Claim query → the top web results worth fetching."""

from urllib.parse import urldefrag, urlsplit

from .types import SearchHit, SearchProvider


def search_claim(provider: SearchProvider, query: str, top_k: int) -> list[SearchHit]:
    """The provider's results in rank order, one per page (fragments ignored), http(s) only."""
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for hit in provider.search(query, num=top_k):
        url = urldefrag(hit.url.strip()).url
        if urlsplit(url).scheme not in ("http", "https") or url in seen:
            continue
        seen.add(url)
        hits.append(SearchHit(url=url, title=hit.title, snippet=hit.snippet, rank=len(hits) + 1))
        if len(hits) == top_k:
            break
    return hits
