"""Outcomes and the words for them: what a claim's or a sentence's tally means (supported,
contradicted, mixed…), said in a sentence for the pages, the reports and the CLI."""

from verification.scoring.counts import NO_CLAIM, NOT_CHECKED, OUTCOME_LABELS, PENDING, RULE_DECISIVE, Tally

# What an unfinished claim of a cancelled run says: it was never checked, and will not be.
CANCELLED_NOTE = "not checked: the run was cancelled"


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
    if result == NOT_CHECKED:
        return CANCELLED_NOTE
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
        text = f"{_count(read, *nouns)} {_seen(tally)}, none confirms or contradicts it"
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
    if tally.snippets:
        text += _snippet_words(tally, noun)
    if tally.failed:
        text += f"; {_count(tally.failed, 'item', 'items')} could not be judged"
    if tally.excluded:
        text += f" ({tally.excluded} left out of this view)"
    return text


def _seen(tally: Tally) -> str:
    """What was done with the counted items: "read", unless some were judged from a snippet."""
    return "judged" if tally.snippets else "read"


def _snippet_words(tally: Tally, noun: str) -> str:
    """How many of the judged items were search snippets of pages that could not be read; said
    outright when they all were."""
    judged = tally.judged + tally.silent_documents
    if tally.snippets == judged == 1:
        return "; judged from its search snippet alone (the page could not be read)"
    if tally.snippets == judged:
        return "; all judged from search snippets alone (no page could be read)"
    whose = "its search snippet" if tally.snippets == 1 else "their search snippets"
    return f"; {tally.snippets} of the {judged} {_plural(judged, noun)} judged from {whose} only"


def sentence_outcome(tally: Tally, *, status: str, claim_outcomes: list[str], cancelled: bool = False) -> str:
    """`cancelled`: its run was cancelled, so what is unfinished will stay so."""
    if status in ("pending", "running") and not cancelled:
        return PENDING
    if cancelled and claim_outcomes and all(result == NOT_CHECKED for result in claim_outcomes):
        return NOT_CHECKED
    if cancelled and not claim_outcomes and status in ("pending", "running"):
        return NOT_CHECKED
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
        return f"{label}: none of {read} {_plural(read, noun)} {_seen(tally)} addresses it"
    if result not in ("supported", "contradicted", "mixed") or not total:
        return label
    if tally.rule == RULE_DECISIVE:
        among = f"{_plural(total, noun)} that take{'s' if total == 1 else ''} a side"
    else:
        # Silent documents are read but not in the denominator: "counted", not "read".
        among = f"{_plural(total, noun)} {'counted' if tally.silent_documents else _seen(tally)}"
    if result == "supported":
        return f"supported by {tally.supported} of {total} {among}"
    if result == "contradicted":
        return f"contradicted by {tally.not_supported} of {total} {among}"
    return f"{label}: supported by {tally.supported} of {total} {among}, contradicted by {tally.not_supported}"


def provisional_words(tally: Tally) -> str:
    """Said of every score of a run still going on: the share can still move either way."""
    return f"so far, from {tally.judgements_made} of {tally.judgements_known} judgements"


def waiting_words(tally: Tally) -> str:
    """Said of a run going on that has no score yet: how far its judging is. Not "so far" after
    "no score yet", which says the same thing twice."""
    return f"{tally.judgements_made} of {tally.judgements_known} judgements made"
