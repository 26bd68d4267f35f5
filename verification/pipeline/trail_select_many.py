"""Evidence selection for several claims against one text in one call: cheaper than VeriTrail,
which asks once per (claim, text). The claims of a run reach the same texts in the same rounds
(every claim's first round reads the final text's inputs), so a prompt holds a text's sentences
that any of them kept and each claim by label (C1, C2, ...), and the answer gives each claim its
ids and summary. As for one claim (trail_select), ids are assigned by code and an id that was
not in the prompt is dropped for every claim: no claim's evidence can be invented."""

import re
from collections.abc import Sequence
from typing import Any

from verification.pipeline.trail_select import (
    NodeSelection,
    SelectionOptions,
    answer_tokens,
    chunk_indices,
    ids_in,
    json_answer_complete,
    kept_sentences,
    node_sentences,
    numbered_text,
    plain_selection,
    select_evidence,
    selection_of,
    sentence_id,
)
from verification.pipeline.types import Embedder, JsonLLM, MalformedAnswer

# The same rules as for one claim (trail_select.SYSTEM_PROMPT says why each is worded so), each
# claim answered on its own; sent unchanged with every call, before the variable part.
SYSTEM_PROMPT = """You select evidence for fact-checking several claims against one text.
The claims are labelled (C1, C2, ...). The text's sentences are numbered (S1, S2, ...); "…" marks
sentences left out.
For each claim on its own: select every sentence that states, implies or contradicts the claim or
a part of it (not sentences that are only about the same topic), then summarise in at most three
sentences what the text says about that claim, in the text's own terms, including anything that
contradicts it; an empty summary when it says nothing about it.
Answer with JSON: {"selections": [{"claim": "C1", "sentence_ids": ["S2", "S7"], "summary": "..."}]}
with one entry per claim (an empty list when no sentence is evidence for it)."""

SCHEMA = {
    "type": "object",
    "properties": {
        "selections": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "claim": {"type": "string"},
                    "sentence_ids": {"type": "array", "items": {"type": "string"}},
                    "summary": {"type": "string"},
                },
                "required": ["claim", "sentence_ids", "summary"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["selections"],
    "additionalProperties": False,
}


def claim_label(position: int) -> str:
    return f"C{position + 1}"


def build_prompt(claims: Sequence[str], sentences: Sequence[str], indices: Sequence[int]) -> str:
    """The claims by label, then the chunk's sentences by id."""
    listed = "\n".join(f"{claim_label(i)}: {claim}" for i, claim in enumerate(claims))
    return f"Claims:\n{listed}\n\nText:\n{numbered_text(sentences, indices)}"


def select_evidence_many(
    llm: JsonLLM,
    *,
    claims: Sequence[str],
    node_id: str,
    text: str,
    options: SelectionOptions | None = None,
    embedder: Embedder | None = None,
) -> list[NodeSelection]:
    """Each claim's selection in `text`, in the order of `claims`: one call per prompt the union
    of their kept sentences needs (one claim alone is asked as trail_select asks it)."""
    options = options or SelectionOptions()
    if len(claims) == 1:
        return [select_evidence(llm, claim=claims[0], node_id=node_id, text=text, options=options, embedder=embedder)]
    sentences = node_sentences(text)
    kept = sorted({i for claim in claims for i in kept_sentences(claim, sentences, options, embedder)})
    chunks = chunk_indices(kept, sentences, options)
    labels = [claim_label(i) for i in range(len(claims))]
    chosen: dict[str, set[int]] = {label: set() for label in labels}
    summaries: dict[str, list[str]] = {label: [] for label in labels}
    for indices in chunks:
        asked = {sentence_id(i): i for i in indices}
        answers = llm.complete(
            system=SYSTEM_PROMPT,
            user=build_prompt(claims, sentences, indices),
            schema_name="evidence_selections",
            schema=SCHEMA,
            parse=lambda answer, asked=asked: parse_selections(answer, asked, labels),
            max_tokens=len(labels) * answer_tokens(len(indices)),
            done=json_answer_complete,
        )
        for label, (ids, summary) in answers.items():
            chosen[label].update(asked[sentence] for sentence in ids)
            if ids and summary:
                summaries[label].append(summary)
    return [
        selection_of(
            node_id, sentences, sorted(chosen[label]), " ".join(summaries[label]), len(chunks), options.context
        )
        for label in labels
    ]


_CLAIM_HEADER = re.compile(r"^\W*(?:claim\s*)?C(\d{1,4})\b\W*(.*)$", re.IGNORECASE)


def parse_selections(answer: Any, asked: dict[str, int], labels: Sequence[str]) -> dict[str, tuple[list[str], str]]:
    """The answer → {label: (the asked ids it selects for that claim, in text order; summary)}
    for every label (a claim the answer leaves out selects nothing). JSON as asked, a bare list of
    entries, or plain blocks a small model writes ("C1" then "Sentences: …" / "Summary: …")."""
    if isinstance(answer, dict) and isinstance(answer.get("selections"), list):
        entries = answer["selections"]
    elif isinstance(answer, list):
        entries = answer
    elif isinstance(answer, str):
        entries = _plain_entries(answer)
    else:
        raise MalformedAnswer("expected an object with a 'selections' list")
    found: dict[str, tuple[list[str], str]] = {label: ([], "") for label in labels}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        label = str(entry.get("claim", "")).strip().upper()
        if label not in found:
            continue
        named = entry.get("sentence_ids")
        named = [str(item) for item in named] if isinstance(named, list) else []
        ids = {sentence for item in named for sentence in ids_in(item) if sentence in asked}
        summary = entry.get("summary") if isinstance(entry.get("summary"), str) else ""
        found[label] = (sorted(ids, key=asked.__getitem__), " ".join(summary.split()))
    return found


def claim_blocks(text: str, *, lines_say: str) -> list[tuple[str, str]]:
    """A small model's plain answer for several claims: each "C1" header line with the lines under
    it, as (label, text). `lines_say` names what those lines hold, for the error."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        header = _CLAIM_HEADER.match(line)
        if header:
            blocks.append((f"C{int(header.group(1))}", [header.group(2)] if header.group(2) else []))
        elif blocks:
            blocks[-1][1].append(line)
    if not blocks:
        raise MalformedAnswer(f"neither JSON nor 'C1' blocks with {lines_say} lines: {text[:80]!r}")
    return [(label, "\n".join(lines)) for label, lines in blocks]


def _plain_entries(text: str) -> list[dict]:
    entries = []
    for label, block in claim_blocks(text, lines_say="'Sentences: …'"):
        try:
            named, summary = plain_selection(block)
        except MalformedAnswer:
            named, summary = [], ""
        entries.append({"claim": label, "sentence_ids": named, "summary": summary})
    return entries
