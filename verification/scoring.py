"""Credibility scores and outcomes: one pure implementation for the worker, the live recompute,
the API and the CLI.

Two score rules, over the evidence the viewer includes:
- `all` (the default, the FACTS&EVIDENCE paper's): supported ÷ all judged evidence. A page that
  was read and does not address the claim counts in the denominator: "5 pages read, 1 confirms
  it" is weaker than "1 page read, 1 confirms it".
- `decisive`: supported ÷ (supported + not supported). Irrelevant pages count in neither: only
  evidence that takes a side decides.
Evidence that failed or is not judged yet counts under neither rule; it is reported as a problem
instead. No counted evidence → no score (None), which is not the same as 0.

The user's own documents (source type `your_document`) are not chosen per claim: every claim
cites every document. A web page is in the denominator because a search chose it for the claim
and it still did not confirm it; a document that does not address a claim was never chosen for
it, so under both rules one judged irrelevant counts in neither number (`silent_documents`).
Otherwise ten documents about other things would make every claim red.

The same text syndicated at several URLs is one piece of evidence (a duplicate group: the item
that counts and the items marked `duplicate_of` it, all of one claim). A group counts once, with
the verdict of the item that counts, while any member is included: leaving out one copy's source
type keeps the group if a copy of an included type remains (it is the same text, still found
there). Leaving out any member by id leaves the whole group out: the page shows the group as one
item with one checkbox, and "do not count this text" means every copy of it.

Every claim also gets an outcome — supported, contradicted, mixed, unconfirmed, no_evidence or
failed (pending while it is being checked) — and every claim and sentence one sentence of words
saying why it has its colour. The words shown beside a colour come from here too: the outcome with
the counts behind the colour (`outcome_words`), its shape (`OUTCOME_ICONS`), the band's words, and
"so far" while a run goes on (`provisional_words`), so that no label says the opposite of the
colour beside it, and the page, the CLI and /about say the same thing."""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

SUPPORTED = "supported"
NOT_SUPPORTED = "not_supported"
IRRELEVANT = "irrelevant"

# The source type of the user's own documents (models.SourceType.YOUR_DOCUMENT).
DOCUMENT_TYPE = "your_document"

RULE_ALL = "all"
RULE_DECISIVE = "decisive"
SCORE_RULES = {
    RULE_ALL: "supporting ÷ all judged evidence",
    RULE_DECISIVE: "supporting ÷ (supporting + contradicting)",
}
DEFAULT_RULE = RULE_ALL

# Bands: red [0, 0.3), orange [0.3, 0.6), green [0.6, 1]; "none" when there is no score. A band's
# words say what its colour measures, the share of counted evidence that supports: nothing about
# contradiction (a red 0% may be contradicted or merely unconfirmed; the outcome says which), so
# they never say the opposite of the counts beside them.
BANDS = ((0.6, "green"), (0.3, "orange"), (0.0, "red"))
BAND_LABELS = {
    "green": "most evidence supports it",
    "orange": "some evidence supports it",
    "red": "little or no evidence supports it",
    "none": "no score",
}

OUTCOMES = ("supported", "contradicted", "mixed", "unconfirmed", "no_evidence", "failed")
PENDING = "pending"
NO_CLAIM = "no_claim"  # a sentence's outcome only: nothing in it could be checked
OUTCOME_LABELS = {
    "supported": "supported",
    "contradicted": "contradicted",
    "mixed": "mixed evidence",
    "unconfirmed": "unconfirmed",
    "no_evidence": "no evidence",
    "failed": "check failed",
    PENDING: "being checked",
    NO_CLAIM: "nothing to check",
}
# A shape per outcome, drawn beside the colour, so that contradicted (✗), unconfirmed (?) and
# supported (✓) differ without colour vision and in greyscale (a red 0% is either of the first two).
OUTCOME_ICONS = {
    "supported": "✓",
    "contradicted": "✗",
    "mixed": "±",
    "unconfirmed": "?",
    "no_evidence": "–",
    "failed": "!",
    PENDING: "…",
    NO_CLAIM: "·",
}
# One piece of evidence, said of the page ("it supports the claim"), in the outcomes' words.
VERDICT_LABELS = {SUPPORTED: "supports", NOT_SUPPORTED: "contradicts", IRRELEVANT: "does not address it"}
VERDICT_ICONS = {SUPPORTED: "✓", NOT_SUPPORTED: "✗", IRRELEVANT: "–"}
# What one piece of evidence is called, by the run's evidence mode.
EVIDENCE_NOUNS = {"web": "page", "documents": "document", "both": "source"}


