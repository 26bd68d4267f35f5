"""Everything the result page shows for one view state: its rows, facts and panels."""

from collections import Counter, defaultdict
from dataclasses import dataclass

from verification import services
from verification.inputs import domain_lists
from verification.inputs.documents import EVIDENCE_MODES, EVIDENCE_SWITCHED_FROM
from verification.models import (
    FINISHED,
    SourceType,
    Status,
    Verification,
)
from verification.scoring import (
    BAND_LABELS,
    BANDS,
    EVIDENCE_KINDS,
    OUTCOME_ICONS,
    OUTCOME_LABELS,
    PENDING,
    SCORE_RULES,
    Scores,
    Tally,
    compute_scores,
    provisional_words,
)
from verification.scoring.citations import citation_counts, citation_summary
from verification.scoring.words import waiting_words
from verification.selectors.citations import citation_badges
from verification.selectors.progress import verification_problems, verification_progress
from verification.selectors.quick import model_knowledge_tick, no_score_note, quick_summary
from verification.selectors.records import (
    Verdicts,
    claim_records,
    evidence_noun,
    evidence_records,
    once_finished,
    verdicts,
)
from verification.selectors.result_claims import (  # noqa: F401 (SentenceRow, passage_parts: this module's API)
    SentenceRow,
    claim_rows,
    passage_parts,
    score_words,
    sentence_rows,
)
from verification.selectors.result_json import (
    claims_searched_again,
    documents_json,
    domains_left_out,
    evidence_mode,
    retryable,
)
from verification.selectors.viewstate import ViewState


@dataclass(frozen=True)
class KindRow:
    """A kind of evidence (search snippets) the reader can leave out with one tick."""

    value: str
    label: str
    count: int
    included: bool
    toggle_query: str


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
        records,
        rule=state.score_rule,
        excluded_ids=state.excluded_ids,
        excluded_types=state.excluded_types,
        excluded_kinds=state.kinds_left_out,
    )
    sentences = once_finished(verification, "sentences", lambda: sentence_rows(verification))
    noun = evidence_noun(verification)
    claims = claim_records(verification)
    found = verdicts(scores, claims, sentences, noun=noun, cancelled=verification.status == Status.CANCELLED)
    selected = next((s for s in sentences if s.index == state.sentence), None)
    finished = verification.status in FINISHED
    problems = verification_problems(verification)
    # Sentences are counted in sources (several claims' searches), unless all are documents.
    sentence_noun = "document" if noun == "document" else "source"
    retry_items = retryable(verification)
    knowledge_tick = model_knowledge_tick(records, state)
    badges = citation_badges(verification)
    return {
        "verification": verification,
        "state": state,
        "scores": scores,
        "band_label": BAND_LABELS[scores.overall.band],
        # While the run goes on, every score rests on the judgements made so far: it says so.
        "overall_provisional": _overall_provisional(scores.overall, finished=finished),
        # A run that failed with nothing judged has no score to switch, share or download.
        "has_result": verification.status != Status.FAILED or any(record.verdict for record in records),
        "legend": result_legend(),
        "noun": noun,
        "title": title_words(verification.text),
        "text_parts": _text_parts(verification.text, sentences, scores, found, state, sentence_noun, badges),
        # "6 citations: 3 support their sentence, …"; "" for a text without citations.
        "citation_summary": citation_summary(citation_counts(badge["outcome"] for badge in badges)),
        "sentence_notes": _sentence_notes(sentences, scores, found, state, sentence_noun),
        "selected": selected,
        "selected_tally": scores.sentence(selected.index) if selected else None,
        "selected_verdict": found.sentences[selected.index] if selected else None,
        "selected_words": (
            score_words(scores.sentence(selected.index), found.sentences[selected.index][0], sentence_noun)
            if selected
            else None
        ),
        "claims": claim_rows(verification, selected, state, scores, found, noun) if selected else [],
        "types": _type_rows({r.source_type for r in records if r.source_type}, scores, state),
        "kinds": _kind_rows(records, state),
        "model_knowledge": knowledge_tick,
        # Quick mode: why there is no score when only the model's own answers could count.
        "no_score_note": no_score_note(knowledge_tick, scores, claims=len(claims), finished=finished),
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
        # Failed items only: a page whose search snippet was judged in its place is listed with
        # them but counted apart (the reader got a verdict from it).
        "problem_count": sum(p["count"] for p in problems),
        "read_from_snippet": sum(p["read_from_snippet"] for p in problems),
        "lasting_count": sum(
            r["count"] for p in problems for r in p["reasons"] if not r["transient"] and not r["read_from_snippet"]
        ),
        "can_retry": finished and verification.status != Status.CANCELLED and retry_items > 0,
        "run_facts": _run_facts(verification),
        "checkable": any(result not in ("no_claim",) for result, _ in found.sentences.values()),
    }


def _overall_provisional(tally: Tally, *, finished: bool) -> str:
    """ "so far, from 5 of 47 judgements" beside a score that can still move; with no score yet,
    how far the judging is (not "no score yet so far", which says the same thing twice)."""
    if finished or not tally.judgements_known:
        return ""
    return provisional_words(tally) if tally.total else f"({waiting_words(tally)})"


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
        "kinds": [label for value, label in EVIDENCE_KINDS.items() if value in state.excluded_kinds],
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
        "reasoning_tokens": verification.reasoning_tokens,
        "searches": verification.searches,
        "searches_cached": verification.searches_cached,
        "searched_again": claims_searched_again(verification),
        "quick": quick_summary(verification),
        "retries": verification.retries,
        "retried_at": verification.retried_at,
        "resumes": verification.resumes,
    }


