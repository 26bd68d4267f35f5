"""The selected sentence's claims and each claim's evidence, as the result page's panel shows
them (result_page builds the rest of the page); the sentences as rows, for it and for what an
edit changed."""

from collections import defaultdict
from typing import NamedTuple

from django.conf import settings
from django.db.models import Prefetch

from verification.clients.search import PROVIDER_LABELS
from verification.inputs.documents import is_upload
from verification.models import (
    Claim,
    Evidence,
    Origin,
    Status,
    Verification,
)
from verification.scoring import (
    CITED,
    OUTCOME_ICONS,
    OUTCOME_LABELS,
    PENDING,
    SNIPPET,
    VERDICT_ICONS,
    VERDICT_LABELS,
    Scores,
    Tally,
    outcome_words,
    provisional_words,
)
from verification.selectors.records import (
    is_stale,
    once_finished,
    with_search_provider,
)
from verification.selectors.viewstate import ViewState


class SentenceRow(NamedTuple):
    id: int
    index: int
    text: str
    start: int
    end: int
    status: str
    error: str


def sentence_rows(verification: Verification) -> list[SentenceRow]:
    # Light rows, not model instances: the live recompute reads one per sentence every time.
    return [SentenceRow(*row) for row in verification.sentences.values_list(*SentenceRow._fields)]


def claim_rows(
    verification: Verification, sentence: SentenceRow, state: ViewState, scores: Scores, found, noun: str
) -> list:
    """The selected sentence's claims and evidence: the fixed part read (or cached) once, the
    part that depends on the viewer's exclusions and score rule added per request."""
    claims = once_finished(verification, f"claims-{sentence.index}", lambda: _claim_facts(sentence))
    rows = []
    for claim, evidence in claims:
        if claim["id"] not in found.claims:  # saved after this view's verdicts were read: next refresh
            continue
        result, note = found.claims[claim["id"]]
        items = _with_copies([_with_state(item, state, scores) for item in evidence])
        rows.append(
            {
                "claim": claim,
                "tally": scores.claim(claim["id"]),
                "outcome": result,
                "outcome_label": OUTCOME_LABELS[result],
                "words": _claim_words(claim, scores.claim(claim["id"]), result, noun),
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
            {
                "id": claim.pk,
                "text": claim.text,
                "query": claim.query,
                "english_query": claim.english_query,
                "status": claim.status,
                "from_model_knowledge": claim.from_model_knowledge,
                "model_label": claim.model_label,
                "model_label_probability": claim.model_label_probability,
            },
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
        # Its page's language: the passage's `lang` and `dir` (a right-to-left page reads so).
        "language": source.language,
        "source_type": source.source_type,
        "type_label": source.get_source_type_display() if source.source_type else "",
        # An upload is shown by its name, with no link: its bytes are never served.
        "link": "" if is_upload(source.url) else source.url,
        "provider_label": PROVIDER_LABELS.get(item.provider, item.provider),
        "published": source.published,
        "stale": is_stale(source.published),
        "stale_after_years": settings.STALE_AFTER_YEARS,
        "verdict": item.verdict,
        # Judged from the search result's title and snippet: its page could not be read (why).
        "snippet_only": item.snippet_only,
        "unread_reason": item.unread_reason,
        # A source the text itself cites (issue 34), told apart from a page the search found.
        "cited": source.origin == Origin.CITED,
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
        "left_out_by": _left_out_by(facts, state),
        "included": facts["id"] not in scores.left_out,
        "toggle_query": state.toggling_evidence(facts["id"]).query(),
    }


def _left_out_by(facts: dict, state: ViewState) -> str:
    """Why the view leaves an item out whatever its own checkbox says; "" when nothing does."""
    if facts["source_type"] in state.excluded_types:
        return "its source type is left out"
    if facts.get("snippet_only") and SNIPPET in state.excluded_kinds:  # .get: facts cached before snippets
        return "search snippets are left out"
    # As records.py: a cited page judged from its snippet is left out with the snippets.
    if facts.get("cited") and not facts.get("snippet_only") and CITED in state.excluded_kinds:
        return "sources the text cites are left out"
    return ""


def _with_copies(items: list[dict]) -> list[dict]:
    """The items that count, each with the copies of its text found elsewhere ("also at"): a
    copy is shown under its item, never as evidence of its own. The group's checkbox is off only
    when every copy is left out by its source type or kind (it counts while any is included)."""
    shown = {item["id"] for item in items}
    copies = defaultdict(list)
    for item in items:
        if item["duplicate_of"] in shown:
            copies[item["duplicate_of"]].append(item)
    return [
        {
            **item,
            "also_at": copies[item["id"]],
            "left_out_by": _group_left_out_by([item, *copies[item["id"]]]),
        }
        for item in items
        if item["duplicate_of"] not in shown
    ]


def _group_left_out_by(members: list[dict]) -> str:
    reasons = [member["left_out_by"] for member in members]
    return reasons[0] if all(reasons) else ""


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


def _claim_words(claim: dict, tally: Tally, result: str, noun: str) -> dict:
    """A claim answered from the model's own knowledge is never said to be "supported by 1 of 1
    pages read": no page was read for it."""
    words = score_words(tally, result, noun)
    if claim.get("from_model_knowledge"):
        words["text"] = "from the model's own knowledge"
    return words


def score_words(tally: Tally, result: str, noun: str) -> dict:
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
