"""A run's result shaped for a model's context: what it must act on (per sentence its band and
score, and each claim found contradicted or unsupported with its best evidence: the URL, the
passage, the rationale), at most MAX_ANSWER_CHARS of JSON, with the permalink for the rest. Plain
functions over the result JSON the API serves (selectors.verification_result, trail_result)."""

import json

from verification.scoring import PENDING
from verification.scoring.citations import (
    CITATION_PENDING,
    CONTRADICTS,
    COULD_NOT_BE_READ,
    DOES_NOT_EXIST,
    DOES_NOT_SAY,
    UNRESOLVED,
    citation_summary,
)
from verification.scoring.trails import UNSUPPORTED

# A tool's answer, in characters of JSON: about 3,000 tokens, room for a model to read it and
# still write its revision. What does not fit is at the permalink.
MAX_ANSWER_CHARS = 12_000
# Claims a model should act on: a page contradicts it, or no page read confirms it.
FLAGGED = ("contradicted", "mixed", "unconfirmed", "no_evidence", "failed")
# The MCP resources of a run (server.py): its whole result JSON, and its Markdown report.
RESULT_URI = "factsite://v/{id}"
REPORT_URI = "factsite://v/{id}/report.md"
SENTENCE_CHARS = 300
PASSAGE_CHARS = 500
RATIONALE_CHARS = 300
HOW_TO_READ = (
    "Revise the sentences whose claims are flagged: 'contradicted' (a source says otherwise: use its passage), "
    "'mixed' (sources disagree), 'unconfirmed' or 'no_evidence' (nothing read confirms it: soften or remove it). "
    "Bands: green well supported, orange partly, red poorly, none nothing counted."
)
# A text's own citations a reviser should fix: the source says otherwise or not this, or is not there.
FLAGGED_CITATIONS = (CONTRADICTS, DOES_NOT_SAY, DOES_NOT_EXIST, COULD_NOT_BE_READ, UNRESOLVED)
HOW_TO_READ_CITATIONS = (
    "Each sentence's flagged_citations are its own citations whose source contradicts it, does not say it, does "
    "not exist, could not be read, or is a marker that points to no source: fix the citation or the sentence."
)


