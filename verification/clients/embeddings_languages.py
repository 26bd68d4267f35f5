"""A text in another language than English (issue 36): its pages are re-scored by a multilingual
model (EMBEDDING_MODEL_MULTILINGUAL), or, while that loads and when it cannot be loaded, ranked by
BM25 alone in their language. The English model and the loading code are clients/embeddings.py's."""

import logging
import os
import threading

from verification.clients import embeddings

logger = logging.getLogger(__name__)

# What ranks the passages of a text in another language: a sentence-transformers model trained on
# parallel sentences of 50+ languages, the same size and shape as the English model (MiniLM,
# 384 dimensions, mean pooling), so it runs on the same backends. The hub gives it to a machine
# with internet on its first use (or scripts/setup.sh's export); with none, BM25 ranks alone.
DEFAULT_MULTILINGUAL_MODEL = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
_unavailable: dict[str, str] = {}


def multilingual_model_name() -> str:
    """EMBEDDING_MODEL_MULTILINGUAL (read here like EMBEDDING_BACKEND: the CPU pool's processes
    have no Django settings); empty: no dense ranking for other languages."""
    return os.environ.get("EMBEDDING_MODEL_MULTILINGUAL", DEFAULT_MULTILINGUAL_MODEL).strip()


def embedder_for(
    language: str | None, english_model: str | None, claim_language: str | None = None
) -> embeddings.SentenceEmbedder | None:
    """What re-scores a page's passages in `language` (ISO 639-1) for claims in `claim_language`
    (the page's when not given) when dense ranking is on (`english_model`, the run's
    EMBEDDING_MODEL; None: sparse, no model at all): that model when both are English or not
    known, else the multilingual one (it also matches a Spanish claim to an English page), or
    None (BM25 per language) when that is not set or cannot be loaded."""
    if not english_model:
        return None
    if all((code or "en").lower() == "en" for code in (language, claim_language)):
        return embeddings.shared_embedder(english_model)
    name = multilingual_model_name()
    return optional_embedder(name) if name else None


def optional_embedder(name: str) -> embeddings.SentenceEmbedder | None:
    """The model (embeddings.shared_embedder) once it has loaded; None until then, and for good
    when it cannot be loaded (no internet to fetch it, a wrong name; said once per process and
    model): passages are ranked by BM25 alone meanwhile. It loads in a thread of its own, started by the first
    call: fetching and exporting a model takes minutes, and inside a page's time limit
    (cpu_child.call_with_time_limit) the load was cut short at every page that asked for it."""
    loaded = embeddings.loaded(name)
    if loaded is not None or name in _unavailable:
        return loaded
    with _starting_lock:
        if name not in _loading:
            _loading[name] = threading.Thread(
                target=_load_in_background, args=(name,), name=f"loading {name}", daemon=True
            )
            _loading[name].start()
    return None


_loading: dict[str, threading.Thread] = {}
_starting_lock = threading.Lock()


def _load_in_background(name: str) -> None:
    try:
        embeddings.shared_embedder(name)
    except Exception as error:  # any failure to load: runs go on without dense ranking
        _unavailable[name] = str(error)
        logger.warning(
            "embedding model %s could not be loaded (%s): passages in other languages than English "
            "are ranked by BM25 alone",
            name,
            _first_line(error),
        )


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
