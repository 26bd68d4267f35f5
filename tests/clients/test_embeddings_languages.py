"""The multilingual re-scorer (issue 36): a page or claim in another language than English is
re-scored by EMBEDDING_MODEL_MULTILINGUAL; when that model cannot be loaded (no internet to fetch
it here), its passages are ranked by BM25 in their language, it is said once in the log, and the
reading step still ends with its passages."""

import logging
import time

import pytest

from verification.clients import embeddings, embeddings_languages
from verification.worker import cpu_work

ENGLISH_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PAGE = [
    "Der Bus wurde von der Stadt gekauft.",
    "Im Mai erteilten die Behörden den neuen Impfstoffen die Zulassung.",
    "Das Wetter war am Wochenende schön.",
]
CLAIM = "Der neue Impfstoff wurde von der Behörde zugelassen."


@pytest.fixture
def missing_model(tmp_path, monkeypatch):
    """EMBEDDING_MODEL_MULTILINGUAL names a model that is nowhere (and the hub is never asked)."""
    name = str(tmp_path / "no-such-multilingual-model")
    monkeypatch.setenv("EMBEDDING_MODEL_MULTILINGUAL", name)
    monkeypatch.setenv("EMBEDDING_CACHE_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return name


def test_the_default_multilingual_model_is_a_sentence_transformers_one(monkeypatch):
    monkeypatch.delenv("EMBEDDING_MODEL_MULTILINGUAL", raising=False)

    expected = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
    assert embeddings_languages.multilingual_model_name() == expected


def test_a_model_that_cannot_be_loaded_leaves_bm25_in_the_pages_language_and_the_step_ends(missing_model, caplog):
    caplog.set_level(logging.WARNING, logger=embeddings_languages.logger.name)

    def choose():
        return cpu_work.choose_excerpts([CLAIM], PAGE, top_k=1, context=0, embedding_model=ENGLISH_MODEL, language="de")

    def said():
        return [r.getMessage() for r in caplog.records if "ranked by BM25 alone" in r.getMessage()]

    first = choose()  # while the model is tried, in the background
    wait_until(said)
    chosen = [first, choose(), choose()]

    assert [excerpt.text for (excerpt,) in chosen] == [PAGE[1]] * 3
    assert len(said()) == 1 and missing_model in said()[0]


def test_the_multilingual_model_loads_in_the_background_and_ranks_once_loaded(monkeypatch):
    # A model that does load (the packaged English one stands in for a multilingual model here): the
    # first call does not wait for it, a later one gets it.
    monkeypatch.setenv("EMBEDDING_MODEL_MULTILINGUAL", ENGLISH_MODEL)
    monkeypatch.delitem(embeddings._loaded, ENGLISH_MODEL, raising=False)

    assert embeddings_languages.embedder_for("de", ENGLISH_MODEL) is None, "not loaded yet: BM25 meanwhile"
    loaded = wait_until(lambda: embeddings_languages.embedder_for("de", ENGLISH_MODEL))

    assert loaded is embeddings.shared_embedder(ENGLISH_MODEL)
    chosen = cpu_work.choose_excerpts([CLAIM], PAGE, top_k=1, context=0, embedding_model=ENGLISH_MODEL, language="de")
    assert [excerpt.text for excerpt in chosen] == [PAGE[1]]


def wait_until(condition, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return value


def test_a_claim_in_another_language_than_its_page_asks_for_the_multilingual_model(missing_model):
    assert embeddings_languages.embedder_for("en", ENGLISH_MODEL, claim_language="es") is None  # it cannot load here
    assert embeddings_languages.embedder_for("de", None) is None  # sparse mode: no model at all


def test_no_multilingual_model_set_means_bm25_for_other_languages_without_trying_one(monkeypatch):
    monkeypatch.setenv("EMBEDDING_MODEL_MULTILINGUAL", "")

    assert embeddings_languages.embedder_for("zh", ENGLISH_MODEL) is None


def test_english_pages_keep_the_english_model():
    english = embeddings_languages.embedder_for("en", ENGLISH_MODEL)

    assert english is embeddings.shared_embedder(ENGLISH_MODEL)
    assert embeddings_languages.embedder_for(None, ENGLISH_MODEL) is english
