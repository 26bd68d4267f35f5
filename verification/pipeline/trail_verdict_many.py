"""Round verdicts for several claims in one call (issue 38): VeriTrail asks once per claim and
round, and most of such a call is its instructions. The claims of a run reach their verdicts at
about the same time (their selections are shared: trail_select_many), so a prompt holds each
claim's round as trail_verdict shows it alone, labelled (C1, C2, ...), and the answer gives each
label its reasoning and verdict. A label the answer leaves out, or whose verdict cannot be read,
is asked again alone: no claim is given another's verdict or none."""

from collections.abc import Sequence
from typing import Any

from verification.pipeline.trail_graph import Trail
from verification.pipeline.trail_select import NodeSelection, json_answer_complete
from verification.pipeline.trail_select_many import claim_blocks, claim_label
from verification.pipeline.trail_verdict import (
    ANSWER_TOKENS,
    MARK,
    NO_EVIDENCE,
    RoundVerdict,
    TrailVerdict,
    build_prompt,
    judge_round,
    parse_trail_verdict,
)
from verification.pipeline.types import JsonLLM, MalformedAnswer

# trail_verdict.SYSTEM_PROMPT's rules word for word (it says why they are worded so), with each
# claim judged from its own evidence only: a claim supported by another claim's evidence would
# pass where asked alone it would not. Sent unchanged with every call, before the variable part.
SYSTEM_PROMPT = f"""You judge several claims, each against its own evidence drawn from a text's
sources and from the intermediate texts written from them (such as summaries). The claims are
labelled ([C1], [C2], ...). For a source you see the sentences selected as evidence, marked {MARK},
among their neighbours; for an intermediate text, a summary of what it says about the claim.
Judge each claim from its own evidence alone, never from another claim's.
fully_supported: taken together, the evidence states or strongly implies every part of the claim;
contradicted: the evidence says the opposite of the claim or of a part of it, and nothing supports that part;
inconclusive: the evidence is ambiguous, or parts of it support and parts contradict the claim;
not_fully_supported: a part of the claim is not stated or implied by the evidence, and nothing contradicts it.
Answer with JSON: {{"verdicts": [{{"claim": "C1", "reasoning": "<at most three sentences>", "verdict": "<verdict>"}}]}}
with one entry per claim."""

SCHEMA = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "claim": {"type": "string"},
                    "reasoning": {"type": "string"},
                    "verdict": {"type": "string", "enum": [verdict.value for verdict in TrailVerdict]},
                },
                "required": ["claim", "reasoning", "verdict"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["verdicts"],
    "additionalProperties": False,
}

# A claim's round, as judge_round takes it: the claim and its round's selections.
Round = tuple[str, Sequence[NodeSelection]]


def build_prompt_many(trail: Trail, rounds: Sequence[Round]) -> str:
    """Each round as trail_verdict.build_prompt shows it alone, after its label."""
    return "\n\n".join(
        f"[{claim_label(i)}] {build_prompt(trail, claim, selections)}" for i, (claim, selections) in enumerate(rounds)
    )


def judge_rounds(llm: JsonLLM, trail: Trail, rounds: Sequence[Round]) -> list[RoundVerdict]:
    """Each round's verdict, in the order of `rounds`: those without evidence decided without a
    call, the others in one call (one alone is asked as judge_round asks it), and a claim whose
    label the answer does not settle asked alone afterwards."""
    verdicts: list[RoundVerdict | None] = [
        None if _has_evidence(selections) else RoundVerdict(TrailVerdict.NOT_FULLY_SUPPORTED, NO_EVIDENCE, called=False)
        for _, selections in rounds
    ]
    asked = [i for i, verdict in enumerate(verdicts) if verdict is None]
    if len(asked) > 1:
        labels = [claim_label(position) for position in range(len(asked))]
        answers = llm.complete(
            system=SYSTEM_PROMPT,
            user=build_prompt_many(trail, [rounds[i] for i in asked]),
            schema_name="trail_verdicts",
            schema=SCHEMA,
            parse=lambda answer: parse_verdicts(answer, labels),
            max_tokens=len(labels) * ANSWER_TOKENS,
            done=json_answer_complete,
        )
        for i, label in zip(asked, labels, strict=True):
            if label in answers:
                verdicts[i] = RoundVerdict(*answers[label], called=True)
    for i, verdict in enumerate(verdicts):
        if verdict is None:
            claim, selections = rounds[i]
            verdicts[i] = judge_round(llm, trail, claim, selections)
    return [verdict for verdict in verdicts if verdict is not None]


def _has_evidence(selections: Sequence[NodeSelection]) -> bool:
    return any(selection.sentence_ids for selection in selections)


def parse_verdicts(answer: Any, labels: Sequence[str]) -> dict[str, tuple[TrailVerdict, str]]:
    """The answer → {label: (verdict, reasoning)} for each label it settles (a label left out,
    unknown or without a readable verdict is not in it). JSON as asked, a bare list of entries,
    or plain blocks a small model writes ("C1" then "Reasoning: …" / "Verdict: …")."""
    if isinstance(answer, dict) and isinstance(answer.get("verdicts"), list):
        entries = _labelled(answer["verdicts"])
    elif isinstance(answer, list):
        entries = _labelled(answer)
    elif isinstance(answer, str):
        entries = _plain_entries(answer)
    else:
        raise MalformedAnswer("expected an object with a 'verdicts' list")
    found: dict[str, tuple[TrailVerdict, str]] = {}
    for label, entry in entries:
        if label not in labels or label in found:
            continue
        try:
            found[label] = parse_trail_verdict(entry)
        except MalformedAnswer:
            continue
    return found


def _labelled(entries: list) -> list[tuple[str, Any]]:
    return [(str(entry.get("claim", "")).strip(" []").upper(), entry) for entry in entries if isinstance(entry, dict)]


def _plain_entries(text: str) -> list[tuple[str, Any]]:
    """Plain blocks, each (label, its lines) read as trail_verdict reads one answer."""
    return claim_blocks(text, lines_say="'Verdict: …'")