def _text_parts(
    text: str, sentences: list, scores: Scores, found: Verdicts, state: ViewState, noun: str, badges: list[dict]
) -> list[dict]:
    """The original text as it was pasted: plain gaps and scored sentences, in order, with the
    text's own citation markers as badges (issue 34), each where it stood. A marker between
    sentences ("… 2024. [4]") is a part of its own; one inside a sentence's span ("big [1] and old
    [2].") splits the sentence into `pieces`, its words as pasted around its badges, which
    factsite.sentence_link renders (a badge cannot sit inside the sentence's link)."""
    markers = _markers(badges, state)
    parts, position = [], 0
    for sentence in sentences:
        if sentence.start > position:
            parts.extend(_gap_parts(text, position, sentence.start, markers))
        tally = scores.sentence(sentence.index)
        result, note = found.sentences[sentence.index]
        parts.append(
            {
                "gap": "",
                "sentence": sentence,
                "tally": tally,
                "outcome": result,
                "note": note,
                "words": score_words(tally, result, noun),
                "band_label": BAND_LABELS[tally.band],
                "select_query": state.selecting(None if state.sentence == sentence.index else sentence.index).query(),
            }
        )
        within = _markers_in(markers, sentence.start, sentence.end)
        if within:
            parts[-1]["pieces"] = _sentence_pieces(text, sentence.start, sentence.end, within)
        position = sentence.end
    if position < len(text):
        parts.extend(_gap_parts(text, position, len(text), markers))
    return parts


def _markers(badges: list[dict], state: ViewState) -> list[tuple[int, int, list[dict]]]:
    """(start, end, its badges) per marker in the text, in order: a GraphRAG marker citing two
    reports is one marker with two badges. Each badge gets its link to the evidence of its sentence."""
    markers: dict[tuple[int, int], list[dict]] = {}
    for badge in badges:
        shown = {**badge, "evidence_query": state.selecting(badge["sentence"]).query()}
        markers.setdefault((badge["start"], badge["end"]), []).append(shown)
    return [(start, end, group) for (start, end), group in sorted(markers.items())]


def _markers_in(markers: list, start: int, end: int) -> list:
    return [marker for marker in markers if start <= marker[0] < end]


def _sentence_pieces(text: str, start: int, end: int, within: list) -> list[dict]:
    """A sentence with markers inside it, in order: its words as pasted ({"text"}) and, where each
    marker stood, its badges ({"citations"}; adjacent markers, "[2][3]", one group)."""
    pieces: list[dict] = []
    position = start
    for marker_start, marker_end, group in within:
        if marker_start > position:
            pieces.append({"text": text[position:marker_start]})
        if pieces and "citations" in pieces[-1]:
            pieces[-1] = {"citations": pieces[-1]["citations"] + group}
        else:
            pieces.append({"citations": group})
        position = max(position, min(marker_end, end))
    if position < end:
        pieces.append({"text": text[position:end]})
    return pieces


def _gap_parts(text: str, start: int, end: int, markers: list) -> list[dict]:
    """The text between two sentences, each marker in it a group of badges where it stood."""
    parts, position = [], start
    for marker_start, marker_end, group in _markers_in(markers, start, end):
        if marker_start > position:
            parts.append({"gap": text[position:marker_start], "sentence": None})
        parts.append({"gap": "", "sentence": None, "citations": group})
        position = max(position, min(marker_end, end))
    if position < end:
        parts.append({"gap": text[position:end], "sentence": None})
    return parts


def _sentence_notes(sentences: list, scores: Scores, found: Verdicts, state: ViewState, noun: str) -> list[dict]:
    """One line per sentence: what its evidence says, in words, readable without clicking.
    Sentences whose check failed for the same reason are one line, with their count: eleven
    identical "check failed" lines hid the rest of the list."""
    rows = [
        {
            "index": sentence.index,
            "number": sentence.index + 1,
            # Its link's name says which sentence it is, not only "S3".
            "excerpt": title_words(sentence.text),
            "tally": scores.sentence(sentence.index),
            "outcome": found.sentences[sentence.index][0],
            "outcome_label": OUTCOME_LABELS[found.sentences[sentence.index][0]],
            "words": score_words(scores.sentence(sentence.index), found.sentences[sentence.index][0], noun),
            "note": found.sentences[sentence.index][1],
            "select_query": state.selecting(sentence.index).query(),
            "count": 1,
        }
        for sentence in sentences
    ]
    failures = defaultdict(list)
    for row in rows:
        if row["outcome"] == "failed":
            failures[row["note"]].append(row)
    notes = []
    for row in rows:
        same = failures.get(row["note"], []) if row["outcome"] == "failed" else []
        if len(same) < 2:
            notes.append(row)
        elif row is same[0]:
            numbers = [member["number"] for member in same]
            notes.append({**row, "count": len(same), "numbers": _sentence_numbers(numbers)})
    return notes


def _sentence_numbers(numbers: list[int]) -> str:
    """[1, 2, 3, 5, 7, 8] → "S1–S3, S5, S7–S8": runs of sentences, shortly."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"S{run[0]}" if len(run) == 1 else f"S{run[0]}–S{run[-1]}" for run in runs)


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


def _kind_rows(records: list, state: ViewState) -> list[KindRow]:
    """A tick for each kind of evidence the run has (or the view leaves out), with how many items
    are of it."""
    counts = Counter(record.kind for record in records if record.kind)
    return [
        KindRow(
            value=value,
            label=label,
            count=counts[value],
            included=value not in state.excluded_kinds,
            toggle_query=state.toggling_kind(value).query(),
        )
        for value, label in EVIDENCE_KINDS.items()
        if counts[value] or value in state.excluded_kinds
    ]
