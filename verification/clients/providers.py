"""The outside services, built from settings: one place that knows which class serves which
step. Clients are made once per process (per thread where they hold a requests session) so
connections are reused."""

import hashlib
import hmac
import logging
import threading
from typing import TYPE_CHECKING

import requests
from django.conf import settings
from django.core.cache import cache
from requests.exceptions import InvalidSchema, InvalidURL, MissingSchema
from urllib3.exceptions import NameResolutionError, NewConnectionError, ProtocolError

from verification.clients.fetch import PageFetcher
from verification.clients.llm_models import ModelChoice, parse_model_list
from verification.clients.search import (
    PROVIDER_LABELS,
    BraveSearch,
    SearchChain,
    SearxngSearch,
    SerperSearch,
    TavilySearch,
    WikipediaSearch,
)
from verification.pipeline import lazy
from verification.pipeline.types import StepError
from verification.pipeline.urls import UnsafeAddress, parse_web_address

if TYPE_CHECKING:
    from verification.clients.embeddings import SentenceEmbedder
    from verification.clients.llm import LLMClient

_local = threading.local()
logger = logging.getLogger(__name__)


def model_choices() -> list[ModelChoice]:
    return parse_model_list(settings.LLM_MODELS, settings.OPENAI_BASE_URL)


def model_names() -> list[str]:
    return [choice.name for choice in model_choices()]


def llm_client(model_name: str, *, priority: int = 0) -> "LLMClient":
    """The client for a configured model (run settings are validated against the list);
    `priority` orders its requests when LLM_CONCURRENCY makes them wait (lower first: the index
    of the sentence they serve)."""
    # Imports openai (over half a second): only where a model is asked, one thread at a time.
    LLMClient = lazy.load("verification.clients.llm").LLMClient  # noqa: N806
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
        concurrency=settings.LLM_CONCURRENCY,
        redis_url=settings.REDIS_URL,
        priority=priority,
        store=SHARED_CAPABILITIES,
        reasoning_effort=settings.LLM_REASONING_EFFORT,
        reasoning_tokens=settings.LLM_REASONING_TOKENS,
        context_tokens=choice.context_tokens or settings.LLM_CONTEXT_TOKENS,
    )


class _SharedCapabilities:
    """What each model's server takes, kept in the cache (Redis, or the SQLite cache shared by the
    embedded processes) so every process and worker learns a lesson from one refusal; a cache
    that fails keeps it in this process."""

    def __init__(self) -> None:
        self._here: dict[str, dict] = {}

    def get(self, key: str) -> dict | None:
        try:
            return cache.get(key)
        except Exception:  # any backend's connection error
            return self._here.get(key)

    def put(self, key: str, value: dict) -> None:
        self._here[key] = value
        try:
            cache.set(key, value, settings.LLM_CAPABILITIES_TTL)
        except Exception:
            logger.warning("could not keep what the model's server takes in the cache", exc_info=True)


SHARED_CAPABILITIES = _SharedCapabilities()


def _check_key(choice: ModelChoice) -> str:
    return f"factsite:llm-check:v1:{choice.base_url}|{choice.name}"


def model_check_keep(model_name: str, problem: str) -> None:
    """What `check_llm` found of a configured model ("" when it can be used), for /readyz."""
    choice = next((c for c in model_choices() if c.name == model_name), None)
    if choice is not None:
        cache.set(_check_key(choice), {"problem": problem}, settings.LLM_CAPABILITIES_TTL)


def model_checks() -> dict[str, str]:
    """{model: its problem, "" when usable} for the configured models `check_llm` has checked."""
    kept = {choice.name: cache.get(_check_key(choice)) for choice in model_choices()}
    return {name: found["problem"] for name, found in kept.items() if isinstance(found, dict)}


def _per_thread(factory, **config):
    """One client per thread and configuration: requests sessions are not thread-safe, and a
    changed setting must not keep using a client built from the old one, which is closed (its
    pooled connections with it) when a newer one of its kind replaces it."""
    clients = _local.__dict__.setdefault("clients", {})
    key = (factory, *sorted(config.items()))
    if key not in clients:
        for old in [k for k in clients if k[0] is factory]:
            session = getattr(clients.pop(old), "session", None)
            if session is not None:
                session.close()
        clients[key] = factory(**config)
    return clients[key]


# What each search provider needs before it is tried, in a person's words.
SEARCH_NEEDS = {
    "serper": "SERPER_API_KEY (a key from serper.dev)",
    "brave": "BRAVE_API_KEY (a key from brave.com/search/api)",
    "tavily": "TAVILY_API_KEY (a key from tavily.com)",
    "searxng": "SEARXNG_URL (your SearXNG instance, with its JSON format on)",
    "wikipedia": "WIKIPEDIA_BASE_URL (a MediaWiki API)",
}


