"""Credibility scores: one pure implementation for the worker, the live recompute and the API.

credibility = supported ÷ (supported + not supported), over the evidence the viewer includes.
Evidence judged irrelevant (or not judged) is left out of both counts: a passage that does not
address a claim says nothing about whether it is true. No counted evidence → no score (None),
which is not the same as 0."""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

SUPPORTED = "supported"
NOT_SUPPORTED = "not_supported"
COUNTED_VERDICTS = (SUPPORTED, NOT_SUPPORTED)

# Bands: red [0, 0.3), orange [0.3, 0.6), green [0.6, 1]; "none" when there is no score.
BANDS = ((0.6, "green"), (0.3, "orange"), (0.0, "red"))
BAND_LABELS = {"green": "mostly supported", "orange": "mixed", "red": "mostly unsupported", "none": "no evidence"}


class EvidenceRecord(NamedTuple):
    # A named tuple, not a dataclass: a large run has thousands, cached and unpickled on every
    # live recompute.
    id: int
    sentence_index: int
    source_type: str
    verdict: str


@dataclass(frozen=True)
class Tally:
    supported: int = 0
    total: int = 0

    @property
    def score(self) -> float | None:
        return self.supported / self.total if self.total else None

    @property
    def band(self) -> str:
        return band(self.score)


@dataclass(frozen=True)
class Scores:
    sentences: dict[int, Tally]
    overall: Tally
    # Share of counted evidence per source type, in percent (sums to 100 when any is counted).
    distribution: dict[str, float]


def band(score: float | None) -> str:
    if score is None:
        return "none"
    return next(name for threshold, name in BANDS if score >= threshold)


def is_included(record: EvidenceRecord, excluded_ids: frozenset[int], excluded_types: frozenset[str]) -> bool:
    return record.id not in excluded_ids and record.source_type not in excluded_types


def compute_scores(
    evidence: Iterable[EvidenceRecord],
    *,
    excluded_ids: Iterable[int] = (),
    excluded_types: Iterable[str] = (),
) -> Scores:
    excluded_ids, excluded_types = frozenset(excluded_ids), frozenset(excluded_types)
    supported: Counter[int] = Counter()
    total: Counter[int] = Counter()
    types: Counter[str] = Counter()
    for record in evidence:
        if record.verdict not in COUNTED_VERDICTS or not is_included(record, excluded_ids, excluded_types):
            continue
        total[record.sentence_index] += 1
        supported[record.sentence_index] += record.verdict == SUPPORTED
        types[record.source_type] += 1
    counted = sum(total.values())
    return Scores(
        sentences={i: Tally(supported[i], total[i]) for i in total},
        overall=Tally(sum(supported.values()), counted),
        distribution={t: 100 * n / counted for t, n in types.items()},
    )
