"""A page's text + a claim → the passages most likely to confirm or refute it.

Sentences are ranked against the claim, the top K are kept with ±M sentences of context, and
overlapping windows are merged into one passage. Sparse mode is BM25 over stemmed words. Dense
mode re-scores a shortlist with sentence embeddings and blends the two (min-max normalised, half
each): measured on real pages that matches embedding every sentence in quality at a fraction of
the CPU, and beats either signal alone (see ENVIRONMENT.md, passage selection).

The shortlist is BM25's best sentences plus the sentence after each of the very best: evidence
often goes on in a sentence that names its subject only as "it" or "the company", which shares
no word with the claim. A line the page repeats (its title as meta title, heading and
breadcrumb; a caption) is ranked once: its copies take no slot in the top K or the shortlist.

A page in another language than English is split and tokenised in that language (`language`,
ISO 639-1: segment.py and language_words.py); English is the default."""

import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
from rank_bm25 import BM25Okapi

from . import language_words, lazy, stopwords
from .segment import split_sentences
from .types import Embedder, Page, PageSentences, Passage

# Measured on WiCE dev (bench/rescorer.py): 20 keeps recall@5 and the share of claims with a
# whole gold set in the top 5 within 0.01 of 30 with about two thirds of the encoding; 15 lost
# 0.0125 of the latter.
DENSE_SHORTLIST = 20
# The sentences right after this many of BM25's best join the dense shortlist (see above).
FOLLOWERS = 6
DENSE_WEIGHT = 0.5
MAX_PAGE_SENTENCES = 3000

STOPWORDS = stopwords.ENGLISH


class _BM25(BM25Okapi):
    """BM25 with Lucene's IDF, which never goes negative. Okapi's does for a word in more than
    half the sentences, and on a short page that can zero out the very sentence that states
    the claim."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {word: math.log(1 + (self.corpus_size - n + 0.5) / (n + 0.5)) for word, n in nd.items()}
        self.average_idf = sum(self.idf.values()) / max(1, len(self.idf))


def page_sentences(text: str, language: str = "en") -> list[str]:
    """The page's sentences, line by line (extraction puts each block on its own line)."""
    sentences = [span.text for span in split_sentences(text, language=language)]
    return sentences[:MAX_PAGE_SENTENCES]


def split_page(page: Page, language: str = "en") -> PageSentences:
    return PageSentences(
        url=page.url,
        final_url=page.final_url,
        title=page.title,
        sentences=tuple(page_sentences(page.text, language)),
        published=page.published,
    )


# nltk through `lazy`, which keeps it from importing scipy and scikit-learn (seconds of CPU).
_STEMMER = lazy.load("nltk.stem.snowball").SnowballStemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    """Stemmed, so that "opened" finds "opening" and "vaccines" finds "vaccine" (a page's
    vocabulary is small next to its words: the cache makes it nearly free)."""
    return _STEMMER.stem(word)


def tokenize(text: str) -> list[str]:
    # The words of wordpunct_tokenize (\w+|[^\w\s]+) that hold a word character are exactly its
    # \w+ runs: found directly, a third of the time.
    return [_stem(token) for token in _WORDS.findall(text.lower()) if token not in STOPWORDS]


def tokenizer(language: str | None) -> Callable[[str], list[str]]:
    """How BM25 reads a text in `language`: `tokenize` for English (or no language), else
    language_words's tokenizer for it."""
    return tokenize if language_words.english(language) else language_words.tokenizer(language)


def select_passages(
    claim: str,
    sentences: Sequence[str],
    *,
    top_k: int,
    context: int,
    embedder: Embedder | None = None,
    language: str = "en",
) -> list[Passage]:
    """Up to `top_k` best sentences, each with `context` sentences either side, overlapping
    windows merged; passages best first. `embedder` switches on dense re-scoring. `language` is
    the sentences' when they are not a Corpus (which knows its own)."""
    if not sentences:
        return []
    corpus = sentences if isinstance(sentences, Corpus) else Corpus(sentences, language)
    scores = rank_sentences(claim, corpus, embedder)
    best = _first_distinct(corpus, np.argsort(-scores, kind="stable"), top_k, scores)
    windows = merge_windows(best, context, len(sentences))
    passages = [_passage(sentences, window, best, scores) for window in windows]
    return sorted(passages, key=lambda passage: -passage.score)