def search_provider_names() -> list[str]:
    """SEARCH_PROVIDERS in order (a list, or a comma string as tests may set it)."""
    names = settings.SEARCH_PROVIDERS
    if isinstance(names, str):
        names = names.split(",")
    return [name.strip().lower() for name in names if name.strip()]


def search_provider() -> SearchChain:
    """The configured providers in SEARCH_PROVIDERS order; unknown or unconfigured ones are left
    out (configuration_problems names them before a run starts)."""
    clients = (_search_client(name) for name in search_provider_names())
    return SearchChain([client for client in clients if client is not None])


def _search_client(name: str):
    """One provider's client, or None when its key or address is not set."""
    timeout = settings.SEARCH_TIMEOUT
    if name == "serper" and settings.SERPER_API_KEY:
        return _per_thread(
            SerperSearch, api_key=settings.SERPER_API_KEY, base_url=settings.SERPER_BASE_URL, timeout=timeout
        )
    if name == "brave" and settings.BRAVE_API_KEY:
        return _per_thread(
            BraveSearch, api_key=settings.BRAVE_API_KEY, base_url=settings.BRAVE_BASE_URL, timeout=timeout
        )
    if name == "tavily" and settings.TAVILY_API_KEY:
        return _per_thread(
            TavilySearch, api_key=settings.TAVILY_API_KEY, base_url=settings.TAVILY_BASE_URL, timeout=timeout
        )
    if name == "searxng" and settings.SEARXNG_URL:
        return _per_thread(SearxngSearch, base_url=settings.SEARXNG_URL, timeout=timeout)
    if name == "wikipedia" and settings.WIKIPEDIA_BASE_URL:
        return _per_thread(WikipediaSearch, base_url=settings.WIKIPEDIA_BASE_URL, timeout=timeout)
    return None


def search_problem() -> str:
    """Why web search cannot work as configured ("" when it can)."""
    names = search_provider_names()
    unknown = [name for name in names if name not in PROVIDER_LABELS]
    if unknown:
        return (
            f"SEARCH_PROVIDERS names {', '.join(unknown)}, which factsite does not know: "
            f"use {', '.join(PROVIDER_LABELS)} (in the order to try them)."
        )
    if not names:
        return f"SEARCH_PROVIDERS is empty: list one or more of {', '.join(PROVIDER_LABELS)}."
    if search_provider().providers:
        return ""
    problem = f"Web search is not configured: set {', or '.join(SEARCH_NEEDS[name] for name in names)}."
    if "wikipedia" not in names:
        problem += " Or add wikipedia (no key needed) to SEARCH_PROVIDERS."
    return problem


def page_fetcher() -> PageFetcher:
    return _per_thread(
        PageFetcher,
        timeout=settings.FETCH_TIMEOUT,
        max_bytes=settings.FETCH_MAX_BYTES,
        max_pdf_bytes=settings.PDF_MAX_BYTES,
        allow_private=settings.ALLOW_PRIVATE_FETCH,
    )


def embedder(name: str | None = None) -> "SentenceEmbedder":
    # Imported here: numpy and the model's runtime are the CPU pool's, not every process's.
    return lazy.load("verification.clients.embeddings").shared_embedder(name or settings.EMBEDDING_MODEL)


def host_of(url: str) -> str:
    """The site a URL belongs to: its host name (without "www."), with the port when it is not
    the scheme's default, since two ports of one host can be two different sites. The host is
    the one the fetcher contacts (urls.parse_web_address); an address it refuses is shown as
    written, up to its path, never as one parser's guess."""
    try:
        address = parse_web_address(url)
    except UnsafeAddress:
        return url.split("://", 1)[-1].split("/", 1)[0][:255]
    host = address.host.removeprefix("www.")
    port = address.port
    return f"{host}:{port}" if port and port != {"http": 80, "https": 443}.get(address.scheme) else host


def configuration_problems(model_name: str | None = None, *, web_search: bool = True) -> list[str]:
    """What a person must set before a verification can work, in their words. `web_search`
    False: a run that reads only the user's documents, which needs no search provider."""
    problems = []
    choices = model_choices()
    if not choices:
        problems.append("No language model is configured: set LLM_MODELS (e.g. gpt-5-mini).")
    else:
        choice = next((c for c in choices if c.name == model_name), choices[0])
        if "api.openai.com" in choice.base_url and not settings.OPENAI_API_KEY:
            problems.append(
                f"The model {choice.name} is served by OpenAI, but no key is set: set OPENAI_API_KEY "
                "(or OPENAI_BASE_URL / LLM_MODELS to point at your own OpenAI-compatible server)."
            )
    if web_search and (problem := search_problem()):
        problems.append(problem)
    return problems


# How long the command line waits for the model's server to answer before a run.
LLM_SERVER_CHECK_S = 5.0


