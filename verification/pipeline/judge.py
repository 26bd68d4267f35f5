"""Claims + evidence passages → a verdict and rationale for each passage.

One call judges the evidence of several claims (those decomposed together, as their pages are
read), up to BATCH_SIZE items: the instructions and each paragraph are read once per call instead
of once per claim, and the model can compare passages. The design paper asked once per claim and
passage."""

import re
from collections.abc import Sequence
from typing import Any, TypeVar

from .types import ClaimToJudge, EvidenceToJudge, JsonLLM, Judgement, MalformedAnswer, Verdict

# Evidence items (pages) per call: twice what one claim has at the default top-k, so claims
# share the instructions; few enough that a small local model keeps track and a failed call
# fails few items.
BATCH_SIZE = 16
# An item is up to top-k excerpts of one page (with context), so it gets room for several.
MAX_PASSAGE_CHARS = 4000
MAX_TITLE_CHARS = 150

# The rationale comes before the verdict so the model reasons first (chain of thought), and is
# one short sentence: a model writes slowly, and the verdict needs the reason, not an essay.
# "irrelevant" is spelled out because models otherwise call off-topic passages "not supported",
# which would count against a true claim. Sent with every judge call, so it says each rule once.
SYSTEM_PROMPT = """You check claims from an AI-written text against web passages. A passage is one or more
excerpts of one page, joined by " … ", listed under the claim it is evidence for; the paragraph a
claim came from (P1..) only tells what the claim means. Judge each passage from its text alone:
- supported: it states or clearly implies that the claim is true;
- not_supported: it is about the claim's subject and contradicts it or shows it is wrong;
- irrelevant: it does not address the claim, or says too little to decide.
For each passage write a rationale (one sentence, at most 20 words), then the verdict. Answer
with JSON: {"judgements": [{"evidence": "E1", "rationale": ..., "verdict": ...}, ...]}, one entry
per passage; in plain text, one line per passage: "E1: verdict: rationale"."""

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


def pack(groups: Sequence[Sequence[T]], size: int = BATCH_SIZE) -> list[list[T]]:
    """Groups (a claim's evidence) packed in order into batches of at most `size`; a group is
    split only when it does not fit in a batch of its own."""
    packed: list[list[T]] = []
    for group in groups:
        for part in batches(group, size):
            if packed and len(packed[-1]) + len(part) <= size:
                packed[-1].extend(part)
            else:
                packed.append(list(part))
    return packed


def build_prompt(claims: Sequence[ClaimToJudge]) -> str:
    """Each paragraph once (P1..), then each claim (C1..) with its passages (E1.., numbered
    across claims). A page title the passage already starts with is not repeated."""
    paragraphs: dict[str, int] = {}
    for claim in claims:
        paragraphs.setdefault(claim.context, len(paragraphs) + 1)
    parts = ["Context paragraphs:\n" + "\n".join(f"P{n}: {text}" for text, n in paragraphs.items())]
    number = 0
    for c, claim in enumerate(claims, start=1):
        passages = []
        for item in claim.items:
            number += 1
            passages.append(f"E{number}{_title(item)}\n{item.passage[:MAX_PASSAGE_CHARS]}")
        parts.append(f"C{c} (from P{paragraphs[claim.context]}): {claim.text}\n\n" + "\n\n".join(passages))
    return "\n\n".join(parts)


def _title(item: EvidenceToJudge) -> str:
    title = item.source_title[:MAX_TITLE_CHARS]
    return f" (from: {title})" if title and not item.passage.startswith(title) else ""


def judge_claims(llm: JsonLLM, claims: Sequence[ClaimToJudge]) -> list[Judgement]:
    """One call for up to BATCH_SIZE items of several claims; a judgement per item, in order."""
    items = [item for claim in claims for item in claim.items]
    labels = {f"E{i}": item.key for i, item in enumerate(items, start=1)}
    return llm.complete(
        system=SYSTEM_PROMPT,
        user=build_prompt(claims),
        schema_name="judgements",
        schema=SCHEMA,
        parse=lambda answer: parse_judgements(answer, labels),
    )


def judge_claim(llm: JsonLLM, *, claim: str, context: str, items: Sequence[EvidenceToJudge]) -> list[Judgement]:
    return judge_claims(llm, [ClaimToJudge(text=claim, context=context, items=tuple(items))])


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
