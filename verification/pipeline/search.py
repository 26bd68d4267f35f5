"""Claim query → the top web results worth fetching."""

from dataclasses import replace
from itertools import zip_longest
from urllib.parse import urldefrag, urlsplit

from .decompose import MAX_QUERY_CHARS
from .stopwords import ENGLISH as STOPWORDS
from .types import SearchHit, SearchProvider


def search_claim(provider: SearchProvider, query: str, top_k: int, *, language: str | None = None) -> list[SearchHit]:
    """The provider's results in rank order, one per page (fragments ignored), http(s) only.
    `language`: the query's (ISO 639-1), for the engines that take one; None asks as before."""
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for hit in provider.search(query, num=top_k, **({"language": language} if language else {})):
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


def merged(first: list[SearchHit], second: list[SearchHit], top_k: int) -> list[SearchHit]:
    """Two searches' results as one list of at most `top_k`: taken in turns, the first's first,
    each page once, ranked anew. The English query of a claim in a language whose web is thin
    (languages.LARGE_WEB) gets half the places, the claim's own language the other half."""
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for pair in zip_longest(first, second):
        for hit in pair:
            if hit is not None and hit.url not in seen and len(hits) < top_k:
                seen.add(hit.url)
                hits.append(replace(hit, rank=len(hits) + 1))
    return hits


def second_query(claim: str, query: str) -> str:
    """The query of a claim's second search, one the first did not send: the claim's own words
    when its search query was another wording, else (the model wrote no query of its own) its
    key words, the function words left out, which a search engine ranks otherwise. "" when
    that is the query already sent: there is nothing else to ask."""
    words = claim.split()
    key_words = [word.strip(".,;:!?") for word in words if word.strip(".,;:!?\"'()").lower() not in STOPWORDS]
    for candidate in (" ".join(words), " ".join(key_words)):
        candidate = candidate[:MAX_QUERY_CHARS]
        if candidate and _normal(candidate) != _normal(query):
            return candidate
    return ""


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")
