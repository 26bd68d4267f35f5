"""A trail run's scores and words (issue 26), pure like the rest of scoring: a sentence's score is
the share of its claims found Fully Supported down the trail (claims still being checked or
failed count in neither number), coloured by the same bands; and where an unsupported claim
entered, said in words."""

from collections.abc import Sequence

FULLY_SUPPORTED = "fully_supported"
NOT_FULLY_SUPPORTED = "not_fully_supported"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
TRAIL_VERDICTS = (FULLY_SUPPORTED, NOT_FULLY_SUPPORTED, CONTRADICTED, INCONCLUSIVE)
TRAIL_VERDICT_LABELS = {
    FULLY_SUPPORTED: "fully supported",
    NOT_FULLY_SUPPORTED: "not fully supported",
    CONTRADICTED: "contradicted",
    INCONCLUSIVE: "inconclusive",
}
UNSUPPORTED = (NOT_FULLY_SUPPORTED, CONTRADICTED)
# A trail run's status as its reports say it.
TRAIL_STATUS_WORDS = {
    "pending": "waiting to start",
    "running": "still running",
    "done": "finished",
    "failed": "failed",
    "cancelled": "cancelled",
}


def trail_score(verdicts: Sequence[str]) -> float | None:
    """Fully supported ÷ claims with a verdict; None when none has one yet."""
    decided = [verdict for verdict in verdicts if verdict in TRAIL_VERDICTS]
    if not decided:
        return None
    return sum(verdict == FULLY_SUPPORTED for verdict in decided) / len(decided)


def trail_verdict_words(verdict: str | None) -> str:
    """A verdict as the reader reads it; "not judged" for none."""
    return TRAIL_VERDICT_LABELS.get(verdict or "", verdict or "not judged")


def trail_score_words(verdicts: Sequence[str]) -> str:
    """What a trail run's score counts, for a list of runs: claims, not evidence."""
    decided = [verdict for verdict in verdicts if verdict in TRAIL_VERDICTS]
    if not decided:
        return "no claim has a verdict yet"
    supported = sum(verdict == FULLY_SUPPORTED for verdict in decided)
    return f"{supported} of {len(decided)} claim{'' if len(decided) == 1 else 's'} fully supported"


def entered_words(kind: str, steps: Sequence[str], nodes: Sequence[str]) -> str:
    """Where an unsupported claim got in, as the reader is told it: the step (its name, or its
    stage's number) and the texts that state it while their inputs do not."""
    if kind == "final_step":
        return "entered at the final step: the texts it was written from do not support it"
    if kind != "stage" or not steps:
        return "where it entered is undetermined: the trail cannot tell"
    named = ", ".join(f"'{step}'" for step in steps)
    texts = ", ".join(f"'{node}'" for node in nodes)
    return f"entered at {named}, in {texts}: its inputs do not support it"
