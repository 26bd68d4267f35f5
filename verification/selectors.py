"""Reads shaped for one page or endpoint: a fixed handful of queries per call, never one per row."""

from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

from django.core.cache import cache
from django.db.models import Count, Prefetch, Q

from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    Sentence,
    Source,
    SourceType,
    Status,
    Verification,
)
from verification.scoring import BAND_LABELS, EvidenceRecord, Scores, Tally, compute_scores
from verification.viewstate import ViewState


def permalink(verification: Verification) -> str:
    return f"/v/{verification.pk}"


def evidence_records(verification: Verification) -> list[EvidenceRecord]:
    """What scoring needs of every evidence item."""
    return _once_finished(verification, "evidence-records", lambda: _evidence_records(verification))


def _once_finished(verification: Verification, name: str, compute):
    """A finished run never changes: what the result page reads of it is cached, so the live
    recompute costs no query over its sentences, claims or evidence."""
    if verification.status not in FINISHED:
        return compute()
    key = f"factsite:{name}:{verification.pk}"
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, timeout=24 * 3600)
    return value


def _evidence_records(verification: Verification) -> list[EvidenceRecord]:
    rows = Evidence.objects.filter(claim__sentence__verification=verification).values_list(
        "id", "claim__sentence__index", "source__source_type", "verdict"
    )
    return [EvidenceRecord(id=i, sentence_index=s, source_type=t, verdict=v) for i, s, t, v in rows]


def verification_scores(verification: Verification, *, excluded_ids=(), excluded_types=()) -> Scores:
    return compute_scores(evidence_records(verification), excluded_ids=excluded_ids, excluded_types=excluded_types)


def verification_progress(verification: Verification) -> dict:
    sentences = Sentence.objects.filter(verification=verification).aggregate(
        total=Count("id"), finished=Count("id", filter=Q(status__in=FINISHED))
    )
    claims = Claim.objects.filter(sentence__verification=verification).aggregate(
        total=Count("id"),
        searched=Count("id", filter=~Q(status__in=[ClaimStatus.PENDING, ClaimStatus.SEARCHING])),
    )
    pages = Source.objects.filter(verification=verification).aggregate(
        total=Count("id"),
        fetched=Count("id", filter=Q(status=Status.DONE)),
        failed=Count("id", filter=Q(status=Status.FAILED)),
    )
    judgements = Evidence.objects.filter(claim__sentence__verification=verification).aggregate(
        total=Count("id"), finished=Count("id", filter=Q(status__in=FINISHED))
    )
    stages = [
        (sentences["finished"], sentences["total"]),
        (claims["searched"], claims["total"]),
        (pages["fetched"] + pages["failed"], pages["total"]),
        (judgements["finished"], judgements["total"]),
    ]
    if verification.status in FINISHED:
        percent = 100
    else:
        # Each stage is a quarter of the bar; a stage not reached yet counts as empty.
        percent = min(99, round(sum(25 * done / total for done, total in stages if total)))
    return {
        "percent": percent,
        "sentences": {"total": sentences["total"], "decomposed": sentences["finished"]},
        "claims": {"total": claims["total"], "searched": claims["searched"]},
        "pages": {"total": pages["total"], "fetched": pages["fetched"], "failed": pages["failed"]},
        "judgements": {"total": judgements["total"], "made": judgements["finished"]},
    }


