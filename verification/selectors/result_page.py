"""Everything the result page shows for one view state: its rows, facts and panels."""

from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

from django.conf import settings
from django.db.models import Prefetch

from verification import services
from verification.clients.search import PROVIDER_LABELS
from verification.inputs import domain_lists
from verification.inputs.documents import EVIDENCE_MODES, EVIDENCE_SWITCHED_FROM, is_upload
from verification.models import (
    FINISHED,
    Claim,
    Evidence,
    SourceType,
    Status,
    Verification,
)
from verification.scoring import (
    BAND_LABELS,
    BANDS,
    OUTCOME_ICONS,
    OUTCOME_LABELS,
    PENDING,
    SCORE_RULES,
    VERDICT_ICONS,
    VERDICT_LABELS,
    Scores,
    Tally,
    compute_scores,
    outcome_words,
    provisional_words,
)
from verification.selectors.progress import verification_problems, verification_progress
from verification.selectors.records import (
    Verdicts,
    claim_records,
    evidence_noun,
    evidence_records,
    is_stale,
    once_finished,
    verdicts,
    with_search_provider,
)
from verification.selectors.result_json import documents_json, domains_left_out, evidence_mode, retryable
from verification.selectors.viewstate import ViewState


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
    sentences = once_finished(verification, "sentences", lambda: sentence_rows(verification))
    noun = evidence_noun(verification)
    found = verdicts(
        scores, claim_records(verification), sentences, noun=noun, cancelled=verification.status == Status.CANCELLED
    )
    selected = next((s for s in sentences if s.index == state.sentence), None)
    finished = verification.status in FINISHED
    problems = verification_problems(verification)
    # Sentences are counted in sources (several claims' searches), unless all are documents.
    sentence_noun = "document" if noun == "document" else "source"
    retry_items = retryable(verification)
    return {
        "verification": verification,
        "state": state,
        "scores": scores,
        "band_label": BAND_LABELS[scores.overall.band],
        # While the run goes on, every score rests on the judgements made so far: it says so.
        "overall_provisional": provisional_words(scores.overall)
        if not finished and scores.overall.judgements_known
        else "",
        "legend": result_legend(),
        "noun": noun,
        "title": title_words(verification.text),
        "text_parts": _text_parts(verification.text, sentences, scores, found, state, sentence_noun),
        "sentence_notes": _sentence_notes(sentences, scores, found, state, sentence_noun),
        "selected": selected,
        "selected_tally": scores.sentence(selected.index) if selected else None,
        "selected_verdict": found.sentences[selected.index] if selected else None,
        "selected_words": (
            _words(scores.sentence(selected.index), found.sentences[selected.index][0], sentence_noun)
            if selected
            else None
        ),
        "claims": _claim_rows(verification, selected, state, scores, found, noun) if selected else [],
        "types": _type_rows({r.source_type for r in records if r.source_type}, scores, state),
        "rules": [
            {"value": rule, "label": label, "checked": rule == scores.rule, "query": state.scoring_by(rule).query()}
            for rule, label in SCORE_RULES.items()
        ],
        "exclusions": _exclusions(scores, state),
        "progress": None if finished else verification_progress(verification),
        "finished": finished,
        "problems": problems,
        # The banner's headline; the failures behind "no evidence could be judged" are listed
        # under it, so it does not say the first of them twice.
        "failure": services.NO_EVIDENCE_JUDGED
        if verification.error.startswith(services.NO_EVIDENCE_JUDGED) and problems
        else verification.error,
        "problem_count": sum(p["count"] for p in problems),
        "lasting_count": sum(r["count"] for p in problems for r in p["reasons"] if not r["transient"]),
        "can_retry": finished and verification.status != Status.CANCELLED and retry_items > 0,
        "run_facts": _run_facts(verification),
        "checkable": any(result not in ("no_claim",) for result, _ in found.sentences.values()),
    }


def _words(tally: Tally, result: str, noun: str) -> dict:
    """What a score's colour and its words need: the outcome with the counts behind the colour,
    its shape, and "so far" while it is still being checked. A tag being checked is not coloured
    by its partial score (the sentence in the text is not either)."""
    pending = result == PENDING
    return {
        "outcome": result,
        "icon": OUTCOME_ICONS[result],
        "text": outcome_words(tally, result, noun=noun),
        "band": "none" if pending else tally.band,
        "provisional": provisional_words(tally) if pending and tally.judgements_known else "",
    }


