"""What each of a text's own citations turned out to be (issue 34), from its source's state and the
verdicts on that source's passages for the claims of the citing sentence: one pure function for the
API, the CLI, the reports and (next) the page's badges.

- supports: some passage of it supports a claim of its sentence;
- contradicts: none supports, and some passage says the opposite (judged not supported);
- does_not_say: it was read, and nothing in it is about what its sentence says;
- could_not_be_read: fetching or reading it failed (with why);
- does_not_exist: its host does not resolve, it answered 404 or 410 (a DOI doi.org does not know);
- unresolved: the marker points nowhere ([9] with three sources listed);
- not_checked: it was not read (over MAX_CITED_SOURCES, no address given, no claim of its
  sentence checked, the run ended first);
- pending: while its sentence is being checked."""

from collections.abc import Iterable
from dataclasses import dataclass

from verification.pipeline.refusals import page_gone

SUPPORTS = "supports"
CONTRADICTS = "contradicts"
DOES_NOT_SAY = "does_not_say"
COULD_NOT_BE_READ = "could_not_be_read"
DOES_NOT_EXIST = "does_not_exist"
UNRESOLVED = "unresolved"
CITATION_NOT_CHECKED = "not_checked"
CITATION_PENDING = "pending"

# In words a reader knows, in the order a summary lists them.
CITATION_OUTCOMES = {
    SUPPORTS: "supports its sentence",
    CONTRADICTS: "contradicts its sentence",
    DOES_NOT_SAY: "does not say this",
    COULD_NOT_BE_READ: "could not be read",
    DOES_NOT_EXIST: "does not exist",
    UNRESOLVED: "points nowhere",
    CITATION_NOT_CHECKED: "not checked",
    CITATION_PENDING: "being checked",
}
# The summary's verbs for several citations ("3 support their sentence").
_SUMMARY_WORDS = {
    SUPPORTS: ("supports its sentence", "support their sentence"),
    CONTRADICTS: ("contradicts it", "contradict it"),
    DOES_NOT_SAY: ("does not say it", "do not say it"),
    COULD_NOT_BE_READ: ("could not be read", "could not be read"),
    DOES_NOT_EXIST: ("does not exist", "do not exist"),
    UNRESOLVED: ("points nowhere", "point nowhere"),
    CITATION_NOT_CHECKED: ("was not checked", "were not checked"),
    CITATION_PENDING: ("is being checked", "are being checked"),
}

NO_ADDRESS = "it gives no address to read"
NO_CLAIM_CHECKED = "no claim of its sentence was checked against it"
ENDED_FIRST = "the run ended before it was read"
NOT_JUDGED = "its passages could not be judged"
NOTHING_SAID = "nothing in it is about what its sentence says"


@dataclass(frozen=True)
class CitedSource:
    """What a citation's outcome is decided from."""

    url: str = ""
    unresolved: str = ""  # why its marker points nowhere
    left_out: str = ""  # why its address is not read
    source_status: str = ""  # its Source's status; "" while no claim took it to read
    source_error: str = ""
    verdicts: tuple[str, ...] = ()  # judged evidence from its source for its sentence's claims
    judge_failed: bool = False  # some evidence of it could not be judged
    sentence_finished: bool = False  # every claim of its sentence has ended
    run_finished: bool = False


def citation_outcome(cited: CitedSource) -> tuple[str, str]:
    """(outcome, reason): the reason says why, in words, where the outcome alone does not."""
    if cited.unresolved:
        return UNRESOLVED, cited.unresolved
    if cited.left_out:
        return CITATION_NOT_CHECKED, cited.left_out
    if not cited.url:
        return CITATION_NOT_CHECKED, NO_ADDRESS
    if cited.source_status == "failed":
        return (DOES_NOT_EXIST if page_gone(cited.source_error) else COULD_NOT_BE_READ), cited.source_error
    if "supported" in cited.verdicts:
        return SUPPORTS, ""
    settled = cited.sentence_finished or cited.run_finished
    if not settled:
        return CITATION_PENDING, ""
    if not cited.source_status:
        return CITATION_NOT_CHECKED, NO_CLAIM_CHECKED
    if cited.source_status != "done":
        return CITATION_NOT_CHECKED, ENDED_FIRST
    if "not_supported" in cited.verdicts:
        return CONTRADICTS, ""
    if cited.judge_failed and not cited.verdicts:
        return CITATION_NOT_CHECKED, NOT_JUDGED
    return DOES_NOT_SAY, NOTHING_SAID


def citation_counts(outcomes: Iterable[str]) -> dict[str, int]:
    """How many citations have each outcome, every outcome named (0 when none has it)."""
    counts = dict.fromkeys(CITATION_OUTCOMES, 0)
    for outcome in outcomes:
        counts[outcome] += 1
    return counts


def citation_summary(counts: dict[str, int]) -> str:
    """ "6 citations: 3 support their sentence, 1 does not say it, 1 contradicts it, 1 does not
    exist"; "" for a text without citations."""
    total = sum(counts.values())
    if not total:
        return ""
    parts = [
        f"{counts[outcome]} {_SUMMARY_WORDS[outcome][counts[outcome] != 1]}"
        for outcome in CITATION_OUTCOMES
        if counts.get(outcome)
    ]
    return f"{total} citation{'s' if total != 1 else ''}: " + ", ".join(parts)
