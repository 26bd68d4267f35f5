"""The evidence one round of a trail check selected → a verdict on the claim, with the reasoning.

As in VeriTrail, a round that selected no sentence is Not Fully Supported without a call, and the
model reads the sources' (roots') selected sentences themselves, in their context, but only the
summaries of intermediate texts: what a summary says about the claim is what the next round
follows, and its sentences would be read again, closer to the sources, in that round.

VeriTrail's Not Fully Supported merges two answers factsite keeps apart, as its documents mode
does: the evidence refutes the claim (contradicted), or nothing states it (not fully supported).
For the loop both are "not fully supported"."""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from verification.pipeline.trail_graph import Trail
from verification.pipeline.trail_select import GAP, NodeSelection, json_answer_complete
from verification.pipeline.types import JsonLLM, MalformedAnswer


class TrailVerdict(StrEnum):
    FULLY_SUPPORTED = "fully_supported"
    NOT_FULLY_SUPPORTED = "not_fully_supported"
    CONTRADICTED = "contradicted"
    INCONCLUSIVE = "inconclusive"

    @property
    def not_fully_supported(self) -> bool:
        """What the loop counts as Not Fully Supported (VeriTrail's verdict of that name)."""
        return self in (TrailVerdict.NOT_FULLY_SUPPORTED, TrailVerdict.CONTRADICTED)


@dataclass(frozen=True)
class RoundVerdict:
    verdict: TrailVerdict
    reasoning: str
    # Whether the model was asked (a round with no evidence is decided without a call).
    called: bool


NO_EVIDENCE = "No text checked in this round has a sentence that supports or contradicts the claim."
MAX_REASONING_CHARS = 2000
# What an answer may hold: its reasoning (MAX_REASONING_CHARS at most are kept, about a token
# for four characters) and the verdict.
ANSWER_TOKENS = MAX_REASONING_CHARS // 4 + 64
# Marks a source's selected sentences among their neighbours.
MARK = ">>"

# Reasoning before the verdict so the model reasons first. Contradicted and inconclusive are told
# apart by whether the evidence agrees with itself: one refuting sentence against none that
# supports is a refutation, a refuting and a supporting one are the ambiguity VeriTrail calls
# inconclusive. "Every part" because a summary that states half a claim is the commonest way
# an unsupported detail passes. Sent unchanged with every call so a local server caches it.
SYSTEM_PROMPT = f"""You judge a claim against evidence drawn from a text's sources and from the
intermediate texts written from them (such as summaries). For a source you see the sentences
selected as evidence, marked {MARK}, among their neighbours; for an intermediate text, a summary of
what it says about the claim. Judge from this evidence alone.
fully_supported: taken together, the evidence states or strongly implies every part of the claim;
contradicted: the evidence says the opposite of the claim or of a part of it, and nothing supports that part;
inconclusive: the evidence is ambiguous, or parts of it support and parts contradict the claim;
not_fully_supported: a part of the claim is not stated or implied by the evidence, and nothing contradicts it.
Answer with JSON: {{"reasoning": "<at most three sentences>", "verdict": "<verdict>"}}"""

SCHEMA = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "verdict": {"type": "string", "enum": [verdict.value for verdict in TrailVerdict]},
    },
    "required": ["reasoning", "verdict"],
    "additionalProperties": False,
}


def judge_round(llm: JsonLLM, trail: Trail, claim: str, selections: Sequence[NodeSelection]) -> RoundVerdict:
    if not any(selection.sentence_ids for selection in selections):
        return RoundVerdict(TrailVerdict.NOT_FULLY_SUPPORTED, NO_EVIDENCE, called=False)
    verdict, reasoning = llm.complete(
        system=SYSTEM_PROMPT,
        user=build_prompt(trail, claim, selections),
        schema_name="trail_verdict",
        schema=SCHEMA,
        parse=parse_trail_verdict,
        max_tokens=ANSWER_TOKENS,
        done=json_answer_complete,
    )
    return RoundVerdict(verdict, reasoning, called=True)


