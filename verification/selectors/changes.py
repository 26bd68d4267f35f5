"""What changed between an edited run and the run it was edited from: sentences added, removed
and reworded, and the outcomes that moved ("S3: contradicted → supported"), both runs read with
the same score rule and source types left out."""

import difflib
from dataclasses import dataclass, field

from verification.models import FINISHED, Verification
from verification.scoring import OUTCOME_LABELS, PENDING
from verification.selectors.records import claim_records, evidence_noun, once_finished, verdicts, verification_scores
from verification.selectors.result_page import SentenceRow, sentence_rows
from verification.selectors.viewstate import ViewState

# Two sentences this alike (difflib's ratio of their characters) in the same place are one
# sentence reworded, not one removed and another added.
REWORDED_AT = 0.5


@dataclass(frozen=True)
class Moved:
    number: int  # the sentence's number in the edited run (S3)
    text: str
    before: str  # outcome labels
    after: str


@dataclass
class Changes:
    earlier: Verification
    added: list[tuple[int, str]] = field(default_factory=list)  # (number, text)
    removed: list[str] = field(default_factory=list)
    reworded: list[tuple[int, str, str]] = field(default_factory=list)  # (number, before, after)
    moved: list[Moved] = field(default_factory=list)
    settled: bool = True  # False while the edited run is still checking sentences

    @property
    def nothing(self) -> bool:
        return not (self.added or self.removed or self.reworded or self.moved)


def changes_since_edit(verification: Verification, state: ViewState) -> Changes | None:
    """None for a run that was not edited from another (or whose earlier run was deleted)."""
    earlier = verification.edited_from
    if earlier is None:
        return None
    # Evidence ids belong to one run: only the rule and the types and kinds left out apply to both.
    shared = state.carried_to_another_run()
    before, after = _sentences_with_outcomes(earlier, shared), _sentences_with_outcomes(verification, shared)
    changes = Changes(earlier=earlier, settled=verification.status in FINISHED)
    matcher = difflib.SequenceMatcher(a=[s.text for s, _ in before], b=[s.text for s, _ in after], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = before[i1:i2], after[j1:j2]
        pairs = list(zip(old, new, strict=True)) if tag == "equal" else _reworded(old, new, changes)
        for (_, was), (sentence, now) in pairs:
            if was != now and now != PENDING:
                changes.moved.append(Moved(sentence.index + 1, sentence.text, OUTCOME_LABELS[was], OUTCOME_LABELS[now]))
    return changes


def _reworded(old: list, new: list, changes: Changes) -> list:
    """Pairs a replaced stretch in order while the sentences stay alike; the rest of it was
    removed or added. Returns the reworded pairs, whose outcomes are compared too."""
    pairs = []
    for (was, outcome_before), (now, outcome_after) in zip(old, new, strict=False):
        if difflib.SequenceMatcher(a=was.text, b=now.text, autojunk=False).ratio() < REWORDED_AT:
            break
        pairs.append(((was, outcome_before), (now, outcome_after)))
        changes.reworded.append((now.index + 1, was.text, now.text))
    changes.removed += [sentence.text for sentence, _ in old[len(pairs) :]]
    changes.added += [(sentence.index + 1, sentence.text) for sentence, _ in new[len(pairs) :]]
    return pairs


def _sentences_with_outcomes(verification: Verification, state: ViewState) -> list[tuple[SentenceRow, str]]:
    sentences = once_finished(verification, "sentences", lambda: sentence_rows(verification))
    found = verdicts(
        verification_scores(verification, state),
        claim_records(verification),
        sentences,
        noun=evidence_noun(verification),
    )
    return [(sentence, found.sentences[sentence.index][0]) for sentence in sentences]


def edited_into(verification: Verification) -> Verification | None:
    """The newest run edited from this one, if any."""
    return Verification.objects.filter(edited_from=verification).order_by("-created_at").first()
