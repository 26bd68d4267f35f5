"""Claim + evidence passages → a verdict and rationale for each passage.

One call judges a batch of passages for one claim (the design paper asked once per claim and
passage): the claim and its context are read once and the model can compare passages, at a
fraction of the calls and tokens."""

import re
from collections.abc import Sequence
from typing import Any, TypeVar

from .types import EvidenceToJudge, JsonLLM, Judgement, MalformedAnswer, Verdict

# Passages per call: enough to save calls, few enough for small local models to keep track.
BATCH_SIZE = 8
# An item is up to top-k excerpts of one page (with context), so it gets room for several.
MAX_PASSAGE_CHARS = 4000

# The rationale comes before the verdict so the model reasons first (chain of thought);
# "irrelevant" is spelled out because models otherwise call off-topic passages "not supported",
# which would count against a true claim.
SYSTEM_PROMPT = """You check claims from an AI-written text against evidence passages from the web.
Each passage is one or more excerpts of one web page, joined by " … ". For each passage decide:
- supported: the passage states or clearly implies that the claim is true;
- not_supported: the passage is about the claim's subject and contradicts it, or shows it is wrong;
- irrelevant: the passage does not address the claim, or says too little to decide.
Judge only from the passage, not from what you know. The paragraph the claim came from is
given as context for what the claim means. For every passage, write a short rationale (one to
three sentences: what the passage says and how it bears on the claim), then the verdict.
Answer with JSON: {"judgements": [{"evidence": "E1", "rationale": ..., "verdict": ...}, ...]}
with one entry per passage. In plain text, write one line per passage: "E1: verdict: rationale"."""

SCHEMA = {
    "type": "object",
    "properties": {
        "judgements": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "evidence": {"type": "string"},
                    "rationale": {"type": "string"},
                    "verdict": {"type": "string", "enum": [v.value for v in Verdict]},
                },
                "required": ["evidence", "rationale", "verdict"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["judgements"],
    "additionalProperties": False,
}

T = TypeVar("T")

NO_VERDICT = "the model gave no verdict for this evidence"


def batches(items: Sequence[T], size: int = BATCH_SIZE) -> list[list[T]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def build_prompt(claim: str, context: str, items: Sequence[EvidenceToJudge]) -> str:
    passages = "\n\n".join(
        f"E{i}"
        + (f" (from: {item.source_title[:150]})" if item.source_title else "")
        + f"\n{item.passage[:MAX_PASSAGE_CHARS]}"
        for i, item in enumerate(items, start=1)
    )
    return f"Context paragraph:\n{context}\n\nClaim: {claim}\n\nEvidence passages:\n{passages}"


def judge_claim(llm: JsonLLM, *, claim: str, context: str, items: Sequence[EvidenceToJudge]) -> list[Judgement]:
    """One call for up to BATCH_SIZE items; a judgement per item, in order."""
    labels = {f"E{i}": item.key for i, item in enumerate(items, start=1)}
    return llm.complete(
        system=SYSTEM_PROMPT,
        user=build_prompt(claim, context, items),
        schema_name="judgements",
        schema=SCHEMA,
        parse=lambda answer: parse_judgements(answer, labels),
    )


_LINE = re.compile(r"^\W*(E\d+)\W+([A-Za-z_]+(?:[ -][A-Za-z_]+)*?)\s*(?::|\s[-–—]|[–—])\s*(.*)$")


def parse_judgements(answer: Any, labels: dict[str, str]) -> list[Judgement]:
    """The answer → one Judgement per label (E1.. → evidence key). Items the model skipped get
    an error; an answer that judges none of them is malformed."""
    if isinstance(answer, dict) and isinstance(answer.get("judgements"), list):
        entries = answer["judgements"]
    elif isinstance(answer, list):
        entries = answer
    elif isinstance(answer, str):
        entries = [
            {"evidence": m.group(1), "verdict": m.group(2), "rationale": m.group(3)}
            for m in map(_LINE.match, answer.splitlines())
            if m
        ]
    else:
        raise MalformedAnswer("expected an object with a 'judgements' list")
    found: dict[str, Judgement] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        label = str(entry.get("evidence", "")).strip().upper()
        verdict = parse_verdict(entry.get("verdict"))
        if label in labels and verdict is not None and label not in found:
            rationale = " ".join(str(entry.get("rationale") or "").split())
            found[label] = Judgement(key=labels[label], verdict=verdict, rationale=rationale)
    if not found:
        raise MalformedAnswer("no usable verdict in the answer")
    return [
        found.get(label) or Judgement(key=key, verdict=None, rationale="", error=NO_VERDICT)
        for label, key in labels.items()
    ]


_VERDICT_WORDS = {
    "supported": Verdict.SUPPORTED,
    "supports": Verdict.SUPPORTED,
    "true": Verdict.SUPPORTED,
    "not_supported": Verdict.NOT_SUPPORTED,
    "unsupported": Verdict.NOT_SUPPORTED,
    "refuted": Verdict.NOT_SUPPORTED,
    "contradicted": Verdict.NOT_SUPPORTED,
    "false": Verdict.NOT_SUPPORTED,
    "irrelevant": Verdict.IRRELEVANT,
    "not_relevant": Verdict.IRRELEVANT,
    "not_enough_info": Verdict.IRRELEVANT,
}


def parse_verdict(value: Any) -> Verdict | None:
    if not isinstance(value, str):
        return None
    return _VERDICT_WORDS.get("_".join(value.strip().lower().replace("-", " ").split()))
