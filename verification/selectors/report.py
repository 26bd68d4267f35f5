"""The report to hand on: one structure for one view state (rule and exclusions), which the
Markdown, HTML and CSV downloads and the result page's printed form all render. Its words are the
scoring module's, as on the page: a report never says what the page does not."""

from dataclasses import dataclass
from datetime import date
from typing import NamedTuple

from verification.inputs.documents import EVIDENCE_MODES, is_upload
from verification.models import FINISHED, Claim, Evidence, SourceType, Status, Verification
from verification.scoring import (
    BAND_LABELS,
    EVIDENCE_KINDS,
    OUTCOME_LABELS,
    SCORE_RULES,
    VERDICT_LABELS,
    Scores,
    Tally,
    outcome_words,
)
from verification.scoring.citations import citation_summary
from verification.selectors.citations import citation_results, citations_counted
from verification.selectors.languages import language_label
from verification.selectors.quick import model_knowledge_note, quick_summary
from verification.selectors.records import (
    claim_records,
    evidence_noun,
    once_finished,
    verdicts,
    verification_scores,
)
from verification.selectors.result_json import evidence_mode, run_settings_json
from verification.selectors.result_page import title_words
from verification.selectors.viewstate import ViewState

# A link is made only to these: a stored URL is outside content, and `javascript:` or `data:`
# would run or show something of the page's choosing when a reader clicks it.
LINKED_SCHEMES = ("http://", "https://")


@dataclass(frozen=True)
class Footnote:
    """One evidence item, numbered in the order the report cites them."""

    number: int
    sentence: int
    claim: str
    claim_outcome: str
    title: str
    url: str
    link: str  # the URL when it is safe to link to, else ""
    host: str
    type_label: str
    published: date | None
    verdict: str
    rationale: str
    counted: bool
    # The number of the item whose text this one repeats (the group counts once, scoring.py).
    copy_of: int | None = None
    # Judged from its search snippet, and why its page was not read ("HTTP 403").
    snippet_only: bool = False
    unread_reason: str = ""
    # Quick mode: the claim's answer from the model's own knowledge, cited as an item of its own.
    from_model_knowledge: bool = False
    # The language of its page (ISO 639-1; "" when not told).
    language: str = ""


@dataclass(frozen=True)
class ClaimEntry:
    text: str
    outcome: str
    words: str
    note: str
    footnotes: list[int]


@dataclass(frozen=True)
class SentenceEntry:
    number: int
    text: str
    outcome: str
    words: str
    score: float | None
    band: str
    note: str
    claims: list[ClaimEntry]


@dataclass(frozen=True)
class CitationEntry:
    """One of the text's own citations (issue 34) and whether what it cites says its sentence."""

    sentence: int | None  # the sentence's number (S1 is 1), None without one
    marker: str
    title: str
    url: str
    link: str  # the URL when it is safe to link to, else ""
    outcome: str
    words: str
    reason: str


@dataclass(frozen=True)
class Report:
    id: str
    title: str
    text: str
    status: str
    facts: dict
    rule: str
    rule_label: str
    left_out: dict | None
    overall: Tally
    band_label: str
    sentences: list[SentenceEntry]
    footnotes: list[Footnote]
    citations: tuple[CitationEntry, ...] = ()
    citation_summary: str = ""  # "6 citations: 3 support their sentence, …"; "" without citations


def verification_report(verification: Verification, state: ViewState) -> Report:
    """Every sentence, claim and evidence item of a run as the view `state` counts them."""
    scores = verification_scores(verification, state)
    rows = once_finished(verification, "report-rows", lambda: _report_rows(verification))
    noun = evidence_noun(verification)
    found = verdicts(
        scores,
        claim_records(verification),
        [sentence for sentence, _ in rows],
        noun=noun,
        cancelled=verification.status == Status.CANCELLED,
    )
    # Footnotes are numbered as the sentences and claims cite them, in order.
    footnotes: list[Footnote] = []
    sentences = [_sentence_entry(sentence, claims, scores, found, footnotes, noun) for sentence, claims in rows]
    return Report(
        id=str(verification.pk),
        title=title_words(verification.text),
        text=verification.text,
        status=verification.status,
        facts=run_facts(verification),
        rule=scores.rule,
        rule_label=SCORE_RULES[scores.rule],
        left_out=left_out(state, scores),
        overall=scores.overall,
        band_label=BAND_LABELS[scores.overall.band],
        sentences=sentences,
        footnotes=footnotes,
        **_citations(verification),
    )