def result_legend() -> dict:
    """The legend above the text, built from the scoring module's bands and shapes, so that it
    shows exactly what the sentences show."""
    lower = [threshold for threshold, _ in BANDS]
    return {
        "bands": [
            {"band": "green", "text": f"≥ {lower[0]:.0%}"},
            {"band": "orange", "text": f"{lower[1]:.0%}–{lower[0]:.0%}"},
            {"band": "red", "text": f"< {lower[1]:.0%}"},
            {"band": "none", "text": "no score"},
        ],
        "outcomes": [
            {"outcome": name, "icon": OUTCOME_ICONS[name], "label": OUTCOME_LABELS[name]}
            for name in ("supported", "mixed", "contradicted", "unconfirmed", "no_evidence", "failed", PENDING)
        ],
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
    return {
        "model": run_settings.get("model"),
        "retrieval_mode": run_settings.get("retrieval_mode"),
        "top_k_results": run_settings.get("top_k_results"),
        "top_k_passages": run_settings.get("top_k_passages"),
        "context_size": run_settings.get("context_size"),
        "domains": _domain_facts(verification),
        "evidence": dict(EVIDENCE_MODES).get(evidence_mode(verification), ""),
        # The mode the person chose, when the documents they gave made the run read them too.
        "evidence_chosen": dict(EVIDENCE_MODES).get(run_settings.get(EVIDENCE_SWITCHED_FROM, ""), "").split(":")[0],
        "documents": documents_json(verification),
        "created_at": verification.created_at,
        "seconds": services.working_seconds(verification),
        "llm_calls": verification.llm_calls,
        "llm_cached": verification.llm_cached,
        "tokens": verification.prompt_tokens + verification.completion_tokens,
        "searches": verification.searches,
        "searches_cached": verification.searches_cached,
        "retries": verification.retries,
        "retried_at": verification.retried_at,
        "resumes": verification.resumes,
    }


def _text_parts(text: str, sentences: list, scores: Scores, found: Verdicts, state: ViewState, noun: str) -> list[dict]:
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
                "words": _words(tally, result, noun),
                "band_label": BAND_LABELS[tally.band],
                "select_query": state.selecting(None if state.sentence == sentence.index else sentence.index).query(),
            }
        )
        position = sentence.end
    if position < len(text):
        parts.append({"gap": text[position:], "sentence": None})
    return parts


def _sentence_notes(sentences: list, scores: Scores, found: Verdicts, state: ViewState, noun: str) -> list[dict]:
    """One line per sentence: what its evidence says, in words, readable without clicking."""
    return [
        {
            "index": sentence.index,
            "number": sentence.index + 1,
            # Its link's name says which sentence it is, not only "S3".
            "excerpt": title_words(sentence.text),
            "tally": scores.sentence(sentence.index),
            "outcome": found.sentences[sentence.index][0],
            "outcome_label": OUTCOME_LABELS[found.sentences[sentence.index][0]],
            "words": _words(scores.sentence(sentence.index), found.sentences[sentence.index][0], noun),
            "note": found.sentences[sentence.index][1],
            "select_query": state.selecting(sentence.index).query(),
        }
        for sentence in sentences
    ]


def sentence_rows(verification: Verification) -> list[SentenceRow]:
    # Light rows, not model instances: the live recompute reads one per sentence every time.
    return [SentenceRow(*row) for row in verification.sentences.values_list(*SentenceRow._fields)]


def _claim_rows(
    verification: Verification, sentence: SentenceRow, state: ViewState, scores: Scores, found, noun: str
) -> list:
    """The selected sentence's claims and evidence: the fixed part read (or cached) once, the
    part that depends on the viewer's exclusions and score rule added per request."""
    claims = once_finished(verification, f"claims-{sentence.index}", lambda: _claim_facts(sentence))
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
                "words": _words(scores.claim(claim["id"]), result, noun),
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
        "duplicate_of": item.duplicate_of_id,
        "failed": item.status == Status.FAILED,
        "rationale": item.rationale,
        "error": item.error,
        "passage_parts": passage_parts(item.passage, item.highlights),
    }


def _with_state(facts: dict, state: ViewState, scores: Scores) -> dict:
    return {
        **facts,
        # Words, not stored facts: a finished run's cached facts need not change when they do.
        "verdict_label": VERDICT_LABELS.get(facts["verdict"], ""),
        "verdict_icon": VERDICT_ICONS.get(facts["verdict"], ""),
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
