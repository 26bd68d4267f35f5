"""The result JSON shared by the API, the CLI and the download button."""

from collections import Counter, defaultdict

from verification import services
from verification.inputs.documents import DocumentDraft
from verification.models import (
    FINISHED,
    Claim,
    Evidence,
    Origin,
    Source,
    Status,
    Verification,
)
from verification.pipeline import domains
from verification.scoring import (
    Scores,
    Tally,
)
from verification.selectors.citations import citation_results, citations_counted
from verification.selectors.languages import run_language
from verification.selectors.progress import verification_problems, verification_progress
from verification.selectors.quick import quick_summary
from verification.selectors.records import (
    Verdicts,
    claim_records,
    evidence_noun,
    is_stale,
    permalink,
    source_providers,
    verdicts,
    verification_scores,
    with_search_provider,
)
from verification.selectors.trail_progress import trail_progress
from verification.selectors.trail_result import is_trail
from verification.selectors.viewstate import ViewState


def _progress(verification: Verification) -> dict:
    """A trail run's progress also in its own terms (rounds judged, texts read), and its bar's
    percent from them: it searches no web, so the web run's counts stay at 0 (issue 38.8)."""
    progress = verification_progress(verification)
    if not is_trail(verification):
        return progress
    trail = trail_progress(verification)
    return {**progress, "percent": trail["percent"], "trail": trail}


def verification_result(verification: Verification, state: ViewState | None = None) -> dict:
    """The result JSON shared by the API, the CLI and the download button."""
    state = state or ViewState()
    sentences = list(verification.sentences.all())
    claims_by_sentence = defaultdict(list)
    for claim in Claim.objects.filter(sentence__verification=verification).order_by("sentence_id", "index"):
        claims_by_sentence[claim.sentence_id].append(claim)
    evidence_by_claim = defaultdict(list)
    evidence = with_search_provider(Evidence.objects.filter(claim__sentence__verification=verification))
    for item in evidence.select_related("source").order_by("claim_id", "-relevance", "pk"):
        evidence_by_claim[item.claim_id].append(item)
    scores = verification_scores(verification, state)
    found = verdicts(
        scores,
        claim_records(verification),
        sentences,
        noun=evidence_noun(verification),
        cancelled=verification.status == Status.CANCELLED,
    )
    found_by = source_providers(verification)
    citations = citation_results(verification)
    return {
        "id": str(verification.pk),
        "permalink": permalink(verification),
        # The whole text as pasted: the sentences leave out what lies between them.
        "text": verification.text,
        "status": verification.status,
        "error": verification.error,
        "created_at": verification.created_at.isoformat(),
        "finished_at": verification.finished_at.isoformat() if verification.finished_at else None,
        "settings": run_settings_json(verification),
        "language": run_language(verification),
        "left_out": domains_left_out(verification),
        "evidence": evidence_mode(verification),
        "score_rule": scores.rule,
        **_tally_json(scores.overall),
        "source_types": scores.distribution,
        "excluded_evidence": sorted(state.excluded_ids),
        "excluded_types": sorted(state.excluded_types),
        "model_knowledge_counted": state.model_knowledge,
        "quick": quick_summary(verification),
        "excluded_kinds": sorted(state.excluded_kinds),
        "problems": verification_problems(verification),
        "retries": verification.retries,
        "retried_at": verification.retried_at.isoformat() if verification.retried_at else None,
        "retryable": retryable(verification),
        "working_seconds": services.working_seconds(verification),
        "resumes": verification.resumes,
        "progress": _progress(verification),
        "usage": {
            "llm_calls": verification.llm_calls,
            "prompt_tokens": verification.prompt_tokens,
            "completion_tokens": verification.completion_tokens,
            "reasoning_tokens": verification.reasoning_tokens,
            "searches": verification.searches,
            "llm_cached": verification.llm_cached,
            "searches_cached": verification.searches_cached,
            "claims_searched_again": claims_searched_again(verification),
        },
        "sentences": [
            _sentence_json(s, scores, found, claims_by_sentence[s.pk], evidence_by_claim, state) for s in sentences
        ],
        "documents": documents_json(verification),
        "sources": [_source_json(s, found_by[s.pk]) for s in verification.sources.order_by("pk")],
        "citations": citations,
        "citation_counts": citations_counted(citations),
    }


def retryable(verification: Verification) -> int:
    """What "Retry failed parts" would queue again: nothing while the run is going on."""
    if verification.status not in FINISHED:
        return 0
    return services.verification_retryable(verification.pk)


def evidence_mode(verification: Verification) -> str:
    # Runs from before evidence modes searched the web.
    return verification.settings.get("evidence", "web")