class EvidenceRecord(NamedTuple):
    # A named tuple, not a dataclass: a large run has thousands, cached and unpickled on every
    # live recompute.
    id: int
    sentence_index: int
    claim_id: int
    source_type: str
    verdict: str  # "" until judged, and for evidence the judge failed on
    failed: bool = False
    # The id of the item this one duplicates (it then counts only through that item's group).
    duplicate_of: int | None = None


@dataclass(frozen=True)
class Tally:
    """Counts of included evidence (and of what the viewer left out) for a claim, a sentence or
    the whole run, with the rule that turns them into a score."""

    supported: int = 0
    not_supported: int = 0
    irrelevant: int = 0
    failed: int = 0
    pending: int = 0
    excluded: int = 0
    rule: str = DEFAULT_RULE
    # The user's documents judged irrelevant: counted in neither number (see the module's doc).
    silent_documents: int = 0

    @property
    def judged(self) -> int:
        return self.supported + self.not_supported + self.irrelevant

    @property
    def judgements_made(self) -> int:
        """Included evidence the judge has answered for (or failed on)."""
        return self.judged + self.silent_documents + self.failed

    @property
    def judgements_known(self) -> int:
        """Included evidence found so far, judged or not: more may still be found."""
        return self.judgements_made + self.pending

    @property
    def total(self) -> int:
        """The denominator under the rule."""
        return self.supported + self.not_supported if self.rule == RULE_DECISIVE else self.judged

    @property
    def score(self) -> float | None:
        return self.supported / self.total if self.total else None

    @property
    def band(self) -> str:
        return band(self.score)


@dataclass(frozen=True)
class Scores:
    rule: str
    sentences: dict[int, Tally]
    claims: dict[int, Tally]
    overall: Tally
    # Share of counted judged evidence per source type, in percent (sums to 100 when any).
    distribution: dict[str, float]
    # Ids of the evidence this view does not count (a whole duplicate group when it is left out).
    left_out: frozenset[int] = frozenset()

    def sentence(self, index: int) -> Tally:
        return self.sentences.get(index) or Tally(rule=self.rule)

    def claim(self, claim_id: int) -> Tally:
        return self.claims.get(claim_id) or Tally(rule=self.rule)


def band(score: float | None) -> str:
    if score is None:
        return "none"
    return next(name for threshold, name in BANDS if score >= threshold)


def shown_percent(score: float | None) -> int | None:
    """The whole percent shown for a score, in the same band as the score: 11 of 37 (29.7%) is
    red and shows "29%", never a "30%" that the legend calls orange. Only rounding up can cross
    a threshold, so it rounds down then."""
    if score is None:
        return None
    shown = round(score * 100)
    return shown if band(shown / 100) == band(score) else math.floor(score * 100)


def valid_rule(value: str | None) -> str:
    return value if value in SCORE_RULES else DEFAULT_RULE


class _Counts:
    __slots__ = ("supported", "not_supported", "irrelevant", "failed", "pending", "excluded", "silent_documents")

    def __init__(self) -> None:
        self.supported = self.not_supported = self.irrelevant = self.failed = self.pending = self.excluded = 0
        self.silent_documents = 0

    def add(self, record: EvidenceRecord, included: bool, *, document: bool) -> None:
        if not included:
            self.excluded += 1
        elif record.verdict == SUPPORTED:
            self.supported += 1
        elif record.verdict == NOT_SUPPORTED:
            self.not_supported += 1
        elif record.verdict == IRRELEVANT and document:
            self.silent_documents += 1
        elif record.verdict == IRRELEVANT:
            self.irrelevant += 1
        elif record.failed:
            self.failed += 1
        else:
            self.pending += 1

    def tally(self, rule: str) -> Tally:
        return Tally(
            self.supported,
            self.not_supported,
            self.irrelevant,
            self.failed,
            self.pending,
            self.excluded,
            rule,
            silent_documents=self.silent_documents,
        )


