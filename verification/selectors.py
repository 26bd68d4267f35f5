"""Reads shaped for one page or endpoint: a fixed handful of queries per call, never one per row."""

from collections import defaultdict

from django.db.models import Count, Q

from verification.models import FINISHED, Claim, ClaimStatus, Evidence, Sentence, Source, Status, Verification
from verification.scoring import EvidenceRecord, Scores, compute_scores


def permalink(verification: Verification) -> str:
    return f"/v/{verification.pk}"


def evidence_records(verification: Verification) -> list[EvidenceRecord]:
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