def shorten(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def progress_words(progress: dict) -> str:
    """'40% — sentences: 3 decomposed of 3; claims: 2 searched of 5; …'"""
    parts = []
    for stage, counts in progress.items():
        if not isinstance(counts, dict) or "total" not in counts:
            continue
        done = ", ".join(f"{value} {key}" for key, value in counts.items() if key != "total")
        parts.append(f"{stage}: {done} of {counts['total']}")
    return f"{progress['percent']}%" + (" — " + "; ".join(parts) if parts else "")


def text_answer(result: dict, *, permalink: str) -> str:
    """A text run's result (selectors.verification_result) for a model."""
    head = {
        "id": result["id"],
        "status": result["status"],
        "permalink": permalink,
        "score": result["score"],
        "band": result["band"],
        "report": REPORT_URI.format(id=result["id"]),
    }
    if result["error"]:
        head["error"] = result["error"]
    if result["status"] not in ("done", "failed", "cancelled"):
        head["progress"] = progress_words(result["progress"])
        head["note"] = "Still running: what is below is what is done so far. Call get_result again, with wait_seconds."
    head["how_to_read"] = HOW_TO_READ
    citations = result.get("citations") or []
    if citations:
        head["citations"] = citation_summary(result["citation_counts"])
        head["how_to_read"] += " " + HOW_TO_READ_CITATIONS
    rows = [_sentence(s) for s in result["sentences"]]
    for row in rows:
        its_own = [c for c in citations if c["sentence"] == row["index"]]
        flagged = [_citation(c) for c in its_own if c["outcome"] in FLAGGED_CITATIONS]
        if flagged:
            row["flagged_citations"] = flagged
        elif any(c["outcome"] == CITATION_PENDING for c in its_own):
            row["citations_pending"] = True
    return _capped(head, rows, permalink=permalink)


def _citation(citation: dict) -> dict:
    row = {"marker": citation["marker"], "url": citation["url"], "outcome": citation["outcome_label"]}
    if citation["reason"]:
        row["why"] = shorten(citation["reason"], RATIONALE_CHARS)
    return row


def _sentence(sentence: dict) -> dict:
    claims = sentence["claims"]
    row = {
        "index": sentence["index"],
        "text": shorten(sentence["text"], SENTENCE_CHARS),
        "outcome": sentence["outcome"],
        "band": sentence["band"],
        "score": sentence["score"],
        "claims": len(claims),
    }
    flagged = [_claim(claim) for claim in claims if claim["outcome"] in FLAGGED]
    if flagged:
        row["flagged_claims"] = flagged
    pending = sum(1 for claim in claims if claim["outcome"] == PENDING)
    if pending:
        row["claims_pending"] = pending
    return row


def _claim(claim: dict) -> dict:
    row = {"claim": claim["text"], "outcome": claim["outcome"], "note": claim["note"]}
    if claim["error"]:
        row["error"] = claim["error"]
    best = _best_evidence(claim["evidence"])
    if best is not None:
        row["evidence"] = {
            "id": best["id"],
            "url": best["url"],
            "title": shorten(best["title"], 120),
            "verdict": best["verdict"],
            "passage": shorten(best["passage"], PASSAGE_CHARS),
            "rationale": shorten(best["rationale"], RATIONALE_CHARS),
        }
    return row


def _best_evidence(evidence: list[dict]) -> dict | None:
    """What a reviser needs first: a counted item that contradicts the claim, else one judged at
    all (the list comes most relevant first)."""
    counted = [item for item in evidence if item["included"] and item["verdict"]]
    against = [item for item in counted if item["verdict"] == "not_supported"]
    return (against or counted or [None])[0]


def trail_answer(result: dict, *, permalink: str) -> str:
    """A trail run's result (selectors.trail_result) for a model: per sentence its band, and each
    claim not fully supported with the step of the trail where it entered."""
    head = {
        "id": result["id"],
        "kind": "trail",
        "status": result["status"],
        "permalink": permalink,
        "score": result["score"],
        "verdicts": result["summary"]["verdicts"],
        "entered_at": result["summary"]["entered_at"],
        "report": REPORT_URI.format(id=result["id"]),
    }
    if result["error"]:
        head["error"] = result["error"]
    if result["status"] not in ("done", "failed", "cancelled"):
        head["progress"] = progress_words(result["progress"])
    claims_of = {}
    for claim in result["claims"]:
        claims_of.setdefault(claim["sentence"], []).append(claim)
    sentences = []
    for sentence in result["sentences"]:
        claims = claims_of.get(sentence["index"], [])
        row = {
            "index": sentence["index"],
            "text": shorten(sentence["text"], SENTENCE_CHARS),
            "band": sentence["band"],
            "score": sentence["score"],
            "claims": len(claims),
        }
        flagged = [
            {
                "claim": claim["text"],
                "verdict": claim["verdict"],
                "reasoning": shorten(claim["reasoning"], RATIONALE_CHARS),
                "entered": claim["entered"]["words"] if claim["entered"] else None,
            }
            for claim in claims
            if claim["verdict"] in UNSUPPORTED
        ]
        if flagged:
            row["flagged_claims"] = flagged
        sentences.append(row)
    return _capped(head, sentences, permalink=permalink)


def _capped(head: dict, sentences: list[dict], *, permalink: str) -> str:
    """The head and as many sentences as fit in MAX_ANSWER_CHARS, flagged ones first; the
    sentences left out are counted, with where to read them."""
    # Room kept for the note on what was left out.
    budget = MAX_ANSWER_CHARS - len(to_json(head)) - 300
    ordered = sorted(sentences, key=lambda row: (not _flagged(row), row["index"]))
    kept, used = [], 0
    for row in ordered:
        size = len(to_json(row)) + 1
        if used + size > budget:
            continue
        kept.append(row)
        used += size
    answer = {**head, "sentences": sorted(kept, key=lambda row: row["index"])}
    left_out = len(sentences) - len(kept)
    if left_out:
        answer["sentences_left_out"] = left_out
        answer["rest"] = f"{left_out} sentences did not fit in this answer: read them all at {permalink}"
    return to_json(answer)


def _flagged(row: dict) -> bool:
    return "flagged_claims" in row or "flagged_citations" in row


def to_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
