"""The outside services, built from settings: one place that knows which class serves which
step. Clients are made once per process (per thread where they hold a requests session) so
connections are reused."""

import threading
from urllib.parse import urlsplit

from django.conf import settings

from verification.clients.embeddings import SentenceEmbedder, shared_embedder
from verification.clients.fetch import PageFetcher
from verification.clients.llm import LLMClient, ModelChoice, parse_model_list
from verification.clients.search import SerperSearch
from verification.pipeline.types import StepError

_local = threading.local()


def model_choices() -> list[ModelChoice]:
    return parse_model_list(settings.LLM_MODELS, settings.OPENAI_BASE_URL)


def model_names() -> list[str]:
    return [choice.name for choice in model_choices()]


def llm_client(model_name: str) -> LLMClient:
    """The client for a configured model (run settings are validated against the list)."""
    choice = next((c for c in model_choices() if c.name == model_name), None)
    if choice is None:
        raise StepError(f"the model {model_name} is not configured any more (LLM_MODELS)")
    return LLMClient(
        model=choice.name,
        base_url=choice.base_url,
        api_key=settings.OPENAI_API_KEY,
        timeout=settings.LLM_TIMEOUT,
        max_retries=settings.LLM_MAX_RETRIES,
        retry_budget=settings.LLM_RETRY_BUDGET,
    )


def _per_thread(factory, **config):
    """One client per thread and configuration: requests sessions are not thread-safe, and a
    changed setting must not keep using a client built from the old one."""
    clients = _local.__dict__.setdefault("clients", {})
    key = (factory, *sorted(config.items()))
    if key not in clients:
        clients[key] = factory(**config)
    return clients[key]


def search_provider() -> SerperSearch:
    return _per_thread(
        SerperSearch,
        api_key=settings.SERPER_API_KEY,
        base_url=settings.SERPER_BASE_URL,
        timeout=settings.SEARCH_TIMEOUT,
    )


def page_fetcher() -> PageFetcher:
    return _per_thread(
        PageFetcher,
        timeout=settings.FETCH_TIMEOUT,
        max_bytes=settings.FETCH_MAX_BYTES,
        allow_private=settings.ALLOW_PRIVATE_FETCH,
    )


def embedder(name: str | None = None) -> SentenceEmbedder:
    return shared_embedder(name or settings.EMBEDDING_MODEL)


def host_of(url: str) -> str:
    """The site a URL belongs to: its host name (without "www."), with the port when it is not
    the scheme's default, since two ports of one host can be two different sites."""
    parts = urlsplit(url)
    host = (parts.hostname or "").removeprefix("www.")
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port and port != {"http": 80, "https": 443}.get(parts.scheme) else host


def configuration_problems(model_name: str | None = None) -> list[str]:
    """What a person must set before a verification can work, in their words."""
    problems = []
    choices = model_choices()
    if not choices:
        problems.append("No language model is configured: set LLM_MODELS (e.g. gpt-4o-mini).")
    else:
        choice = next((c for c in choices if c.name == model_name), choices[0])
        if "api.openai.com" in choice.base_url and not settings.OPENAI_API_KEY:
            problems.append(
                f"The model {choice.name} is served by OpenAI, but no key is set: set OPENAI_API_KEY "
                "(or OPENAI_BASE_URL / LLM_MODELS to point at your own OpenAI-compatible server)."
            )
    if not settings.SERPER_API_KEY:
        problems.append("Web search is not configured: set SERPER_API_KEY (a key from serper.dev).")
    return problems