def _citations(verification: Verification) -> dict:
    rows = citation_results(verification)
    if not rows:
        return {}
    entries = tuple(
        CitationEntry(
            sentence=None if row["sentence"] is None else row["sentence"] + 1,
            marker=row["marker"],
            title=row["title"],
            url=row["url"] or "",
            link=row["url"] if (row["url"] or "").lower().startswith(LINKED_SCHEMES) else "",
            outcome=row["outcome"],
            words=row["outcome_label"],
            reason=row["reason"],
        )
        for row in rows
    )
    return {"citations": entries, "citation_summary": citation_summary(citations_counted(rows))}


def _sentence_entry(sentence, claims, scores: Scores, found, footnotes: list[Footnote], noun: str) -> SentenceEntry:
    result, note = found.sentences[sentence.index]
    tally = scores.sentence(sentence.index)
    # A sentence's evidence comes from several claims' searches: "sources", unless all are documents.
    sentence_noun = "document" if noun == "document" else "source"
    return SentenceEntry(
        number=sentence.index + 1,
        text=sentence.text,
        outcome=result,
        words=outcome_words(tally, result, noun=sentence_noun),
        score=tally.score,
        band=tally.band,
        note=note,
        claims=[_claim_entry(sentence, claim, evidence, scores, found, footnotes, noun) for claim, evidence in claims],
    )


def _claim_entry(sentence, claim, evidence, scores: Scores, found, footnotes: list[Footnote], noun: str) -> ClaimEntry:
    result, note = found.claims[claim.id]
    # Numbered first: a copy may be more relevant than the item it copies, and names its number.
    numbers = {item.id: len(footnotes) + n for n, item in enumerate(evidence, 1)}
    cited = (sentence.index + 1, claim.text, OUTCOME_LABELS[result])
    footnotes.extend(_footnote(numbers, cited, item, scores) for item in evidence)
    if claim.from_model_knowledge:
        numbers[-claim.id] = len(footnotes) + 1
        footnotes.append(_model_knowledge_footnote(numbers[-claim.id], cited, claim, scores))
    return ClaimEntry(
        text=claim.text,
        outcome=result,
        words=outcome_words(scores.claim(claim.id), result, noun=noun),
        note=note,
        footnotes=list(numbers.values()),
    )


def _footnote(numbers: dict[int, int], cited: tuple[int, str, str], item, scores: Scores) -> Footnote:
    sentence, claim, claim_outcome = cited
    return Footnote(
        number=numbers[item.id],
        sentence=sentence,
        claim=claim,
        claim_outcome=claim_outcome,
        title=item.title or item.url,
        # An upload is named by its title (the file's name): its bytes are never served.
        url="" if is_upload(item.url) else item.url,
        link=item.url if item.url.lower().startswith(LINKED_SCHEMES) else "",
        host=item.host,
        type_label=_TYPE_LABELS.get(item.source_type, ""),
        published=item.published,
        verdict=verdict_words(item.verdict, failed=item.failed),
        rationale=item.rationale or item.error,
        counted=item.id not in scores.left_out,
        copy_of=numbers.get(item.duplicate_of),
        snippet_only=item.snippet_only,
        unread_reason=item.unread_reason,
        language=item.language,
    )


def _model_knowledge_footnote(number: int, cited: tuple[int, str, str], claim: "_ClaimRow", scores: Scores) -> Footnote:
    """Quick mode's answer for a claim, cited where its evidence would be: no source, the model's
    label as its verdict, counted only when the view counts the model's own knowledge."""
    sentence, text, claim_outcome = cited
    said = f"says {claim.model_label}"
    if claim.model_label_probability is not None:
        said += f" (probability {claim.model_label_probability:.3f})"
    return Footnote(
        number=number,
        sentence=sentence,
        claim=text,
        claim_outcome=claim_outcome,
        title="The model's own knowledge",
        url="",
        link="",
        host="not checked against any source",
        type_label="",
        published=None,
        verdict=said,
        rationale=model_knowledge_note(claim.model_label, claim.model_label_probability),
        # Its scoring record's id is minus the claim's (selectors/records.py).
        counted=-claim.id not in scores.left_out,
        from_model_knowledge=True,
    )


_TYPE_LABELS = dict(SourceType.choices)


def verdict_words(verdict: str, *, failed: bool) -> str:
    """The page's words for one item's verdict (its evidence panel says the same)."""
    if verdict:
        return VERDICT_LABELS.get(verdict, verdict)
    return "not judged" if failed else "judging…"