def verification_result(verification: Verification, *, excluded_ids=(), excluded_types=()) -> dict:
    """The result JSON shared by the API, the CLI and the download button."""
    sentences = list(verification.sentences.all())
    claims_by_sentence = defaultdict(list)
    for claim in Claim.objects.filter(sentence__verification=verification).order_by("sentence_id", "index"):
        claims_by_sentence[claim.sentence_id].append(claim)
    evidence_by_claim = defaultdict(list)
    evidence = Evidence.objects.filter(claim__sentence__verification=verification).select_related("source")
    for item in evidence.order_by("claim_id", "-relevance", "pk"):
        evidence_by_claim[item.claim_id].append(item)
    scores = verification_scores(verification, excluded_ids=excluded_ids, excluded_types=excluded_types)
    excluded_ids, excluded_types = set(excluded_ids), set(excluded_types)
    return {
        "id": str(verification.pk),
        "permalink": permalink(verification),
        "status": verification.status,
        "error": verification.error,
        "created_at": verification.created_at.isoformat(),
        "finished_at": verification.finished_at.isoformat() if verification.finished_at else None,
        "settings": verification.settings,
        "score": scores.overall.score,
        "band": scores.overall.band,
        "supported": scores.overall.supported,
        "total": scores.overall.total,
        "source_types": scores.distribution,
        "excluded_evidence": sorted(excluded_ids),
        "excluded_types": sorted(excluded_types),
        "progress": verification_progress(verification),
        "usage": {
            "llm_calls": verification.llm_calls,
            "prompt_tokens": verification.prompt_tokens,
            "completion_tokens": verification.completion_tokens,
            "searches": verification.searches,
        },
        "sentences": [
            _sentence_json(s, scores, claims_by_sentence[s.pk], evidence_by_claim, excluded_ids, excluded_types)
            for s in sentences
        ],
        "sources": [_source_json(s) for s in verification.sources.order_by("pk")],
    }


def _sentence_json(sentence, scores, claims, evidence_by_claim, excluded_ids, excluded_types) -> dict:
    tally = scores.sentences.get(sentence.index)
    return {
        "index": sentence.index,
        "text": sentence.text,
        "start": sentence.start,
        "end": sentence.end,
        "paragraph": sentence.paragraph_index,
        "status": sentence.status,
        "error": sentence.error,
        "score": tally.score if tally else None,
        "band": tally.band if tally else "none",
        "supported": tally.supported if tally else 0,
        "total": tally.total if tally else 0,
        "claims": [
            {
                "id": claim.pk,
                "index": claim.index,
                "text": claim.text,
                "query": claim.query,
                "status": claim.status,
                "error": claim.error,
                "evidence": [_evidence_json(e, excluded_ids, excluded_types) for e in evidence_by_claim[claim.pk]],
            }
            for claim in claims
        ],
    }


def _evidence_json(item: Evidence, excluded_ids, excluded_types) -> dict:
    source = item.source
    return {
        "id": item.pk,
        "url": source.url,
        "title": source.title,
        "host": source.host,
        "source_type": source.source_type,
        "passage": item.passage,
        "highlights": item.highlights,
        "relevance": item.relevance,
        "verdict": item.verdict or None,
        "rationale": item.rationale,
        "status": item.status,
        "error": item.error,
        "included": item.pk not in excluded_ids and source.source_type not in excluded_types,
    }


def _source_json(source: Source) -> dict:
    return {
        "id": source.pk,
        "url": source.url,
        "host": source.host,
        "title": source.title,
        "source_type": source.source_type,
        "type_decided_by": source.type_decided_by,
        "status": source.status,
        "error": source.error,
    }


# --- the result page


class SentenceRow(NamedTuple):
    id: int
    index: int
    text: str
    start: int
    end: int
    status: str
    error: str


@dataclass(frozen=True)
class TypeRow:
    value: str
    label: str
    percent: float
    included: bool
    toggle_query: str


def result_page(verification: Verification, state: ViewState) -> dict:
    """Everything the result page shows for one view state, in a fixed number of queries."""
    records = evidence_records(verification)
    scores = compute_scores(records, excluded_ids=state.excluded_ids, excluded_types=state.excluded_types)
    sentences = _once_finished(verification, "sentences", lambda: _sentence_rows(verification))
    selected = next((s for s in sentences if s.index == state.sentence), None)
    return {
        "verification": verification,
        "state": state,
        "scores": scores,
        "band_label": BAND_LABELS[scores.overall.band],
        "text_parts": _text_parts(verification.text, sentences, scores, state),
        "selected": selected,
        "selected_tally": scores.sentences.get(selected.index, Tally()) if selected else None,
        "claims": _claim_rows(verification, selected, state) if selected else [],
        "types": _type_rows({r.source_type for r in records if r.source_type}, scores, state),
        "progress": None if verification.status in FINISHED else verification_progress(verification),
        "finished": verification.status in FINISHED,
        "failed_sources": _once_finished(
            verification,
            "failed-sources",
            lambda: list(verification.sources.filter(status=Status.FAILED).values("url", "host", "error")),
        ),
    }


