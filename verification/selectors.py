"""Reads shaped for one page or endpoint: a fixed handful of queries per call, never one per row."""

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils.timezone import localdate

from verification import domain_lists, heartbeat, services
from verification.clients.search import PROVIDER_LABELS
from verification.documents import EVIDENCE_MODES, DocumentDraft, is_upload
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    Origin,
    SearchResult,
    Sentence,
    Source,
    SourceType,
    Status,
    Verification,
)
from verification.pipeline import domains
from verification.scoring import (
    BAND_LABELS,
    OUTCOME_LABELS,
    SCORE_RULES,
    EvidenceRecord,
    Scores,
    Tally,
    compute_scores,
    explain,
    explain_sentence,
    outcome,
    sentence_outcome,
)
from verification.viewstate import ViewState

logger = logging.getLogger(__name__)


def permalink(verification: Verification) -> str:
    return f"/v/{verification.pk}"


def _once_finished(verification: Verification, name: str, compute):
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
    return _once_finished(verification, "evidence-records", lambda: _evidence_records(verification))


def _evidence_records(verification: Verification) -> list[EvidenceRecord]:
    rows = Evidence.objects.filter(claim__sentence__verification=verification).values_list(
        "id", "claim__sentence__index", "claim_id", "source__source_type", "verdict", "status", "duplicate_of_id"
    )
    return [EvidenceRecord(i, s, c, t, v, status == Status.FAILED, d) for i, s, c, t, v, status, d in rows]


class ClaimRecord(NamedTuple):
    id: int
    sentence_index: int
    status: str
    error: str


def claim_records(verification: Verification) -> list[ClaimRecord]:
    return _once_finished(
        verification,
        "claim-records",
        lambda: [
            ClaimRecord(*row)
            for row in Claim.objects.filter(sentence__verification=verification)
            .order_by("sentence__index", "index")
            .values_list("id", "sentence__index", "status", "error")
        ],
    )


def verification_scores(verification: Verification, state: ViewState) -> Scores:
    return compute_scores(
        evidence_records(verification),
        rule=state.score_rule,
        excluded_ids=state.excluded_ids,
        excluded_types=state.excluded_types,
    )


@dataclass(frozen=True)
class Verdicts:
    """Outcome and note of every claim and sentence, for one view state."""

    claims: dict[int, tuple[str, str]]
    sentences: dict[int, tuple[str, str]]


def verdicts(scores: Scores, claims: list[ClaimRecord], sentences: list) -> Verdicts:
    by_claim, by_sentence = {}, defaultdict(list)
    for claim in claims:
        tally = scores.claim(claim.id)
        finished = claim.status in (ClaimStatus.DONE, ClaimStatus.FAILED)
        result = outcome(tally, finished=finished, failed=claim.status == ClaimStatus.FAILED)
        by_claim[claim.id] = (result, explain(tally, result, reason=claim.error))
        by_sentence[claim.sentence_index].append(by_claim[claim.id])
    by_sentence_result = {}
    for sentence in sentences:
        tally = scores.sentence(sentence.index)
        claim_results = by_sentence[sentence.index]
        outcomes, notes = [o for o, _ in claim_results], [n for _, n in claim_results]
        result = sentence_outcome(tally, status=sentence.status, claim_outcomes=outcomes)
        note = explain_sentence(tally, result, error=sentence.error, claim_outcomes=outcomes, claim_notes=notes)
        by_sentence_result[sentence.index] = (result, note)
    return Verdicts(claims=by_claim, sentences=by_sentence_result)


def run_is_starting(verification: Verification) -> bool:
    """Whether the run waits for a process that is still warming up (its CPU pool loading the
    model): its owner, or, before a worker took it, every live worker."""
    if verification.status in FINISHED:
        return False
    alive = services.worker_processes_alive(gone_after=timedelta(seconds=heartbeat.GONE_AFTER_S))
    if verification.owner:
        return alive.filter(name=verification.owner, warm_at__isnull=True).exists()
    return alive.exists() and not alive.filter(warm_at__isnull=False).exists()


