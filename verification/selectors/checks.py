"""The runs one browser or API caller started ("My checks"): newest first, each with what a
list needs to tell them apart, and nobody else's."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, QuerySet

from verification.inputs.documents import EVIDENCE_MODES
from verification.models import Claim, ClaimStatus, Verification
from verification.scoring import BAND_LABELS, band, compute_scores, trail_score, trail_score_words
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
    # An edited copy names the run it was edited from (its title is often the same): its id and
    # when it was started. None for a run that was not edited from another (or whose original is gone).
    edited_from: str | None
    edited_from_created_at: datetime | None


def runs_started_by(creator: str) -> QuerySet:
    """Only runs with this creator key: an empty key (no token) lists nothing. The run each was
    edited from is joined in the same query (when it was started, to tell the copy apart)."""
    if not creator:
        return Verification.objects.none()
    runs = Verification.objects.filter(creator=creator).annotate(edited_from_created_at=F("edited_from__created_at"))
    return runs.order_by("-created_at", "pk")


def check_rows(runs) -> list[CheckRow]:
    """Each run's overall score under the default rule and view, as its page first shows it;
    the evidence of every run listed is read in one query."""
    runs = list(runs)
    records = evidence_records_of_runs(run.pk for run in runs)
    trail_verdicts = _trail_verdicts([run.pk for run in runs if evidence_mode(run) == "trail"])
    rows = []
    for run in runs:
        if evidence_mode(run) == "trail":  # the share of its claims fully supported down the trail
            score = trail_score(trail_verdicts[run.pk])
            label = trail_score_words(trail_verdicts[run.pk])
            mode = "the steps that made it"
        else:
            score = compute_scores(records[run.pk]).overall.score
            label = BAND_LABELS[band(score)]
            mode = dict(EVIDENCE_MODES).get(evidence_mode(run), "")
        rows.append(
            CheckRow(
                id=str(run.pk),
                permalink=permalink(run),
                title=title_words(run.text),
                created_at=run.created_at,
                status=run.status,
                score=score,
                band=band(score),
                band_label=label,
                evidence=mode,
                edited_from=str(run.edited_from_id) if run.edited_from_id else None,
                edited_from_created_at=getattr(run, "edited_from_created_at", None),
            )
        )
    return rows


def _trail_verdicts(run_ids: list) -> dict:
    """Each trail run's claim verdicts, in one query."""
    verdicts = defaultdict(list)
    claims = Claim.objects.filter(sentence__verification__in=run_ids, status=ClaimStatus.DONE)
    for run_id, result in claims.values_list("sentence__verification_id", "trail"):
        verdicts[run_id].append((result or {}).get("verdict", ""))
    return verdicts
