"""What the CPU pool's processes run (verification/worker/cpu.py hands the calls over): plain
pipeline code, no Django, no database, arguments in and results out. The parsing and ranking
are imported in the functions, so the process that only hands work over (the web server)
starts without them (seconds). cpu_child.init runs first in each process, then
`prepare_process`."""

import logging
from collections.abc import Sequence
from dataclasses import replace

from verification.pipeline import languages, lazy
from verification.pipeline.types import FetchedDocument, PageSentences, Passage

logger = logging.getLogger(__name__)


def prepare_process(embedding_model: str | None) -> None:
    # Each model runs on one thread per process (clients/embeddings.py): the pool is as wide as
    # the machine. torch is not imported here: the default ONNX backend needs none of it.
    warm_up(embedding_model)


# Its text is long enough, and English enough, to be told English without the language detector's
# model (languages.ENGLISH_WORDS_AT_LEAST): a process loads that model (~0.5 s of CPU, ~70 MB) at
# the first page that needs it (most English pages do not: 240 of WiCE's 349 pass that rule).
WARM_UP_PAGE = FetchedDocument(
    url="about:warm-up",
    final_url="about:warm-up",
    content_type="text/html",
    charset="utf-8",
    body=b"<html><head><title>Warm-up</title></head><body><article><p>A first page read by this process "
    b"loads the parser and the sentence splitter, so that the first page of a run is read as fast as the "
    b"others are.</p><p>It also runs the model once, with all that it needs, before it is asked to rank "
    b"the sentences of a page for a claim.</p></article></body></html>",
)


def warm_up(embedding_model: str | None) -> None:
    """Load the model and run every step once on a tiny page, so a new process's first real
    page does not pay for lazy imports and first-call setup."""
    try:
        page = read_page(WARM_UP_PAGE)
        if embedding_model:
            choose_excerpts(
                ["The model runs once."], page.sentences, top_k=1, context=0, embedding_model=embedding_model
            )
    except Exception:  # a warm-up that fails must not break the pool; real pages will tell
        logger.exception("warming up a CPU process failed")


def read_page(document: FetchedDocument, *, pdf_max_pages: int | None = None) -> PageSentences:
    extract, passages = lazy.load("verification.pipeline.extract"), lazy.load("verification.pipeline.passages")
    pages = extract.PDF_MAX_PAGES if pdf_max_pages is None else pdf_max_pages
    page = extract.read_document(document, pdf_max_pages=pages)
    # Split in its own language (issue 36), told from its first few thousand characters.
    language = languages.detect_language(page.text) or ""
    return replace(passages.split_page(page, language or "en"), language=language)


def choose_excerpts(
    claims: Sequence[str],
    sentences: Sequence[str],
    *,
    top_k: int,
    context: int,
    embedding_model: str | None,
    language: str = "en",
    claim_language: str | None = None,
) -> list[Passage | None]:
    """Each claim's evidence from one page: its best passages as one excerpt, or None. All the
    claims waiting for a page in one call, so the page is tokenised once. `language` is the
    page's (the claims' is `claim_language`, the same when not given): another than English is
    tokenised in it and re-scored by the multilingual model, or ranked by BM25 alone when that
    model cannot be loaded (clients/embeddings_languages.embedder_for)."""
    passages = lazy.load("verification.pipeline.passages")
    multilingual = lazy.load("verification.clients.embeddings_languages")
    embedder = multilingual.embedder_for(language, embedding_model, claim_language)
    corpus = passages.Corpus(sentences, language)
    return [
        passages.page_excerpt(passages.select_passages(claim, corpus, top_k=top_k, context=context, embedder=embedder))
        for claim in claims
    ]