def verification_progress(verification: Verification) -> dict:
    """Counts per stage, labelled for what they count, and a percentage that never goes back."""
    sentences = Sentence.objects.filter(verification=verification)
    split = sentences.filter(Q(status__in=FINISHED) | Exists(Claim.objects.filter(sentence=OuterRef("pk")))).count()
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
    total_sentences = sentences.count()
    stages = [
        (split, total_sentences),
        (claims["searched"], claims["total"]),
        (pages["fetched"] + pages["failed"], pages["total"]),
        (judgements["finished"], judgements["total"]),
    ]
    if verification.status in FINISHED:
        percent = 100
    else:
        # Each stage is a quarter of the bar; a stage not reached yet counts as empty. Found work
        # (more claims, more pages) lowers a stage's share, so the bar keeps its highest value.
        computed = min(99, round(sum(25 * done / total for done, total in stages if total)))
        percent = max(computed, verification.progress)
        if computed > verification.progress:
            services.progress_record(verification.pk, computed)
    return {
        "percent": percent,
        "starting": run_is_starting(verification),
        "sentences": {"total": total_sentences, "decomposed": split},
        "claims": {"total": claims["total"], "searched": claims["searched"]},
        "pages": {"total": pages["total"], "fetched": pages["fetched"], "failed": pages["failed"]},
        "judgements": {"total": judgements["total"], "made": judgements["finished"]},
    }


PROBLEM_STEPS = {
    "run": "the run",
    "decompose": "finding claims",
    "search": "web search",
    "fetch": "reading pages",
    "judge": "judging evidence",
    "categorize": "deciding source types",
}


def verification_problems(verification: Verification) -> list[dict]:
    """Failed items grouped by step: how many, and each readable reason with its count."""
    return _once_finished(verification, "problems", lambda: _problems(verification))


def _problems(verification: Verification) -> list[dict]:
    run_reasons = []
    if verification.status == Status.FAILED and not verification.error.startswith("no evidence could be judged"):
        run_reasons = [verification.error]
    failed_claims = (
        Claim.objects.filter(sentence__verification=verification, status=ClaimStatus.FAILED)
        .annotate(
            results=Count("search_results"),
            failed_results=Count("search_results", filter=Q(search_results__status=Status.FAILED)),
        )
        .values_list("error", "results", "failed_results")
    )
    reasons = {
        "run": run_reasons,
        "decompose": list(
            Sentence.objects.filter(verification=verification, status=Status.FAILED).values_list("error", flat=True)
        ),
        # A claim whose every page failed is told under "reading pages", once per page.
        "search": [error for error, results, failed in failed_claims if not results or failed < results],
        "fetch": list(verification.sources.filter(status=Status.FAILED).values_list("error", flat=True)),
        "judge": list(
            Evidence.objects.filter(claim__sentence__verification=verification, status=Status.FAILED).values_list(
                "error", flat=True
            )
        ),
        "categorize": [
            decided.removeprefix("fallback: ")
            for decided in verification.sources.filter(type_decided_by__startswith="fallback").values_list(
                "type_decided_by", flat=True
            )
        ],
    }
    return [
        {
            "step": step,
            "label": PROBLEM_STEPS[step],
            "count": len(found),
            "reasons": [{"reason": reason, "count": n} for reason, n in Counter(found).most_common()],
        }
        for step, found in reasons.items()
        if found
    ]


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
    found = verdicts(scores, claim_records(verification), sentences)
    found_by = source_providers(verification)
    return {
        "id": str(verification.pk),
        "permalink": permalink(verification),
        "status": verification.status,
        "error": verification.error,
        "created_at": verification.created_at.isoformat(),
        "finished_at": verification.finished_at.isoformat() if verification.finished_at else None,
        "settings": run_settings_json(verification),
        "left_out": domains_left_out(verification),
        "evidence": evidence_mode(verification),
        "score_rule": scores.rule,
        **_tally_json(scores.overall),
        "source_types": scores.distribution,
        "excluded_evidence": sorted(state.excluded_ids),
        "excluded_types": sorted(state.excluded_types),
        "problems": verification_problems(verification),
        "retries": verification.retries,
        "resumes": verification.resumes,
        "progress": verification_progress(verification),
        "usage": {
            "llm_calls": verification.llm_calls,
            "prompt_tokens": verification.prompt_tokens,
            "completion_tokens": verification.completion_tokens,
            "searches": verification.searches,
        },
        "sentences": [
            _sentence_json(s, scores, found, claims_by_sentence[s.pk], evidence_by_claim, state) for s in sentences
        ],
        "documents": documents_json(verification),
        "sources": [_source_json(s, found_by[s.pk]) for s in verification.sources.order_by("pk")],
    }


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
        "provider": item.provider,
        **_dates_json(source),
        "passage": item.passage,
        "highlights": item.highlights,
        "relevance": item.relevance,
        "verdict": item.verdict or None,
        "rationale": item.rationale,
        "status": item.status,
        "error": item.error,
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
        "source_type": source.source_type,
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
    scores = compute_scores(
        records, rule=state.score_rule, excluded_ids=state.excluded_ids, excluded_types=state.excluded_types
    )
    sentences = _once_finished(verification, "sentences", lambda: _sentence_rows(verification))
    found = verdicts(scores, claim_records(verification), sentences)
    selected = next((s for s in sentences if s.index == state.sentence), None)
    finished = verification.status in FINISHED
    problems = verification_problems(verification)
    return {
        "verification": verification,
        "state": state,
        "scores": scores,
        "band_label": BAND_LABELS[scores.overall.band],
        "title": title_words(verification.text),
        "text_parts": _text_parts(verification.text, sentences, scores, found, state),
        "sentence_notes": _sentence_notes(sentences, scores, found, state),
        "selected": selected,
        "selected_tally": scores.sentence(selected.index) if selected else None,
        "selected_verdict": found.sentences[selected.index] if selected else None,
        "claims": _claim_rows(verification, selected, state, scores, found) if selected else [],
        "types": _type_rows({r.source_type for r in records if r.source_type}, scores, state),
        "rules": [
            {"value": rule, "label": label, "checked": rule == scores.rule, "query": state.scoring_by(rule).query()}
            for rule, label in SCORE_RULES.items()
        ],
        "exclusions": _exclusions(scores, state),
        "progress": None if finished else verification_progress(verification),
        "finished": finished,
        "problems": problems,
        "problem_count": sum(p["count"] for p in problems),
        "can_retry": finished and bool(problems or verification.status == Status.FAILED),
        "run_facts": _run_facts(verification),
        "checkable": any(result not in ("no_claim",) for result, _ in found.sentences.values()),
    }