def left_out(state: ViewState, scores: Scores) -> dict | None:
    """What the view leaves out, in the page's words ("Source types left out: …"), with the claims
    answered from the model's own knowledge (quick mode), left out unless the view counts them."""
    # Their scoring records have negative ids (selectors/records.py).
    model_knowledge = sum(1 for record_id in scores.left_out if record_id < 0)
    if not state.excludes_anything and not model_knowledge:
        return None
    return {
        "model_knowledge": model_knowledge,
        "types": [label for value, label in SourceType.choices if value in state.excluded_types],
        "kinds": [label for value, label in EVIDENCE_KINDS.items() if value in state.excluded_kinds],
        "by_hand": len(state.excluded_ids),
        "evidence": scores.overall.excluded,
    }


def run_facts(verification: Verification) -> dict:
    """What was run: the settings chosen, when, how long and what it spent."""
    chosen = run_settings_json(verification)
    end = verification.finished_at
    return {
        "model": chosen.get("model", ""),
        # "checked in German", "checked in Hindi: less tested"; "" when the language was not told.
        "language": language_label(verification.language),
        "language_code": verification.language,
        "evidence": dict(EVIDENCE_MODES).get(evidence_mode(verification), ""),
        "retrieval_mode": chosen.get("retrieval_mode", ""),
        "top_k_results": chosen.get("top_k_results", ""),
        "top_k_passages": chosen.get("top_k_passages", ""),
        "started": verification.created_at,
        "seconds": (end - verification.created_at).total_seconds() if end else None,
        "finished": verification.status in FINISHED,
        "llm_calls": verification.llm_calls,
        # Answers reused from earlier runs (the cache): a cached run's "0 calls" is not "no work".
        "llm_cached": verification.llm_cached,
        "tokens": verification.prompt_tokens + verification.completion_tokens,
        "reasoning_tokens": verification.reasoning_tokens,
        "searches": verification.searches,
        "searches_cached": verification.searches_cached,
        "quick": quick_summary(verification),
    }


# --- the rows, read once (and cached once the run is finished)


@dataclass(frozen=True)
class _SentenceRow:
    # What verdicts() reads of a sentence, and its text.
    index: int
    text: str
    status: str
    error: str


@dataclass(frozen=True)
class _ClaimRow:
    id: int
    text: str
    from_model_knowledge: bool = False
    model_label: str = ""
    model_label_probability: float | None = None


class _EvidenceRow(NamedTuple):
    # A named tuple read with values_list: a large run has hundreds, and model instances of them
    # took most of the report's time.
    id: int
    claim_id: int
    title: str
    url: str
    host: str
    source_type: str
    published: date | None
    verdict: str
    status: str
    rationale: str
    error: str
    duplicate_of: int | None
    # Defaults: rows cached before snippets (or languages) were kept still load.
    snippet_only: bool = False
    unread_reason: str = ""
    language: str = ""

    @property
    def failed(self) -> bool:
        return self.status == Status.FAILED


def _report_rows(verification: Verification) -> list[tuple[_SentenceRow, list[tuple[_ClaimRow, list[_EvidenceRow]]]]]:
    """Sentences in order, each with its claims, each with its evidence (most relevant first, as
    the JSON lists them): three queries whatever the size of the run."""
    evidence: dict[int, list[_EvidenceRow]] = {}
    items = Evidence.objects.filter(claim__sentence__verification=verification).order_by("claim_id", "-relevance", "pk")
    for row in items.values_list(*_EVIDENCE_FIELDS):
        item = _EvidenceRow(*row)
        evidence.setdefault(item.claim_id, []).append(item)
    claims: dict[int, list] = {}
    rows = Claim.objects.filter(sentence__verification=verification).order_by("sentence_id", "index")
    fields = ("pk", "sentence_id", "text", "from_model_knowledge", "model_label", "model_label_probability")
    for pk, sentence_id, *claim in rows.values_list(*fields):
        claims.setdefault(sentence_id, []).append((_ClaimRow(pk, *claim), evidence.get(pk, [])))
    return [
        (_SentenceRow(index, text, status, error), claims.get(pk, []))
        for pk, index, text, status, error in verification.sentences.order_by("index").values_list(
            "pk", "index", "text", "status", "error"
        )
    ]


_EVIDENCE_FIELDS = (
    "id",
    "claim_id",
    "source__title",
    "source__url",
    "source__host",
    "source__source_type",
    "source__published",
    "verdict",
    "status",
    "rationale",
    "error",
    "duplicate_of_id",
    "snippet_only",
    "unread_reason",
    "source__language",
)


def report_filename(report: Report, name: str) -> str:
    return f"factsite-{report.id}-{name}"
