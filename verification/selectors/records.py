"""What scoring and the pages need of a run's rows (evidence and claim records, verdicts), read once
and cached for finished runs."""

import logging
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import Http404
from django.utils.timezone import localdate

from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    DeletedVerification,
    Evidence,
    Origin,
    SearchResult,
    Spending,
    Status,
    Verification,
)
from verification.scoring import (
    CITED,
    EVIDENCE_NOUNS,
    MODEL_KNOWLEDGE,
    NOT_CHECKED,
    NOT_SUPPORTED,
    SNIPPET,
    SUPPORTED,
    EvidenceRecord,
    Scores,
    compute_scores,
    explain,
    explain_sentence,
    outcome,
    sentence_outcome,
)
from verification.selectors.quick import FROM_MODEL_KNOWLEDGE, LEFT_OUT_UNLESS_COUNTED, model_knowledge_note
from verification.selectors.viewstate import ViewState

logger = logging.getLogger(__name__)


def permalink(verification: Verification) -> str:
    return f"/v/{verification.pk}"


def once_finished(verification: Verification, name: str, compute):
    """A finished run does not change until it is retried: what its pages read of it is cached
    (keyed on when it finished), so the live recompute costs no query over its sentences,
    claims or evidence."""
    if verification.status not in FINISHED or verification.finished_at is None:
        return compute()
    key = f"factsite:{name}:{verification.pk}:{verification.finished_at.timestamp()}"
    value = _cache_get(key)
    if value is None:
        value = compute()
        _cache_set(key, value)
    return value


def _cache_get(key: str):
    try:
        return cache.get(key)
    except Exception:  # a cache outage makes the page slower, never an error
        logger.warning("cache read failed for %s", key, exc_info=True)
        return None


def _cache_set(key: str, value) -> None:
    try:
        cache.set(key, value, timeout=24 * 3600)
    except Exception:
        logger.warning("cache write failed for %s", key, exc_info=True)


def evidence_records(verification: Verification) -> list[EvidenceRecord]:
    """What scoring needs of every evidence item."""
    # "-cited": records cached before cited sources were a kind of their own are not read back.
    return once_finished(verification, "evidence-records-cited", lambda: _evidence_records(verification))


_RECORD_FIELDS = (
    "id",
    "claim__sentence__index",
    "claim_id",
    "source__source_type",
    "verdict",
    "status",
    "duplicate_of_id",
    "snippet_only",
    "source__origin",
)


def _evidence_records(verification: Verification) -> list[EvidenceRecord]:
    rows = Evidence.objects.filter(claim__sentence__verification=verification).values_list(*_RECORD_FIELDS)
    return [_record(row) for row in rows] + _model_knowledge_records(verification)


def _model_knowledge_records(verification: Verification) -> list[EvidenceRecord]:
    """Quick mode: one record per claim finished from the model's own knowledge, its label as the
    verdict. Its id is minus the claim's, which no evidence row has."""
    claims = Claim.objects.filter(sentence__verification=verification, from_model_knowledge=True)
    return [
        EvidenceRecord(-pk, index, pk, "", SUPPORTED if label == "true" else NOT_SUPPORTED, kind=MODEL_KNOWLEDGE)
        for pk, index, label in claims.values_list("pk", "sentence__index", "model_label")
    ]


def evidence_records_of_runs(verification_ids) -> dict:
    """Run id → what scoring needs of its evidence, for several runs in one query (a list of runs)."""
    rows = Evidence.objects.filter(claim__sentence__verification_id__in=list(verification_ids)).values_list(
        *_RECORD_FIELDS, "claim__sentence__verification_id"
    )
    records = defaultdict(list)
    for row in rows:
        records[row[-1]].append(_record(row[:-1]))
    return records


def _record(row) -> EvidenceRecord:
    i, s, c, t, v, status, d, snippet, origin = row
    kind = SNIPPET if snippet else CITED if origin == Origin.CITED else ""
    return EvidenceRecord(i, s, c, t, v, status == Status.FAILED, d, kind)


class ClaimRecord(NamedTuple):
    id: int
    sentence_index: int
    status: str
    error: str
    # Quick mode: finished from the model's own knowledge, with its label and the label's probability.
    from_model_knowledge: bool = False
    model_label: str = ""
    model_label_probability: float | None = None


def claim_records(verification: Verification) -> list[ClaimRecord]:
    return once_finished(
        verification,
        "claim-records",
        lambda: [
            ClaimRecord(*row)
            for row in Claim.objects.filter(sentence__verification=verification)
            .order_by("sentence__index", "index")
            .values_list(
                "id",
                "sentence__index",
                "status",
                "error",
                "from_model_knowledge",
                "model_label",
                "model_label_probability",
            )
        ],
    )


def verification_scores(verification: Verification, state: ViewState) -> Scores:
    return compute_scores(
        evidence_records(verification),
        rule=state.score_rule,
        excluded_ids=state.excluded_ids,
        excluded_types=state.excluded_types,
        excluded_kinds=state.kinds_left_out,
    )


@dataclass(frozen=True)
class Verdicts:
    """Outcome and note of every claim and sentence, for one view state."""

    claims: dict[int, tuple[str, str]]
    sentences: dict[int, tuple[str, str]]


def evidence_noun(verification: Verification) -> str:
    """What one piece of this run's evidence is called: a page, a document, or a source (both)."""
    # Runs from before evidence modes searched the web.
    return EVIDENCE_NOUNS.get(verification.settings.get("evidence", "web"), "page")