def title_words(text: str, limit: int = 60) -> str:
    """The text's first words, for the page title (tabs of several results tell apart)."""
    words = " ".join(text.split())
    if len(words) <= limit:
        return words
    return words[:limit].rsplit(" ", 1)[0] + "…"


def _exclusions(scores: Scores, state: ViewState) -> dict | None:
    if not state.excludes_anything:
        return None
    return {
        "types": [label for value, label in SourceType.choices if value in state.excluded_types],
        "evidence": scores.overall.excluded,
        "show_all_query": state.including_everything().query(),
    }


def run_settings_json(verification: Verification) -> dict:
    """The run's settings as chosen, without what the run recorded in them while it ran."""
    return {key: value for key, value in verification.settings.items() if key != services.LEFT_OUT_KEY}


def domains_left_out(verification: Verification) -> dict:
    """Search results the run's domain lists left out, by refusal: on a blocked domain, or
    outside the allowed ones. Zero for runs that had no lists."""
    left_out = Counter({domains.BLOCKED: 0, domains.NOT_ALLOWED: 0})
    for counts in verification.settings.get(services.LEFT_OUT_KEY, {}).values():
        left_out.update(counts)
    return dict(left_out)


def _domain_facts(verification: Verification) -> dict:
    run_settings = verification.settings
    return {
        "blocked": run_settings.get(domain_lists.RUN_BLOCKED, []),
        "server_blocked": run_settings.get(domain_lists.SERVER_BLOCKED, []),
        "allowed": run_settings.get(domain_lists.SERVER_ALLOWED, []),
        "left_out": domains_left_out(verification),
    }


def _run_facts(verification: Verification) -> dict:
    run_settings = verification.settings
    end = verification.finished_at
    return {
        "model": run_settings.get("model"),
        "retrieval_mode": run_settings.get("retrieval_mode"),
        "top_k_results": run_settings.get("top_k_results"),
        "top_k_passages": run_settings.get("top_k_passages"),
        "context_size": run_settings.get("context_size"),
        "domains": _domain_facts(verification),
        "evidence": dict(EVIDENCE_MODES).get(evidence_mode(verification), ""),
        "documents": documents_json(verification),
        "created_at": verification.created_at,
        "seconds": (end - verification.created_at).total_seconds() if end else None,
        "llm_calls": verification.llm_calls,
        "tokens": verification.prompt_tokens + verification.completion_tokens,
        "searches": verification.searches,
        "retries": verification.retries,
        "resumes": verification.resumes,
    }


def _text_parts(text: str, sentences: list, scores: Scores, found: Verdicts, state: ViewState) -> list[dict]:
    """The original text as it was pasted: plain gaps and scored sentences, in order."""
    parts, position = [], 0
    for sentence in sentences:
        if sentence.start > position:
            parts.append({"gap": text[position : sentence.start], "sentence": None})
        tally = scores.sentence(sentence.index)
        result, note = found.sentences[sentence.index]
        parts.append(
            {
                "gap": "",
                "sentence": sentence,
                "tally": tally,
                "outcome": result,
                "note": note,
                "band_label": BAND_LABELS[tally.band],
                "select_query": state.selecting(None if state.sentence == sentence.index else sentence.index).query(),
            }
        )
        position = sentence.end
    if position < len(text):
        parts.append({"gap": text[position:], "sentence": None})
    return parts


