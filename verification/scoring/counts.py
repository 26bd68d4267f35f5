"""The numbers: evidence counted by the score rule into tallies, scores and colour bands (the
rules are described in verification/scoring/__init__.py)."""

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
# A claim or sentence of a cancelled run that its checks never reached: it will not be checked.
NOT_CHECKED = "not_checked"
OUTCOME_LABELS = {
    "supported": "supported",
    "contradicted": "contradicted",
    "mixed": "mixed evidence",
    "unconfirmed": "unconfirmed",
    "no_evidence": "no evidence",
    "failed": "check failed",
    PENDING: "being checked",
    NO_CLAIM: "nothing to check",
    NOT_CHECKED: "not checked",
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
    NOT_CHECKED: "○",
}
# One piece of evidence, said of the page ("it supports the claim"), in the outcomes' words.
VERDICT_LABELS = {SUPPORTED: "supports", NOT_SUPPORTED: "contradicts", IRRELEVANT: "does not address it"}
VERDICT_ICONS = {SUPPORTED: "✓", NOT_SUPPORTED: "✗", IRRELEVANT: "–"}
# What one piece of evidence is called, by the run's evidence mode.
EVIDENCE_NOUNS = {"web": "page", "documents": "document", "both": "source"}

# An evidence record's kind: "" for a passage of a page read; SNIPPET for a search result judged
# from its title and snippet because its page could not be read. A reader can leave a kind out of
# the scores (compute_scores' `excluded_kinds`), as a source type.
SNIPPET = "snippet"
# A claim quick mode finished from the model's own knowledge (issue 29), as one record of its
# own: the model's label true counts as supporting, false as not supporting. It is no source, so
# it is in no source type's share, and the pages leave it out unless the reader ticks it in.
MODEL_KNOWLEDGE = "model_knowledge"
# A passage of a page the text itself cites (issue 34): one tick leaves every cited source out, to
# see what the web alone says. A cited page judged from a snippet is a snippet (the web search
# found it too): an item has one kind.
CITED = "cited"
# Each kind a reader can leave out, with the words of its tick.
EVIDENCE_KINDS = {
    SNIPPET: "search snippets (pages that could not be read)",
    CITED: "sources the text cites",
}


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
    # "" for a passage of a page read, else what the item is (SNIPPET, CITED, …: EVIDENCE_KINDS).
    kind: str = ""


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
    # Of the judged items counted, those judged from a search snippet (their page was not read).
    snippets: int = 0

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
    __slots__ = (
        "supported",
        "not_supported",
        "irrelevant",
        "failed",
        "pending",
        "excluded",
        "silent_documents",
        "snippets",
    )

    def __init__(self) -> None:
        self.supported = self.not_supported = self.irrelevant = self.failed = self.pending = self.excluded = 0
        self.silent_documents = self.snippets = 0

    def add(self, record: EvidenceRecord, included: bool, *, document: bool, snippet: bool = False) -> None:
        if not included:
            self.excluded += 1
            return
        if snippet and record.verdict in (SUPPORTED, NOT_SUPPORTED, IRRELEVANT):
            self.snippets += 1
        if record.verdict == SUPPORTED:
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
            snippets=self.snippets,
        )


def compute_scores(
    evidence: Iterable[EvidenceRecord],
    *,
    rule: str = DEFAULT_RULE,
    excluded_ids: Iterable[int] = (),
    excluded_types: Iterable[str] = (),
    excluded_kinds: Iterable[str] = (),
) -> Scores:
    """`excluded_kinds`: the kinds of evidence the view leaves out (EvidenceRecord.kind, as
    EVIDENCE_KINDS names them), as `excluded_types` leaves out source types."""
    rule = valid_rule(rule)
    excluded_ids, excluded_types = frozenset(excluded_ids), frozenset(excluded_types)
    excluded_kinds = frozenset(excluded_kinds)
    sentences: dict[int, _Counts] = {}
    claims: dict[int, _Counts] = {}
    overall = _Counts()
    types: dict[str, int] = {}
    left_out: set[int] = set()
    for group in duplicate_groups(evidence):
        record = group[0]
        counted_as = _counted_member(group, excluded_ids, excluded_types, excluded_kinds)
        # A copy found by a web search was chosen for the claim: it counts as a page.
        document = counted_as is not None and counted_as.source_type == DOCUMENT_TYPE
        snippet = counted_as is not None and counted_as.kind == SNIPPET
        for counts in (
            sentences.setdefault(record.sentence_index, _Counts()),
            claims.setdefault(record.claim_id, _Counts()),
            overall,
        ):
            counts.add(record, counted_as is not None, document=document, snippet=snippet)
        if counted_as is None:
            left_out.update(member.id for member in group)
        elif record.verdict and not (document and record.verdict == IRRELEVANT) and record.kind != MODEL_KNOWLEDGE:
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
    group: list[EvidenceRecord],
    excluded_ids: frozenset[int],
    excluded_types: frozenset[str],
    excluded_kinds: frozenset[str],
) -> EvidenceRecord | None:
    """The member the group counts through in this view (its source type is the one the
    distribution shows), or None when the view leaves the group out."""
    if any(member.id in excluded_ids for member in group):
        return None
    return next(
        (member for member in group if member.source_type not in excluded_types and member.kind not in excluded_kinds),
        None,
    )