class Corpus(Sequence[str]):
    """A page's sentences with their BM25 index, built once for every claim ranked against the
    page (tokenising a long page costs more than ranking it), tokenised in the page's language."""

    def __init__(self, sentences: Sequence[str], language: str = "en") -> None:
        self.sentences = list(sentences)
        self.language = language
        self.tokenize = tokenizer(language)
        self._bm25: _BM25 | None = None
        self._keys: list[str] | None = None

    def __getitem__(self, index):
        return self.sentences[index]

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def bm25(self) -> _BM25:
        if self._bm25 is None:
            self._bm25 = _BM25([self.tokenize(s) or ["\0"] for s in self.sentences])
        return self._bm25

    @property
    def keys(self) -> list[str]:
        """Each sentence as compared for repeats: case, spacing and punctuation aside."""
        if self._keys is None:
            self._keys = [" ".join(_WORDS.findall(s.lower())) for s in self.sentences]
        return self._keys


_WORDS = re.compile(r"\w+")


def _first_distinct(corpus: Corpus, order: Sequence[int], count: int, scores: np.ndarray | None = None) -> list[int]:
    """The first `count` sentences of `order` whose text has not come before in it (and, with
    `scores`, that score above zero)."""
    chosen, seen = [], set()
    for i in order:
        if len(chosen) == count or (scores is not None and scores[i] <= 0):
            break
        key = corpus.keys[i]
        if key not in seen:
            seen.add(key)
            chosen.append(int(i))
    return chosen


def rank_sentences(claim: str, sentences: Sequence[str], embedder: Embedder | None, language: str = "en") -> np.ndarray:
    corpus = sentences if isinstance(sentences, Corpus) else Corpus(sentences, language)
    query = corpus.tokenize(claim)
    sparse = np.asarray(corpus.bm25.get_scores(query), dtype=float) if query else np.zeros(len(sentences))
    sparse = np.clip(sparse, 0, None)
    if embedder is None:
        return sparse
    shortlist = np.asarray(_shortlist(corpus, sparse), dtype=int)
    vectors = embedder.encode([claim] + [sentences[i] for i in shortlist])
    dense = np.clip(vectors[1:] @ vectors[0], 0, None)
    blended = np.zeros(len(sentences))
    blended[shortlist] = (1 - DENSE_WEIGHT) * _min_max(sparse[shortlist]) + DENSE_WEIGHT * _min_max(dense)
    # A sentence with no shared word and no semantic similarity is not evidence.
    blended[shortlist] = np.where((sparse[shortlist] > 0) | (dense > 0.2), blended[shortlist], 0)
    return blended


def _shortlist(corpus: Corpus, sparse: np.ndarray) -> list[int]:
    """What dense mode re-scores: BM25's best distinct sentences, and the sentence after each of
    the best few (when it is not among them already)."""
    best = _first_distinct(corpus, np.argsort(-sparse, kind="stable"), DENSE_SHORTLIST)
    chosen = set(best)
    followers = [i + 1 for i in best[:FOLLOWERS] if sparse[i] > 0 and i + 1 < len(corpus) and i + 1 not in chosen]
    return best + list(dict.fromkeys(followers))


def _min_max(values: np.ndarray) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.ones_like(values) if high > 0 else np.zeros_like(values)
    return (values - low) / (high - low)


def merge_windows(indices: Sequence[int], context: int, count: int) -> list[tuple[int, int]]:
    """Windows [i-context, i+context] (inclusive, clipped), overlapping or touching ones merged,
    in page order."""
    windows: list[tuple[int, int]] = []
    for i in sorted(indices):
        start, end = max(0, i - context), min(count - 1, i + context)
        if windows and start <= windows[-1][1] + 1:
            windows[-1] = (windows[-1][0], max(windows[-1][1], end))
        else:
            windows.append((start, end))
    return windows