def _sentence_notes(sentences: list, scores: Scores, found: Verdicts, state: ViewState) -> list[dict]:
    """One line per sentence: what its evidence says, in words, readable without clicking."""
    return [
        {
            "index": sentence.index,
            "number": sentence.index + 1,
            "tally": scores.sentence(sentence.index),
            "outcome": found.sentences[sentence.index][0],
            "outcome_label": OUTCOME_LABELS[found.sentences[sentence.index][0]],
            "note": found.sentences[sentence.index][1],
            "select_query": state.selecting(sentence.index).query(),
        }
        for sentence in sentences
    ]


def _sentence_rows(verification: Verification) -> list[SentenceRow]:
    # Light rows, not model instances: the live recompute reads one per sentence every time.
    return [SentenceRow(*row) for row in verification.sentences.values_list(*SentenceRow._fields)]


def _claim_rows(verification: Verification, sentence: SentenceRow, state: ViewState, scores: Scores, found) -> list:
    """The selected sentence's claims and evidence: the fixed part read (or cached) once, the
    part that depends on the viewer's exclusions and score rule added per request."""
    claims = _once_finished(verification, f"claims-{sentence.index}", lambda: _claim_facts(sentence))
    rows = []
    for claim, evidence in claims:
        result, note = found.claims[claim["id"]]
        items = _with_copies([_with_state(item, state, scores) for item in evidence])
        rows.append(
            {
                "claim": claim,
                "tally": scores.claim(claim["id"]),
                "outcome": result,
                "outcome_label": OUTCOME_LABELS[result],
                "note": note,
                "evidence": [item for item in items if item["verdict"] != "irrelevant"],
                "irrelevant": [item for item in items if item["verdict"] == "irrelevant"],
            }
        )
    return rows


# Under each claim: what contradicts it, then what supports it, then what is still being judged
# or failed; pages that did not address it come last (collapsed).
_VERDICT_ORDER = {"not_supported": 0, "supported": 1, "": 2, "irrelevant": 3}


def _claim_facts(sentence: SentenceRow) -> list[tuple[dict, list[dict]]]:
    evidence = with_search_provider(Evidence.objects.select_related("source")).order_by("-relevance", "pk")
    claims = Claim.objects.filter(sentence_id=sentence.id).prefetch_related(Prefetch("evidence", queryset=evidence))
    return [
        (
            {"id": claim.pk, "text": claim.text, "query": claim.query, "status": claim.status},
            sorted(
                (_evidence_facts(item) for item in claim.evidence.all()),
                key=lambda item: _VERDICT_ORDER.get(item["verdict"], 2),
            ),
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
        # An upload is shown by its name, with no link: its bytes are never served.
        "link": "" if is_upload(source.url) else source.url,
        "provider_label": PROVIDER_LABELS.get(item.provider, item.provider),
        "published": source.published,
        "stale": is_stale(source.published),
        "stale_after_years": settings.STALE_AFTER_YEARS,
        "verdict": item.verdict,
        "verdict_label": item.get_verdict_display() if item.verdict else "",
        "duplicate_of": item.duplicate_of_id,
        "failed": item.status == Status.FAILED,
        "rationale": item.rationale,
        "error": item.error,
        "passage_parts": passage_parts(item.passage, item.highlights),
    }


def _with_state(facts: dict, state: ViewState, scores: Scores) -> dict:
    return {
        **facts,
        "type_excluded": facts["source_type"] in state.excluded_types,
        "included": facts["id"] not in scores.left_out,
        "toggle_query": state.toggling_evidence(facts["id"]).query(),
    }


def _with_copies(items: list[dict]) -> list[dict]:
    """The items that count, each with the copies of its text found elsewhere ("also at"): a
    copy is shown under its item, never as evidence of its own. The group's checkbox is off only
    when every copy's source type is left out (it counts while any is included)."""
    shown = {item["id"] for item in items}
    copies = defaultdict(list)
    for item in items:
        if item["duplicate_of"] in shown:
            copies[item["duplicate_of"]].append(item)
    return [
        {
            **item,
            "also_at": copies[item["id"]],
            "type_excluded": all(member["type_excluded"] for member in [item, *copies[item["id"]]]),
        }
        for item in items
        if item["duplicate_of"] not in shown
    ]


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


def client_run_times(client: str, *, since: datetime) -> list[datetime]:
    """When each of one client's runs since `since` was created, oldest first: what RUNS_PER_HOUR counts."""
    runs = Verification.objects.filter(client=client, created_at__gte=since).order_by("created_at")
    return list(runs.values_list("created_at", flat=True))
