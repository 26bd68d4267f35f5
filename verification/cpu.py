"""CPU-bound work of a run (parsing downloaded pages, splitting them into sentences, ranking
passages) in a pool of processes. A worker's threads spend most of their time waiting on the
LLM, the search API and web pages; with this work in the same interpreter they also waited on
each other for its lock, and real pages (100 KB–1 MB) made runs CPU-bound on two cores. The
threads now hand the work over and wait without holding the lock.

The functions the pool runs are plain pipeline code: no Django, no database, arguments in and
results out. CPU_PROCESSES=0 runs them in the calling thread instead."""

import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from verification.clients.embeddings import shared_embedder
from verification.pipeline import extract, passages
from verification.pipeline.types import FetchedDocument, PageSentences, Passage

T = TypeVar("T")
logger = logging.getLogger(__name__)

_pool: ProcessPoolExecutor | None = None
_pool_pid: int | None = None
_lock = threading.Lock()

# --- in the pool's processes


def _child_init(embedding_model: str | None) -> None:
    # One core per process: the pool is as wide as the machine, so torch's own threads would
    # only fight each other.
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    _warm_up(embedding_model)


WARM_UP_PAGE = FetchedDocument(
    url="about:warm-up",
    final_url="about:warm-up",
    content_type="text/html",
    charset="utf-8",
    body=b"<html><head><title>Warm-up</title></head><body><article><p>A first page read by this process "
    b"loads the parser and the sentence splitter.</p><p>It also runs the model once.</p></article></body></html>",
)


def _warm_up(embedding_model: str | None) -> None:
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


def read_page(document: FetchedDocument, *, pdf_max_pages: int = extract.PDF_MAX_PAGES) -> PageSentences:
    return passages.split_page(extract.read_document(document, pdf_max_pages=pdf_max_pages))


def choose_excerpts(
    claims: Sequence[str], sentences: Sequence[str], *, top_k: int, context: int, embedding_model: str | None
) -> list[Passage | None]:
    """Each claim's evidence from one page: its best passages as one excerpt, or None. All the
    claims waiting for a page in one call, so the page is tokenised once."""
    embedder = shared_embedder(embedding_model) if embedding_model else None
    corpus = passages.Corpus(sentences)
    return [
        passages.page_excerpt(passages.select_passages(claim, corpus, top_k=top_k, context=context, embedder=embedder))
        for claim in claims
    ]


# --- in the worker


def run(function: Callable[..., T], *args, **kwargs) -> T:
    """`function(*args, **kwargs)` in the pool (or here, without one). A pool whose process
    died (killed, out of memory) is replaced and the call tried once more."""
    pool = _get_pool()
    if pool is None:
        return function(*args, **kwargs)
    try:
        return pool.submit(function, *args, **kwargs).result()
    except BrokenProcessPool:
        logger.warning("a CPU process died; starting a new pool")
        _discard(pool)
        pool = _get_pool()
        return pool.submit(function, *args, **kwargs).result()


def start(*, warm_embedding_model: str | None = None, wait: bool = False) -> None:
    """Start the pool now (at worker start), loading the embedding model in every process, so
    the first run does not pay for it; `wait` returns once they are ready."""
    from django.conf import settings

    pool = _get_pool(warm_embedding_model)
    if pool is None:
        if warm_embedding_model:
            loading = threading.Thread(target=_warm_up, args=(warm_embedding_model,), daemon=True)
            loading.start()
            if wait:
                loading.join()
        return
    # Submitted together, so that each finds no idle process and one is started for it.
    started = [pool.submit(_ready) for _ in range(settings.CPU_PROCESSES)]
    if wait:
        for future in started:
            future.result()


def _ready() -> None:
    """Nothing: the process's initializer did the work."""


def _get_pool(embedding_model: str | None = None) -> ProcessPoolExecutor | None:
    from django.conf import settings

    global _pool, _pool_pid
    if settings.CPU_PROCESSES <= 0:
        return None
    with _lock:
        if _pool is None or _pool_pid != os.getpid():  # a forked child must not share its parent's pool
            # spawn, not fork: forking a process that runs threads can copy a held lock.
            _pool = ProcessPoolExecutor(
                max_workers=settings.CPU_PROCESSES,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_child_init,
                initargs=(embedding_model,),
            )
            _pool_pid = os.getpid()
        return _pool


def _discard(pool: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)
