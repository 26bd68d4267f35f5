"""The runs one browser or API caller started ("My checks"): newest first, each with what a
list needs to tell them apart, and nobody else's."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from verification.inputs.documents import EVIDENCE_MODES
from verification.models import Verification
from verification.scoring import BAND_LABELS, compute_scores
from verification.selectors.records import evidence_records_of_runs, permalink
from verification.selectors.result_json import evidence_mode
from verification.selectors.result_page import title_words


@dataclass(frozen=True)
class CheckRow:
    id: str
    permalink: str
    title: str
    created_at: datetime
    status: str
    score: float | None
    band: str
    band_label: str
    evidence: str


def runs_started_by(creator: str) -> QuerySet:
    """Only runs with this creator key: an empty key (no token) lists nothing."""
    if not creator:
        return Verification.objects.none()
    return Verification.objects.filter(creator=creator).order_by("-created_at", "pk")


def check_rows(runs) -> list[CheckRow]:
    """Each run's overall score under the default rule and view, as its page first shows it;
    the evidence of every run listed is read in one query."""
    runs = list(runs)
    records = evidence_records_of_runs(run.pk for run in runs)
    rows = []
    for run in runs:
        overall = compute_scores(records[run.pk]).overall
        rows.append(
            CheckRow(
                id=str(run.pk),
                permalink=permalink(run),
                title=title_words(run.text),
                created_at=run.created_at,
                status=run.status,
                score=overall.score,
                band=overall.band,
                band_label=BAND_LABELS[overall.band],
                evidence=dict(EVIDENCE_MODES).get(evidence_mode(run), ""),
            )
        )
    return rows
