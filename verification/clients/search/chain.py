"""Several providers behind the one `search(query, num)`: the first that answers wins. A
failure (unreachable, out of credits, key refused) hands the query to the next; an empty
answer is an answer, since another engine finding nothing is no reason to ask a second."""

import logging
from typing import Protocol

from verification.pipeline.types import SearchHit, StepError

logger = logging.getLogger(__name__)


class NamedProvider(Protocol):
    label: str
    endpoint: str

    def search(self, query: str, num: int, *, language: str | None = None) -> list[SearchHit]: ...


class SearchChain:
    def __init__(self, providers: list[NamedProvider]) -> None:
        self.providers = providers

    @property
    def endpoint(self) -> str:
        """Every endpoint in order: what a cached answer depends on."""
        return " > ".join(provider.endpoint for provider in self.providers)

    def search(self, query: str, num: int, *, language: str | None = None) -> list[SearchHit]:
        """`language`: the ISO 639-1 code of the query's language, which each provider asks its
        engine for in its own terms (None: as before languages were read)."""
        if not self.providers:
            raise StepError("no search provider is configured (SEARCH_PROVIDERS)")
        reasons: list[str] = []
        for provider in self.providers:
            try:
                hits = provider.search(query, num, language=language)
            except StepError as error:
                reasons.append(str(error))
                continue
            if reasons:
                logger.info("search fell back to %s for %r: %s", provider.label, query, "; ".join(reasons))
            return hits
        if len(reasons) == 1:
            raise StepError(reasons[0])
        raise StepError(f"every search provider failed: {'; '.join(reasons)}")
