"""Sentences grouped as decompose.chunks groups them: one decompose call per group, and the
same groups are judged together."""

import logging

from django.conf import settings

from verification.models import (
    Sentence,
)
from verification.pipeline import decompose
from verification.pipeline.types import (
    SegmentedSentence,
)

logger = logging.getLogger(__name__)


def segmented(sentence: Sentence) -> SegmentedSentence:
    return SegmentedSentence(
        index=sentence.index,
        text=sentence.text,
        start=sentence.start,
        end=sentence.end,
        paragraph_index=sentence.paragraph_index,
        context=tuple(sentence.context),
        position_in_context=sentence.position_in_context,
    )


def decompose_chunks(sentences) -> list[list[int]]:
    """Sentence ids grouped as decompose.chunks groups them (the same groups are judged together)."""
    sentences = list(sentences)
    by_index = {sentence.index: sentence.pk for sentence in sentences}
    asked = [segmented(sentence) for sentence in sentences]
    chunked = decompose.chunks(asked, max_sentences=settings.DECOMPOSE_CHUNK_SENTENCES)
    return [[by_index[s.index] for s in chunk] for chunk in chunked]
