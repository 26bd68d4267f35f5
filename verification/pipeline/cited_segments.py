"""A text with citations → the sentences to check (issue 34): split from the text without its
markers and reference lists (`citations.read_citations`), so no marker reaches a claim and no
reference list is checked as sentences, each sentence keeping its span in the ORIGINAL text (the
page shows the text as it was pasted); and which sentence each citation belongs to.

A text without citations is split exactly as `segment.segment` splits it."""

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace

from . import segment
from .citations import CitedText, OffsetMap, citations_by_sentence
from .types import SegmentedSentence


def segment_cited(cited: CitedText, language: str = "en") -> list[SegmentedSentence]:
    """The sentences of the cleaned text, their `text` and context cleaned, their start and end in
    the original. `language`: the text's (ISO 639-1), which segment.segment splits it in."""
    if cited.text == cited.original:
        return segment.segment(cited.original, language)
    sentences = []
    for sentence in segment.segment(cited.text, language):
        start, end = cited.offsets.original_span(sentence.start, sentence.end)
        sentences.append(replace(sentence, start=start, end=end))
    return sentences


def sentence_of_citations(cited: CitedText, sentences: Sequence[SegmentedSentence]) -> list[int | None]:
    """For each of `cited.citations`, in order, the index of the sentence it belongs to (None when
    the text has no sentence). `sentences` as `segment_cited` gives them: spans in the original."""
    if not sentences:
        return [None] * len(cited.citations)
    spans = [_clean_span(cited.offsets, s.start, s.end) for s in sentences]
    attached = citations_by_sentence(cited.citations, spans)
    where = {}
    for position, citations in enumerate(attached):
        for citation in citations:
            where[id(citation)] = sentences[position].index
    return [where.get(id(citation)) for citation in cited.citations]


def _clean_span(offsets: OffsetMap, start: int, end: int) -> tuple[int, int]:
    """The inverse of `OffsetMap.original_span` for a span that begins and ends on kept text."""
    if end <= start:
        return _clean(offsets, start), _clean(offsets, start)
    return _clean(offsets, start), _clean(offsets, end - 1) + 1


def _clean(offsets: OffsetMap, position: int) -> int:
    piece = max(bisect_right(offsets.original_starts, position) - 1, 0)
    return offsets.clean_starts[piece] + position - offsets.original_starts[piece]