def llm_server_problem(model_name: str | None = None) -> str:
    """Why the model's server cannot be reached, in a person's words ("" when it answers): one
    GET of `{base_url}/models`, the OpenAI-compatible model list. Any HTTP answer will do, an
    error included (a server without the list answers 404); no connection (refused, a host name
    not found, no answer in time) or an answer that is not HTTP means the address is wrong or
    the server is down. A round trip to the server: the command line asks before a run."""
    choices = model_choices()
    choice = next((c for c in choices if c.name == model_name), choices[0] if choices else None)
    if choice is None:
        return ""
    variable = "OPENAI_BASE_URL" if choice.base_url == settings.OPENAI_BASE_URL else "LLM_MODELS"
    try:
        answer = requests.get(
            f"{choice.base_url.rstrip('/')}/models",
            headers={"Authorization": f"Bearer {settings.OPENAI_API_KEY or 'unused'}"},
            timeout=LLM_SERVER_CHECK_S,
            allow_redirects=False,
        )
    except requests.RequestException as error:
        return (
            f"Cannot reach the server of the model {choice.name} at {choice.base_url} ({variable}): "
            f"{_why_unreachable(error)}. Check the address and that the server is running."
        )
    if answer.status_code == 401:
        return f"The server of the model {choice.name} at {choice.base_url} refused the API key: check OPENAI_API_KEY."
    listed = _listed_models(answer)
    if listed and choice.name not in listed:
        return (
            f"The server at {choice.base_url} does not list the model {choice.name} (it lists "
            f"{', '.join(sorted(listed)[:8])}): check LLM_MODELS."
        )
    return ""


def _listed_models(answer: requests.Response) -> set[str]:
    """The model ids of an OpenAI-compatible model list (none from another answer)."""
    try:
        data = answer.json().get("data") if answer.status_code == 200 else None
    except (ValueError, AttributeError):
        return set()
    if not isinstance(data, list):
        return set()
    # Gemini lists "models/gemini-2.5-flash" for the model asked for as "gemini-2.5-flash".
    return {str(entry["id"]).removeprefix("models/") for entry in data if isinstance(entry, dict) and "id" in entry}


def _why_unreachable(error: requests.RequestException) -> str:
    if isinstance(error, requests.Timeout):
        return f"no answer within {LLM_SERVER_CHECK_S:g} s"
    if isinstance(error, InvalidSchema | InvalidURL | MissingSchema):
        return "that is not a web address"
    cause = error.args[0] if error.args else error
    cause = getattr(cause, "reason", cause)  # urllib3 wraps a failed connection in MaxRetryError
    if isinstance(cause, NameResolutionError):
        return "its host name was not found"
    if isinstance(cause, NewConnectionError) and isinstance(cause.__cause__, OSError):
        return (cause.__cause__.strerror or "no connection").lower()
    if isinstance(cause, ProtocolError):
        return "what answered there does not speak HTTP"
    return str(cause)


def run_needs(run_settings: dict) -> dict[str, str]:
    """The configuration a run depends on, by the variables a person sets, each as a keyed
    digest (never the key itself): compared when another process takes the run over, so it is
    not silently run with other keys, servers or search providers (see `needs_unmet`)."""
    needs = {}
    choice = next((c for c in model_choices() if c.name == run_settings.get("model")), None)
    if choice is not None:
        needs[f"the server of the model {choice.name} (OPENAI_BASE_URL / LLM_MODELS)"] = _digest(choice.base_url)
        needs["OPENAI_API_KEY"] = _digest(settings.OPENAI_API_KEY)
    # Documents and trails read only what the user gave: no search.
    if run_settings.get("evidence", "web") not in ("documents", "trail"):
        needs["SEARCH_PROVIDERS"] = _digest(",".join(search_provider_names()))
        for name in search_provider_names():
            for variable in _SEARCH_SETTINGS.get(name, ()):
                needs[variable] = _digest(str(getattr(settings, variable, "")))
    return needs


def needs_unmet(needs: dict[str, str], run_settings: dict) -> list[str]:
    """Which of a run's needs (`run_needs` where it was started) this process has otherwise."""
    here = run_needs(run_settings)
    return [variable for variable, digest in needs.items() if here.get(variable) != digest]


# The settings each search provider is built from (see _search_client).
_SEARCH_SETTINGS = {
    "serper": ("SERPER_API_KEY", "SERPER_BASE_URL"),
    "brave": ("BRAVE_API_KEY", "BRAVE_BASE_URL"),
    "tavily": ("TAVILY_API_KEY", "TAVILY_BASE_URL"),
    "searxng": ("SEARXNG_URL",),
    "wikipedia": ("WIKIPEDIA_BASE_URL",),
}


def _digest(value: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), value.encode(), hashlib.sha256).hexdigest()[:16]