def build_prompt(trail: Trail, claim: str, selections: Sequence[NodeSelection]) -> str:
    """The claim, then each node that holds evidence, numbered in the round's order. An
    intermediate text without a summary shows its selected sentences instead."""
    parts = []
    for number, selection in enumerate((s for s in selections if s.sentence_ids), start=1):
        if trail.is_root(selection.node_id) or not selection.summary:
            kind = "Source" if trail.is_root(selection.node_id) else "Intermediate text"
            parts.append(f"{kind} {number}, its evidence:\n{_in_context(selection)}")
        else:
            parts.append(f"Intermediate text {number}, what it says about the claim:\n{selection.summary}")
    return f"Claim: {claim}\n\nEvidence:\n" + "\n\n".join(parts)


def _in_context(selection: NodeSelection) -> str:
    lines: list[str] = []
    previous = None
    for sentence, text in sorted(selection.sentences.items(), key=lambda item: _number(item[0])):
        if previous is not None and _number(sentence) != previous + 1:
            lines.append(GAP)
        mark = MARK if sentence in selection.sentence_ids else " " * len(MARK)
        lines.append(f"{mark} {text}")
        previous = _number(sentence)
    return "\n".join(lines)


def _number(sentence_id: str) -> int:
    return int(sentence_id[1:])


_LABELLED = re.compile(r"^\W*(reasoning|reason|verdict)\W*?[:=][*_\s]*(.*)$", re.IGNORECASE)


def parse_trail_verdict(answer: Any) -> tuple[TrailVerdict, str]:
    """The answer → (verdict, reasoning): JSON as asked, or the plain lines small models write
    instead ("Reasoning: …" / "Verdict: …", or "<reason> | <verdict>")."""
    if isinstance(answer, dict):
        verdict, reasoning = parse_verdict(answer.get("verdict")), answer.get("reasoning")
        reasoning = reasoning if isinstance(reasoning, str) else ""
    elif isinstance(answer, str):
        verdict, reasoning = _plain(answer)
    else:
        raise MalformedAnswer("expected an object with a 'reasoning' and a 'verdict'")
    if verdict is None:
        raise MalformedAnswer("no verdict (fully_supported, not_fully_supported, contradicted, inconclusive)")
    return verdict, " ".join(reasoning.split())[:MAX_REASONING_CHARS]


def _plain(text: str) -> tuple[TrailVerdict | None, str]:
    verdict, reasoning, loose = None, [], []
    for line in filter(str.strip, text.splitlines()):
        labelled = _LABELLED.match(line)
        if labelled and labelled.group(1).lower() == "verdict":
            verdict = verdict or parse_verdict(labelled.group(2))
        elif labelled:
            reasoning.append(labelled.group(2))
        elif "|" in line and parse_verdict(line.rsplit("|", 1)[1]):
            verdict = verdict or parse_verdict(line.rsplit("|", 1)[1])
            reasoning.append(line.rsplit("|", 1)[0])
        elif parse_verdict(line):
            verdict = verdict or parse_verdict(line)
        else:
            loose.append(line)
    return verdict, " ".join(reasoning or loose)


_VERDICT_WORDS = {
    **dict.fromkeys(["fully_supported", "supported", "fully_supports", "supports", "true"], "fully_supported"),
    **dict.fromkeys(
        ["not_fully_supported", "not_supported", "unsupported", "partially_supported", "partly_supported"],
        "not_fully_supported",
    ),
    **dict.fromkeys(["contradicted", "contradicts", "refuted", "refutes", "false"], "contradicted"),
    **dict.fromkeys(["inconclusive", "ambiguous", "unclear", "mixed"], "inconclusive"),
}


def parse_verdict(value: Any) -> TrailVerdict | None:
    if not isinstance(value, str):
        return None
    words = re.sub(r"[^a-z]+", " ", value.lower()).split()
    found = _VERDICT_WORDS.get("_".join(words))
    return TrailVerdict(found) if found else None
