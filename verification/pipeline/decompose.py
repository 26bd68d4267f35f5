"""Sentence (with its paragraph as context) → standalone atomic claims, each with a web query."""

import re
from typing import Any

from .types import ClaimDraft, JsonLLM, MalformedAnswer, SegmentedSentence

MAX_CLAIMS_PER_SENTENCE = 8
MAX_QUERY_CHARS = 200

# Worded after the FACTS&EVIDENCE prompt: the paragraph is numbered S1..Sn so the model can
# resolve "it"/"this treatment" from earlier sentences, but only the target sentence is split.
# The example shows decontextualization and an empty answer for an opinion, because models
# otherwise invent claims for greetings and hedges.
SYSTEM_PROMPT = """You split one sentence of an AI-written text into atomic claims for fact-checking.
An atomic claim states exactly one checkable fact. Each claim must stand alone: replace
pronouns and references ("it", "this drug", "the company") with the names they refer to in the
context. Do not add facts that the sentence does not state. Opinions, greetings, advice and
questions have no claims. For each claim also write a short web search query that would find
evidence for or against it.

Example
Context:
S1: Metformin is the first-line drug for type 2 diabetes.
S2: It lowers blood sugar by reducing glucose production in the liver and was approved in the US in 1994.
S3: I hope this helps!
Target sentence: S2
Answer:
{"claims": [
 {"claim": "Metformin lowers blood sugar.", "query": "metformin lowers blood sugar"},
 {"claim": "Metformin reduces glucose production in the liver.", "query": "metformin liver glucose production"},
 {"claim": "Metformin was approved in the US in 1994.", "query": "metformin FDA approval 1994"}]}

With target sentence S3 the answer is {"claims": []}.

Answer with JSON: {"claims": [{"claim": ..., "query": ...}]}. In plain text, write one claim per
line as "- claim | query"."""

SCHEMA = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"claim": {"type": "string"}, "query": {"type": "string"}},
                "required": ["claim", "query"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["claims"],
    "additionalProperties": False,
}


def build_prompt(sentence: SegmentedSentence) -> str:
    lines = [f"S{i}: {text}" for i, text in enumerate(sentence.context, start=1)]
    return "Context:\n" + "\n".join(lines) + f"\nTarget sentence: S{sentence.position_in_context + 1}\nAnswer:"


def decompose_sentence(llm: JsonLLM, sentence: SegmentedSentence) -> list[ClaimDraft]:
    return llm.complete(
        system=SYSTEM_PROMPT,
        user=build_prompt(sentence),
        schema_name="claims",
        schema=SCHEMA,
        parse=parse_claims,
    )


_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.+)$")


def parse_claims(answer: Any) -> list[ClaimDraft]:
    """The model's answer → claims. Accepts the JSON shape asked for, a bare list, or plain
    text with one "- claim | query" bullet per line (servers without structured output)."""
    if isinstance(answer, dict) and isinstance(answer.get("claims"), list):
        items = answer["claims"]
    elif isinstance(answer, list):
        items = answer
    elif isinstance(answer, str):
        items = _bullets(answer)
    else:
        raise MalformedAnswer("expected an object with a 'claims' list")
    drafts: dict[str, ClaimDraft] = {}
    for item in items:
        draft = _draft(item)
        if draft and draft.text.lower() not in drafts:
            drafts[draft.text.lower()] = draft
    return list(drafts.values())[:MAX_CLAIMS_PER_SENTENCE]


def _bullets(text: str) -> list[dict]:
    if re.fullmatch(r"\W*(none|no claims?)\W*", text, flags=re.IGNORECASE) or not text:
        return []
    items = []
    for line in text.splitlines():
        match = _BULLET.match(line)
        if match:
            claim, _, query = match.group(1).partition("|")
            items.append({"claim": claim, "query": query})
    if not items:
        raise MalformedAnswer(f"neither JSON nor a bullet list: {text[:80]!r}")
    return items


def _draft(item: Any) -> ClaimDraft | None:
    if isinstance(item, str):
        item = {"claim": item}
    if not isinstance(item, dict):
        raise MalformedAnswer("a claim is neither text nor an object")
    claim = " ".join(str(item.get("claim") or "").split())
    query = " ".join(str(item.get("query") or "").split()) or claim
    if not claim:
        return None
    return ClaimDraft(text=claim, query=query[:MAX_QUERY_CHARS])
