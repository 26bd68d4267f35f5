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

from verification.scoring.counts import (
    BAND_LABELS,
    BANDS,
    CITED,
    DEFAULT_RULE,
    DOCUMENT_TYPE,
    EVIDENCE_KINDS,
    EVIDENCE_NOUNS,
    IRRELEVANT,
    MODEL_KNOWLEDGE,
    NO_CLAIM,
    NOT_CHECKED,
    NOT_SUPPORTED,
    OUTCOME_ICONS,
    OUTCOME_LABELS,
    OUTCOMES,
    PENDING,
    RULE_ALL,
    RULE_DECISIVE,
    SCORE_RULES,
    SNIPPET,
    SUPPORTED,
    VERDICT_ICONS,
    VERDICT_LABELS,
    EvidenceRecord,
    Scores,
    Tally,
    band,
    compute_scores,
    duplicate_groups,
    shown_percent,
    valid_rule,
)
from verification.scoring.trails import (
    TRAIL_STATUS_WORDS,
    TRAIL_VERDICT_LABELS,
    TRAIL_VERDICTS,
    UNSUPPORTED,
    entered_words,
    trail_score,
    trail_score_words,
    trail_verdict_words,
)
from verification.scoring.words import (
    CANCELLED_NOTE,
    explain,
    explain_sentence,
    outcome,
    outcome_words,
    provisional_words,
    sentence_outcome,
)

__all__ = [
    "CANCELLED_NOTE",
    "TRAIL_STATUS_WORDS",
    "TRAIL_VERDICT_LABELS",
    "TRAIL_VERDICTS",
    "UNSUPPORTED",
    "entered_words",
    "trail_score",
    "trail_score_words",
    "trail_verdict_words",
    "BANDS",
    "BAND_LABELS",
    "CITED",
    "DEFAULT_RULE",
    "DOCUMENT_TYPE",
    "EVIDENCE_KINDS",
    "EVIDENCE_NOUNS",
    "EvidenceRecord",
    "IRRELEVANT",
    "MODEL_KNOWLEDGE",
    "NOT_SUPPORTED",
    "NO_CLAIM",
    "NOT_CHECKED",
    "OUTCOMES",
    "OUTCOME_ICONS",
    "OUTCOME_LABELS",
    "PENDING",
    "RULE_ALL",
    "RULE_DECISIVE",
    "SCORE_RULES",
    "SNIPPET",
    "SUPPORTED",
    "Scores",
    "Tally",
    "VERDICT_ICONS",
    "VERDICT_LABELS",
    "band",
    "compute_scores",
    "duplicate_groups",
    "explain",
    "explain_sentence",
    "outcome",
    "outcome_words",
    "provisional_words",
    "sentence_outcome",
    "shown_percent",
    "valid_rule",
]