def verdicts(
    scores: Scores, claims: list[ClaimRecord], sentences: list, *, noun: str = "page", cancelled: bool = False
) -> Verdicts:
    """`noun`: what one piece of evidence is called in the notes (evidence_noun). `cancelled`:
    the run was cancelled, so what it did not finish says so instead of "being checked"."""
    # A sentence's evidence comes from several claims' searches: "sources", unless all are documents.
    sentence_noun = "document" if noun == "document" else "source"
    by_claim, by_sentence = {}, defaultdict(list)
    told_by_claims: dict[int, int] = defaultdict(int)
    from_model: dict[int, list[bool]] = defaultdict(list)
    for claim in claims:
        tally = scores.claim(claim.id)
        finished = claim.status in (ClaimStatus.DONE, ClaimStatus.FAILED)
        result = outcome(tally, finished=finished or cancelled, failed=claim.status == ClaimStatus.FAILED)
        if cancelled and not finished and result == "no_evidence":
            result = NOT_CHECKED  # nothing was judged for it before the cancel
        note = explain(tally, result, reason=claim.error, noun=noun)
        if claim.from_model_knowledge:
            note = model_knowledge_note(claim.model_label, claim.model_label_probability)
            if tally.excluded and not tally.judged:
                note += f"; {LEFT_OUT_UNLESS_COUNTED}"
        by_claim[claim.id] = (result, note)
        by_sentence[claim.sentence_index].append(by_claim[claim.id])
        from_model[claim.sentence_index].append(claim.from_model_knowledge)
        if result == "failed":
            told_by_claims[claim.sentence_index] += tally.failed
    by_sentence_result = {}
    for sentence in sentences:
        tally = scores.sentence(sentence.index)
        claim_results = by_sentence[sentence.index]
        outcomes, notes = [o for o, _ in claim_results], [n for _, n in claim_results]
        result = sentence_outcome(tally, status=sentence.status, claim_outcomes=outcomes, cancelled=cancelled)
        # A failed claim's items are told once, in "N claims could not be checked (why)", not
        # again as the sentence's unjudged items.
        untold = replace(tally, failed=tally.failed - told_by_claims[sentence.index])
        note = explain_sentence(
            untold, result, error=sentence.error, claim_outcomes=outcomes, claim_notes=notes, noun=sentence_noun
        )
        if result == "no_evidence" and outcomes and all(from_model[sentence.index]):
            # Quick mode answered each of its claims, and the view leaves those answers out: its
            # claims' words, not "its only evidence item is left out of this view".
            note = (
                notes[0]
                if len(notes) == 1
                else f"{FROM_MODEL_KNOWLEDGE}, each of its claims; {LEFT_OUT_UNLESS_COUNTED}"
            )
        by_sentence_result[sentence.index] = (result, note)
    return Verdicts(claims=by_claim, sentences=by_sentence_result)


def is_stale(published: date | None, *, today: date | None = None) -> bool:
    """Published more than STALE_AFTER_YEARS ago (0: nothing is flagged). Old evidence may be
    true still, but a reader should know its age before trusting it on anything that changes."""
    years = settings.STALE_AFTER_YEARS
    if published is None or years <= 0:
        return False
    today = today or localdate()
    try:
        limit = today.replace(year=today.year - years)
    except ValueError:  # 29 February, in a year that has none
        limit = today.replace(year=today.year - years, day=28)
    return published < limit


def with_search_provider(evidence: QuerySet) -> QuerySet:
    """Each item's `provider`: the search provider that found its page for its claim ("" for
    the user's own documents). One row at most: a claim has one result per source."""
    found_by = SearchResult.objects.filter(claim=OuterRef("claim"), source=OuterRef("source")).values("provider")
    return evidence.annotate(provider=Coalesce(Subquery(found_by[:1]), Value("")))


def source_providers(verification: Verification) -> defaultdict[int, list[str]]:
    """Source id → the search providers that found it, in the order they did."""
    found_by: defaultdict[int, list[str]] = defaultdict(list)
    results = SearchResult.objects.filter(source__verification=verification).exclude(provider="").order_by("pk")
    for source_id, provider in results.values_list("source_id", "provider"):
        if provider not in found_by[source_id]:
            found_by[source_id].append(provider)
    return found_by


def client_run_times(client: str, *, since: datetime) -> list[datetime]:
    """When each of one client's runs since `since` was created, oldest first: what RUNS_PER_HOUR counts."""
    runs = Verification.objects.filter(client=client, created_at__gte=since).order_by("created_at")
    return list(runs.values_list("created_at", flat=True))


def client_spending(client: str, kind: str, *, since: datetime) -> list[tuple[datetime, int]]:
    """When one client spent on `kind` since `since`, and how much, oldest first."""
    rows = Spending.objects.filter(client=client, kind=kind, created_at__gte=since).order_by("created_at", "pk")
    return list(rows.values_list("created_at", "amount"))


DELETED = "This verification was deleted by the person who started it."
NOT_FOUND = "There is no verification with this id."


def verification_or_404(verification_id) -> Verification:
    """The run, or Http404 saying whether its creator deleted it or it never existed."""
    verification = Verification.objects.filter(pk=verification_id).first()
    if verification is not None:
        return verification
    raise Http404(DELETED if DeletedVerification.objects.filter(pk=verification_id).exists() else NOT_FOUND)