def documents_json(verification: Verification) -> list[dict]:
    """The user's documents in the order given: a file by its name, never its bytes."""
    rows = (
        verification.sources.filter(origin=Origin.DOCUMENT)
        .order_by("pk")
        .values_list("pk", "url", "title", "status", "error", "upload__name", "upload__content_type")
    )
    return [
        {
            "id": pk,
            "kind": "file" if name is not None else "url",
            "name": name if name is not None else title,
            "url": "" if name is not None else url,
            "content_type": content_type or "",
            "status": status,
            "error": error,
        }
        for pk, url, title, status, error, name, content_type in rows
    ]


def documents_of(verification: Verification | None) -> list[DocumentDraft]:
    """The documents of a run, to give an edited re-run the same ones."""
    if verification is None:
        return []
    sources = verification.sources.filter(origin=Origin.DOCUMENT).select_related("upload").order_by("pk")
    drafts = []
    for source in sources:
        upload = getattr(source, "upload", None)
        if upload is None:
            drafts.append(DocumentDraft(url=source.url, host=source.host))
        else:
            drafts.append(
                DocumentDraft(
                    url=source.url, name=upload.name, content_type=upload.content_type, body=bytes(upload.body)
                )
            )
    return drafts


def _tally_json(tally: Tally) -> dict:
    return {
        "score": tally.score,
        "band": tally.band,
        "supported": tally.supported,
        "total": tally.total,
        "counts": {
            "supported": tally.supported,
            "not_supported": tally.not_supported,
            "irrelevant": tally.irrelevant,
            "failed": tally.failed,
            "pending": tally.pending,
            "excluded": tally.excluded,
            "silent_documents": tally.silent_documents,
            "snippets": tally.snippets,
        },
    }


def _sentence_json(sentence, scores: Scores, found: Verdicts, claims, evidence_by_claim, state: ViewState) -> dict:
    result, note = found.sentences[sentence.index]
    return {
        "index": sentence.index,
        "text": sentence.text,
        "start": sentence.start,
        "end": sentence.end,
        "paragraph": sentence.paragraph_index,
        "status": sentence.status,
        "error": sentence.error,
        "outcome": result,
        "note": note,
        **_tally_json(scores.sentence(sentence.index)),
        "claims": [
            {
                "id": claim.pk,
                "index": claim.index,
                "text": claim.text,
                "query": claim.query,
                "second_query": claim.second_query,
                "english_query": claim.english_query,
                "model_label": claim.model_label,
                "model_label_probability": claim.model_label_probability,
                "from_model_knowledge": claim.from_model_knowledge,
                "status": claim.status,
                "error": claim.error,
                "outcome": found.claims[claim.pk][0],
                "note": found.claims[claim.pk][1],
                **_tally_json(scores.claim(claim.pk)),
                "evidence": [_evidence_json(e, scores) for e in evidence_by_claim[claim.pk]],
            }
            for claim in claims
        ],
    }


def _evidence_json(item: Evidence, scores: Scores) -> dict:
    source = item.source
    return {
        "id": item.pk,
        "url": source.url,
        "title": source.title,
        "host": source.host,
        "source_type": source.source_type,
        "language": source.language or None,
        "provider": item.provider,
        **_dates_json(source),
        "passage": item.passage,
        "highlights": item.highlights,
        "relevance": item.relevance,
        "verdict": item.verdict or None,
        "rationale": item.rationale,
        "status": item.status,
        "error": item.error,
        "snippet_only": item.snippet_only,
        "unread_reason": item.unread_reason,
        # A copy of a text counts with its group: included while any copy is (scoring.py).
        "included": item.pk not in scores.left_out,
        "duplicate_of": item.duplicate_of_id,
    }


def _source_json(source: Source, providers: list[str]) -> dict:
    return {
        "id": source.pk,
        "url": source.url,
        "host": source.host,
        "title": source.title,
        "origin": source.origin,
        "source_type": source.source_type,
        "language": source.language or None,
        "providers": providers,
        **_dates_json(source),
        "type_decided_by": source.type_decided_by,
        "status": source.status,
        "error": source.error,
    }


def _dates_json(source: Source) -> dict:
    return {
        "published": source.published.isoformat() if source.published else None,
        "stale": is_stale(source.published),
    }


def run_settings_json(verification: Verification) -> dict:
    """The run's settings as chosen, without what the run recorded in them while it ran."""
    return {key: value for key, value in verification.settings.items() if key != services.LEFT_OUT_KEY}


def claims_searched_again(verification: Verification) -> int:
    """Claims too few of whose pages could be read, so they were searched a second time."""
    return Claim.objects.filter(sentence__verification=verification).exclude(second_query="").count()


def domains_left_out(verification: Verification) -> dict:
    """Search results the run's domain lists left out, by refusal: on a blocked domain, or
    outside the allowed ones. Zero for runs that had no lists."""
    left_out = Counter({domains.BLOCKED: 0, domains.NOT_ALLOWED: 0})
    for counts in verification.settings.get(services.LEFT_OUT_KEY, {}).values():
        left_out.update(counts)
    return dict(left_out)