def _text_parts(text: str, sentences: list, scores: Scores, state: ViewState) -> list[dict]:
    """The original text as it was pasted: plain gaps and scored sentences, in order."""
    parts, position = [], 0
    for sentence in sentences:
        if sentence.start > position:
            parts.append({"gap": text[position : sentence.start], "sentence": None})
        tally = scores.sentences.get(sentence.index, Tally())
        parts.append(
            {
                "gap": "",
                "sentence": sentence,
                "tally": tally,
                "band_label": BAND_LABELS[tally.band],
                "select_query": state.selecting(None if state.sentence == sentence.index else sentence.index).query(),
            }
        )
        position = sentence.end
    if position < len(text):
        parts.append({"gap": text[position:], "sentence": None})
    return parts


def _sentence_rows(verification: Verification) -> list[SentenceRow]:
    # Light rows, not model instances: the live recompute reads one per sentence every time.
    return [SentenceRow(*row) for row in verification.sentences.values_list(*SentenceRow._fields)]


def _claim_rows(verification: Verification, sentence: SentenceRow, state: ViewState) -> list[dict]:
    """The selected sentence's claims and evidence: the fixed part read (or cached) once, the
    part that depends on the viewer's exclusions added per request."""
    claims = _once_finished(verification, f"claims-{sentence.index}", lambda: _claim_facts(sentence))
    return [{"claim": claim, "evidence": [_with_state(item, state) for item in evidence]} for claim, evidence in claims]


def _claim_facts(sentence: SentenceRow) -> list[tuple[dict, list[dict]]]:
    evidence = Evidence.objects.select_related("source").order_by("-relevance", "pk")
    claims = Claim.objects.filter(sentence_id=sentence.id).prefetch_related(Prefetch("evidence", queryset=evidence))
    return [
        (
            {
                "text": claim.text,
                "query": claim.query,
                "status": claim.status,
                "status_label": claim.get_status_display(),
                "error": claim.error,
            },
            [_evidence_facts(item) for item in claim.evidence.all()],
        )
        for claim in claims
    ]


def _evidence_facts(item: Evidence) -> dict:
    """Flat values for the template: one-level lookups are what Django templates do fastest."""
    source = item.source
    return {
        "id": item.pk,
        "url": source.url,
        "title": source.title or source.url,
        "host": source.host,
        "source_type": source.source_type,
        "type_label": source.get_source_type_display() if source.source_type else "",
        "verdict": item.verdict,
        "verdict_label": item.get_verdict_display() if item.verdict else "",
        "failed": item.status == Status.FAILED,
        "rationale": item.rationale,
        "error": item.error,
        "passage_parts": passage_parts(item.passage, item.highlights),
    }


def _with_state(facts: dict, state: ViewState) -> dict:
    type_excluded = facts["source_type"] in state.excluded_types
    return {
        **facts,
        "type_excluded": type_excluded,
        "included": facts["id"] not in state.excluded_ids and not type_excluded,
        "toggle_query": state.toggling_evidence(facts["id"]).query(),
    }


def passage_parts(passage: str, highlights: list) -> list[tuple[str, bool]]:
    """The passage cut into (text, is_best_match) pieces for highlighting."""
    parts, position = [], 0
    for start, end in sorted(tuple(span) for span in highlights):
        start, end = max(start, position), min(end, len(passage))
        if start >= end:
            continue
        if start > position:
            parts.append((passage[position:start], False))
        parts.append((passage[start:end], True))
        position = end
    if position < len(passage):
        parts.append((passage[position:], False))
    return parts


def _type_rows(present: set[str], scores: Scores, state: ViewState) -> list[TypeRow]:
    return [
        TypeRow(
            value=value,
            label=label,
            percent=scores.distribution.get(value, 0.0),
            included=value not in state.excluded_types,
            toggle_query=state.toggling_type(value).query(),
        )
        for value, label in SourceType.choices
        if value in present or value in state.excluded_types
    ]