def compute_scores(
    evidence: Iterable[EvidenceRecord],
    *,
    rule: str = DEFAULT_RULE,
    excluded_ids: Iterable[int] = (),
    excluded_types: Iterable[str] = (),
) -> Scores:
    rule = valid_rule(rule)
    excluded_ids, excluded_types = frozenset(excluded_ids), frozenset(excluded_types)
    sentences: dict[int, _Counts] = {}
    claims: dict[int, _Counts] = {}
    overall = _Counts()
    types: dict[str, int] = {}
    left_out: set[int] = set()
    for group in duplicate_groups(evidence):
        record = group[0]
        counted_as = _counted_member(group, excluded_ids, excluded_types)
        # A copy found by a web search was chosen for the claim: it counts as a page.
        document = counted_as is not None and counted_as.source_type == DOCUMENT_TYPE
        for counts in (
            sentences.setdefault(record.sentence_index, _Counts()),
            claims.setdefault(record.claim_id, _Counts()),
            overall,
        ):
            counts.add(record, counted_as is not None, document=document)
        if counted_as is None:
            left_out.update(member.id for member in group)
        elif record.verdict and not (document and record.verdict == IRRELEVANT):
            types[counted_as.source_type] = types.get(counted_as.source_type, 0) + 1
    judged = sum(types.values())
    return Scores(
        rule=rule,
        sentences={i: counts.tally(rule) for i, counts in sentences.items()},
        claims={i: counts.tally(rule) for i, counts in claims.items()},
        overall=overall.tally(rule),
        distribution={t: 100 * n / judged for t, n in types.items()},
        left_out=frozenset(left_out),
    )


def duplicate_groups(evidence: Iterable[EvidenceRecord]) -> list[list[EvidenceRecord]]:
    """Every item in one group: alone, or with the items marked as its duplicates; the item
    that counts comes first. A duplicate whose original is not among the records counts alone."""
    records = list(evidence)
    ids = {record.id for record in records}
    groups: dict[int, list[EvidenceRecord]] = {}
    for record in records:
        key = record.duplicate_of if record.duplicate_of in ids else record.id
        groups.setdefault(key, []).append(record)
    return [sorted(members, key=lambda member, key=key: member.id != key) for key, members in groups.items()]


def _counted_member(
    group: list[EvidenceRecord], excluded_ids: frozenset[int], excluded_types: frozenset[str]
) -> EvidenceRecord | None:
    """The member the group counts through in this view (its source type is the one the
    distribution shows), or None when the view leaves the group out."""
    if any(member.id in excluded_ids for member in group):
        return None
    return next((member for member in group if member.source_type not in excluded_types), None)


# --- outcomes and the words for them


def outcome(tally: Tally, *, finished: bool, failed: bool = False) -> str:
    """What the included evidence says about a claim (or a sentence). `failed`: the claim's
    own step failed (search, every page, its judging)."""
    if not finished:
        return PENDING
    if tally.supported and tally.not_supported:
        return "mixed"
    if tally.supported:
        return "supported"
    if tally.not_supported:
        return "contradicted"
    if tally.irrelevant or tally.silent_documents:
        return "unconfirmed"
    if failed or tally.failed:
        return "failed"
    return "no_evidence"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _verb(n: int, verb: str) -> str:
    return verb + "s" if n == 1 else verb


