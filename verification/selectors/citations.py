"""A run's own citations with their outcomes (issue 34), for the result JSON, the CLI, the reports
and the result page's badges: one read of the rows, the outcome of each from scoring/citations.py."""

import re
from collections import defaultdict
from urllib.parse import urlsplit

from verification.models import FINISHED, Citation, Evidence, Status, Verification
from verification.scoring.citations import (
    CITATION_NOT_CHECKED,
    CITATION_OUTCOMES,
    CITATION_PENDING,
    CONTRADICTS,
    COULD_NOT_BE_READ,
    DOES_NOT_EXIST,
    DOES_NOT_SAY,
    SUPPORTS,
    UNRESOLVED,
    CitedSource,
    citation_counts,
    citation_outcome,
)
from verification.selectors.records import once_finished


def citation_results(verification: Verification) -> list[dict]:
    """Each citation in the order of the text: its sentence's index (None without one), its marker
    and where it stands in the text, what it points to, and its outcome in a word and in words."""
    citations = list(Citation.objects.filter(verification=verification).select_related("sentence", "source"))
    if not citations:
        return []
    verdicts: dict[tuple[int, int], set[str]] = defaultdict(set)
    judge_failed: set[tuple[int, int]] = set()
    evidence = Evidence.objects.filter(
        claim__sentence__verification=verification,
        source_id__in={c.source_id for c in citations if c.source_id},
    ).values_list("source_id", "claim__sentence_id", "status", "verdict")
    for source_id, sentence_id, status, verdict in evidence:
        if status == Status.DONE and verdict:
            verdicts[source_id, sentence_id].add(verdict)
        elif status == Status.FAILED:
            judge_failed.add((source_id, sentence_id))
    run_finished = verification.status in FINISHED
    rows = []
    for citation in citations:
        key = (citation.source_id, citation.sentence_id)
        outcome, reason = citation_outcome(
            CitedSource(
                url=citation.url,
                unresolved=citation.unresolved,
                left_out=citation.left_out,
                source_status=citation.source.status if citation.source else "",
                source_error=citation.source.error if citation.source else "",
                verdicts=tuple(sorted(verdicts.get(key, ()))),
                judge_failed=key in judge_failed,
                sentence_finished=citation.sentence is not None and citation.sentence.status in FINISHED,
                run_finished=run_finished,
            )
        )
        rows.append(
            {
                "index": citation.index,
                "sentence": citation.sentence.index if citation.sentence else None,
                "marker": citation.marker,
                "start": citation.start,
                "end": citation.end,
                "points_to": citation.points_to,
                "label": citation.label,
                "url": citation.url or None,
                "title": citation.title,
                "source": citation.source_id,
                "outcome": outcome,
                "outcome_label": CITATION_OUTCOMES[outcome],
                "reason": reason,
            }
        )
    return rows


def citations_counted(rows: list[dict]) -> dict[str, int]:
    return citation_counts(row["outcome"] for row in rows)


# A badge's words in the text, short beside the marker: "[2] contradicts", the summary and the
# badge's own panel saying "its sentence".
_BADGE_WORDS = {outcome: label.removesuffix(" its sentence") for outcome, label in CITATION_OUTCOMES.items()}
# Each outcome's shape, drawn before its words as the sentences' are (colour is never the only signal).
CITATION_ICONS = {
    SUPPORTS: "✓",
    CONTRADICTS: "✗",
    DOES_NOT_SAY: "–",
    COULD_NOT_BE_READ: "!",
    DOES_NOT_EXIST: "∅",
    UNRESOLVED: "?",
    CITATION_NOT_CHECKED: "○",
    CITATION_PENDING: "…",
}
# The verdict a cited passage has when it decides each outcome.
_DECIDING_VERDICT = {SUPPORTS: "supported", CONTRADICTS: "not_supported", DOES_NOT_SAY: "irrelevant"}
_GRAPHRAG_RECORDS = re.compile(r"Data:\s*([A-Za-z]+)")
# A link is made only to these: a cited address is outside content (`javascript:` must not run).
_LINKED_SCHEMES = ("http://", "https://")


def citation_badges(verification: Verification) -> list[dict]:
    """The citations as the result page shows them in the text: each of `citation_results` with a
    short name, its outcome's words and shape, and, for a source that was read, the passage its
    outcome rests on with the judge's rationale. Cached once the run has finished."""
    return once_finished(verification, "citation-badges", lambda: _badges(verification))


def _badges(verification: Verification) -> list[dict]:
    rows = citation_results(verification)
    if not rows:
        return []
    deciding = _deciding_passages(verification, rows)
    return [
        {
            **row,
            "name": _name(row),
            "words": _BADGE_WORDS[row["outcome"]],
            "icon": CITATION_ICONS[row["outcome"]],
            "host": _host(row["url"]),
            "link": row["url"] if (row["url"] or "").lower().startswith(_LINKED_SCHEMES) else "",
            "evidence": deciding.get((row["source"], row["sentence"], _DECIDING_VERDICT.get(row["outcome"]))),
        }
        for row in rows
    ]


def _deciding_passages(verification: Verification, rows: list[dict]) -> dict[tuple, dict]:
    """(source id, sentence index, verdict) → the most relevant passage of that source judged so for
    a claim of that sentence: what a badge shows its reader."""
    items = (
        Evidence.objects.filter(
            claim__sentence__verification=verification,
            source_id__in={row["source"] for row in rows if row["outcome"] in _DECIDING_VERDICT},
            status=Status.DONE,
        )
        .order_by("-relevance", "pk")
        .values_list(
            "pk",
            "source_id",
            "claim__sentence__index",
            "claim__text",
            "verdict",
            "passage",
            "highlights",
            "rationale",
            "duplicate_of_id",
        )
    )
    found: dict[tuple, dict] = {}
    for pk, source, sentence, claim, verdict, passage, highlights, rationale, duplicate_of in items:
        found.setdefault(
            (source, sentence, verdict),
            # A copy is shown under the item it copies: the page's anchor is that item's.
            {
                "id": duplicate_of or pk,
                "claim": claim,
                "passage": passage,
                "highlights": highlights,
                "rationale": rationale,
            },
        )
    return found


def _name(row: dict) -> str:
    """What the badge calls the citation: its number as written ("[2]"), a GraphRAG record
    ("Reports 7"), a source's name, else the cited address's host."""
    label = row["label"]
    if row["points_to"] == "graphrag":
        records = _GRAPHRAG_RECORDS.search(row["marker"])
        return f"{records.group(1) if records else 'Data'} {label}"
    if label and (row["points_to"] == "reference" or label.isdigit()):
        return f"[{label[:20]}]"
    if row["points_to"] == "name" and label:
        return label[:40]
    return _host(row["url"]) or row["marker"][:40]


def _host(url: str | None) -> str:
    try:
        host = urlsplit(url or "").hostname or ""
    except ValueError:  # a malformed address names no host
        return ""
    return host.removeprefix("www.")