def _passage(sentences: Sequence[str], window: tuple[int, int], best: list[int], scores: np.ndarray) -> Passage:
    parts, highlights, position = [], [], 0
    for i in range(window[0], window[1] + 1):
        if parts:
            position += 1
        if i in best:
            highlights.append((position, position + len(sentences[i])))
        parts.append(sentences[i])
        position += len(sentences[i])
    matched = [float(scores[i]) for i in best if window[0] <= i <= window[1]]
    return Passage(text=" ".join(parts), highlights=tuple(highlights), score=max(matched), position=window[0])


EXCERPT_GAP = " … "

# A sentence opening with one of these may name its subject only in the sentence before it.
_REFERRING = frozenset("it its he his she her they their them this these those that there such".split())


def shares_a_word(claim: set[str], sentence: set[str], passage: Sequence[set[str]]) -> bool:
    """judged_text's rule for a context sentence (its words, the claim's, every sentence's of the
    passage): kept when it shares a word with the claim, a BM25 score above zero. Stricter rules
    (a word rare in the passage, two words) lost 4–13 points of the gold evidence WiCE puts in
    the context for 5–15 % less reading (bench/judged_context.py)."""
    return bool(claim & sentence)


def judged_text(
    claim: str,
    passage: str,
    highlights: Sequence[tuple[int, int]],
    related: Callable[[set[str], set[str], Sequence[set[str]]], bool] = shares_a_word,
    language: str = "en",
) -> str:
    """What the judge reads of an excerpt: the ranker's chosen sentences (`highlights`) and,
    of their context, the sentences `related` to the claim (they share a word with it) or that
    come right before a kept sentence opening with "it", "she", "this"… (they may be what it
    refers to). Context with no word of the claim is what the ranker scored unrelated: filler,
    menus, captions. Left-out text is marked with an ellipsis, as between excerpts. Without
    highlights (nothing says what the ranker chose) the passage is read whole. `language` is the
    passage's (its sentences and words are read in it)."""
    if not highlights:
        return passage
    words_of = tokenizer(language)
    words = set(words_of(claim))
    excerpts, at = [], 0
    for excerpt in passage.split(EXCERPT_GAP):
        excerpts.append(
            [(span, set(words_of(span.text))) for span in split_sentences(excerpt, offset=at, language=language)]
        )
        at += len(excerpt) + len(EXCERPT_GAP)
    every = [sentence_words for spans in excerpts for _, sentence_words in spans]
    runs: list[str] = []  # kept sentences in a row, an ellipsis between runs
    for spans in excerpts:
        keep = [
            any(s.start < end and start < s.end for start, end in highlights) or related(words, sentence_words, every)
            for s, sentence_words in spans
        ]
        for i in range(len(spans) - 1, 0, -1):
            if keep[i] and _opening_word(spans[i][0].text) in _REFERRING:
                keep[i - 1] = True
        run: list[str] = []
        for (span, _), kept in zip(spans, keep, strict=True):
            if kept:
                run.append(span.text)
            elif run:
                runs.append(" ".join(run))
                run = []
        if run:
            runs.append(" ".join(run))
    return EXCERPT_GAP.join(runs) or passage


def _opening_word(sentence: str) -> str:
    match = _WORDS.search(sentence)
    return match.group(0).lower() if match else ""


def page_excerpt(passages: Sequence[Passage]) -> Passage | None:
    """A page's chosen passages as one piece of evidence: in page order, joined by an ellipsis
    (they are excerpts of one text), every passage's highlights kept. One page is one vote, so
    how many passages are kept changes what the judge reads, not how much the page weighs."""
    if not passages:
        return None
    parts, highlights, position = [], [], 0
    for passage in sorted(passages, key=lambda p: p.position):
        if parts:
            position += len(EXCERPT_GAP)
        highlights.extend((position + start, position + end) for start, end in passage.highlights)
        parts.append(passage.text)
        position += len(passage.text)
    return Passage(
        text=EXCERPT_GAP.join(parts),
        highlights=tuple(highlights),
        score=max(p.score for p in passages),
        position=min(p.position for p in passages),
    )
