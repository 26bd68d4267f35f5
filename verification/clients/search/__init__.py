"""Web search providers, each speaking its own API and answering `search(query, num) ->
list[SearchHit]` with hits that name it, and the chain that tries them in order."""

from .brave import BraveSearch
from .chain import SearchChain
from .http import retrying_session
from .searxng import SearxngSearch
from .serper import SerperSearch
from .tavily import TavilySearch
from .wikipedia import WikipediaSearch

PROVIDER_CLASSES = (SerperSearch, BraveSearch, TavilySearch, SearxngSearch, WikipediaSearch)
# "serper" → "Serper": how a person reads a provider's name.
PROVIDER_LABELS = {cls.name: cls.label for cls in PROVIDER_CLASSES}

__all__ = [
    "PROVIDER_LABELS",
    "BraveSearch",
    "SearchChain",
    "SearxngSearch",
    "SerperSearch",
    "TavilySearch",
    "WikipediaSearch",
    "retrying_session",
]
