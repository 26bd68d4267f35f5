"""A run's own citations with their outcomes (issue 34), for the result JSON, the CLI and the
reports: one read of the rows, the outcome of each from scoring/citations.py."""

from collections import defaultdict

from verification.models import FINISHED, Citation, Evidence, Status, Verification
from verification.scoring.citations import CITATION_OUTCOMES, CitedSource, citation_counts, citation_outcome


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