def explain(tally: Tally, result: str, *, reason: str = "", noun: str = "page") -> str:
    """One sentence saying why an item has its outcome: counts of what was included, or the
    reason (a failure, "the web search found no pages") when nothing was."""
    nouns = (noun, noun + "s")
    if result == PENDING:
        return "still being checked"
    if result == NO_CLAIM:
        return reason or "no checkable claim in this sentence"
    if result == "failed" and not tally.judged:
        text = reason or f"{_count(tally.failed, 'evidence item', 'evidence items')} could not be judged"
        return text + (f" ({tally.excluded} left out of this view)" if tally.excluded else "")
    if result == "no_evidence" and tally.excluded:
        if tally.excluded == 1:
            return "its only evidence item is left out of this view"
        return f"all {tally.excluded} of its evidence items are left out of this view"
    if result == "no_evidence":
        return reason or "no evidence was found"
    parts = []
    if tally.not_supported:
        parts.append(f"{_count(tally.not_supported, *nouns)} {_verb(tally.not_supported, 'contradict')} it")
    if tally.supported:
        parts.append(f"{_count(tally.supported, *nouns)} {_verb(tally.supported, 'support')} it")
    if not parts:
        read = tally.irrelevant + tally.silent_documents
        text = f"{_count(read, *nouns)} read, none confirms or contradicts it"
        if tally.silent_documents:
            text += f" ({_count(tally.silent_documents, 'document', 'documents')} of yours, not counted)"
    else:
        text = ", ".join(parts)
        if tally.irrelevant:
            text += f"; {_count(tally.irrelevant, 'other', 'others')} did not address it"
        if tally.silent_documents:
            text += (
                f"; {_count(tally.silent_documents, 'document', 'documents')} of yours did not address it (not counted)"
            )
    if tally.failed:
        text += f"; {_count(tally.failed, 'item', 'items')} could not be judged"
    if tally.excluded:
        text += f" ({tally.excluded} left out of this view)"
    return text


def sentence_outcome(tally: Tally, *, status: str, claim_outcomes: list[str]) -> str:
    if status in ("pending", "running"):
        return PENDING
    if status == "failed":
        return "failed"
    if not claim_outcomes:
        return NO_CLAIM
    return outcome(tally, finished=True, failed="failed" in claim_outcomes)


def explain_sentence(
    tally: Tally,
    result: str,
    *,
    error: str,
    claim_outcomes: list[str],
    claim_notes: list[str],
    noun: str = "source",
) -> str:
    """The sentence's one note: its own failure, or what its claims' evidence says, and how many
    of its claims could not be checked."""
    if result in ("failed", NO_CLAIM) and error:
        return error
    failed_notes = [note for o, note in zip(claim_outcomes, claim_notes, strict=True) if o == "failed"]
    if result == "failed":
        return failed_notes[0] if failed_notes else "the check failed"
    if result == "no_evidence" and not tally.judged and not tally.excluded:
        empty = [note for o, note in zip(claim_outcomes, claim_notes, strict=True) if o == "no_evidence"]
        return empty[0] if empty else "no evidence was found"
    text = explain(tally, result, noun=noun)
    if failed_notes and result != PENDING:
        text += f"; {_count(len(failed_notes), 'claim', 'claims')} could not be checked ({failed_notes[0]})"
    return text


def _plural(n: int, noun: str) -> str:
    return noun if n == 1 else noun + "s"


def outcome_words(tally: Tally, result: str, *, noun: str = "page") -> str:
    """The outcome with the counts behind its colour: "supported by 1 of 3 pages read" on an
    orange 33%, never a bare "supported" that the colour beside it would contradict. The
    denominator is the score's own, so the words and the colour say the same share."""
    label = OUTCOME_LABELS[result]
    total = tally.total
    if result == "unconfirmed":
        read = tally.irrelevant + tally.silent_documents
        return f"{label}: none of {read} {_plural(read, noun)} read addresses it"
    if result not in ("supported", "contradicted", "mixed") or not total:
        return label
    if tally.rule == RULE_DECISIVE:
        among = f"{_plural(total, noun)} that take{'s' if total == 1 else ''} a side"
    else:
        # Silent documents are read but not in the denominator: "counted", not "read".
        among = f"{_plural(total, noun)} {'counted' if tally.silent_documents else 'read'}"
    if result == "supported":
        return f"supported by {tally.supported} of {total} {among}"
    if result == "contradicted":
        return f"contradicted by {tally.not_supported} of {total} {among}"
    return f"{label}: supported by {tally.supported} of {total} {among}, contradicted by {tally.not_supported}"


def provisional_words(tally: Tally) -> str:
    """Said of every score of a run still going on: the share can still move either way."""
    return f"so far, from {tally.judgements_made} of {tally.judgements_known} judgements"
