"""A claim + one node of a trail → the node's sentences that support or contradict it, and a short
summary of what the node says about it (VeriTrail's evidence selection).

The node's text is split by the project's segmenter and every sentence gets an id from its
position ("S12"), assigned here, not by the model: an id the model returns that was not in its
prompt is dropped, so evidence can never be invented. A node too long for one prompt is split
over several. A large node can first be ranked against the claim with the passage ranker and
only its best sentences, with their neighbours, sent: VeriTrail sends every sentence, which is
most of its cost on book-length sources."""

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from verification.pipeline import lazy
from verification.pipeline.segment import segment
from verification.pipeline.types import Embedder, JsonLLM, MalformedAnswer

MAX_SUMMARY_CHARS = 1000
# Written between sentences that are not neighbours in the node (ranking left some out).
GAP = "…"
# What a sentence costs a prompt besides its text: its id ("S1234: ") and the line break.
LINE_OVERHEAD = 8


@dataclass(frozen=True)
class SelectionOptions:
    # What one prompt may hold: a small local model has a small context.
    max_sentences_per_prompt: int = 150
    max_chars_per_prompt: int = 12_000
    # The ranker keeps this many best sentences of a large node (None: it never ranks, as the paper).
    rank_top_k: int | None = 20
    # A node is large above this many sentences (None: when it does not fit one prompt).
    rank_above_sentences: int | None = None
    # Neighbours either side of a kept sentence: in a ranked prompt, and in the verdict's view of a source.
    context: int = 1


@dataclass(frozen=True)
class NodeSelection:
    """`sentences`: the selected sentences and their neighbours (±context), by id: the verdict
    shows a source's evidence in its context. `prompts`: the calls the selection took."""

    node_id: str
    sentence_ids: tuple[str, ...]
    sentences: dict[str, str]
    summary: str
    prompts: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "sentence_ids": list(self.sentence_ids),
            "sentences": dict(self.sentences),
            "summary": self.summary,
            "prompts": self.prompts,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NodeSelection":
        return cls(
            node_id=data["node_id"],
            sentence_ids=tuple(data["sentence_ids"]),
            sentences=dict(data["sentences"]),
            summary=data["summary"],
            prompts=data["prompts"],
        )


# Sentences that state or contradict only part of the claim are asked for too: a claim may be
# supported only by two nodes together (VeriTrail's evidence can combine), and the verdict needs
# the contradicting ones to tell "contradicted" from "not supported". "Only on the same topic" is
# ruled out because models otherwise pick every sentence naming the claim's subject. The summary
# is in the text's own terms because the verdict reads it instead of an intermediate text: a
# summary that restated the claim would support it whatever the text says. Sent unchanged with
# every call and before the variable part, so a local server can reuse its cached prefix.
SYSTEM_PROMPT = """You select evidence for fact-checking a claim against one text.
The text's sentences are numbered (S1, S2, ...); "…" marks sentences left out.
Select every sentence that states, implies or contradicts the claim or a part of it. Do not
select sentences that are only about the same topic.
Then summarise in at most three sentences what the text says about the claim, in the text's own
terms, including anything that contradicts it; an empty summary when it says nothing about it.
Answer with JSON: {"sentence_ids": ["S2", "S7"], "summary": "..."} (an empty list when no
sentence is evidence)."""

SCHEMA = {
    "type": "object",
    "properties": {
        "sentence_ids": {"type": "array", "items": {"type": "string"}},
        "summary": {"type": "string"},
    },
    "required": ["sentence_ids", "summary"],
    "additionalProperties": False,
}


# What an answer may hold: the ids (a few tokens each) and a summary of MAX_SUMMARY_CHARS.
ANSWER_TOKENS_BASE = MAX_SUMMARY_CHARS // 3 + 32
ANSWER_TOKENS_PER_SENTENCE = 4


def answer_tokens(sentences: int) -> int:
    return ANSWER_TOKENS_BASE + ANSWER_TOKENS_PER_SENTENCE * sentences


def json_answer_complete(answer: str) -> bool:
    """Whether an answer holds a whole JSON object (a model may write on after it)."""
    start, end = answer.find("{"), answer.rfind("}")
    if start == -1 or end < start:
        return False
    try:
        json.loads(answer[start : end + 1])
    except ValueError:
        return False
    return True


def sentence_id(index: int) -> str:
    return f"S{index + 1}"


@lru_cache(maxsize=32)
def node_sentences(text: str) -> tuple[str, ...]:
    """The node's sentences as the segmenter splits them (cached: every claim reads the same nodes)."""
    return tuple(sentence.text for sentence in segment(text))


@lru_cache(maxsize=32)
def _corpus(sentences: tuple[str, ...]):
    return _ranker().Corpus(sentences)


def _ranker():
    # Imported when a large node is first ranked: the ranker brings numpy and nltk (a quarter of a
    # second of CPU), which a worker that never ranks a node should not pay for at its start.
    return lazy.load("verification.pipeline.passages")


def prompt_chunks(
    claim: str, sentences: Sequence[str], options: SelectionOptions, embedder: Embedder | None = None
) -> list[list[int]]:
    """The sentence indices each prompt shows, in text order."""
    return chunk_indices(_kept(claim, tuple(sentences), options, embedder), sentences, options)


def kept_sentences(
    claim: str, sentences: Sequence[str], options: SelectionOptions, embedder: Embedder | None = None
) -> list[int]:
    """The indices of the sentences a prompt about `claim` shows (see _kept)."""
    return _kept(claim, tuple(sentences), options, embedder)


def chunk_indices(kept: Sequence[int], sentences: Sequence[str], options: SelectionOptions) -> list[list[int]]:
    """Sentence indices (in text order) cut into prompts that each fit the prompt's limits."""
    chunks: list[list[int]] = []
    size = 0
    for index in kept:
        grows = len(sentences[index]) + LINE_OVERHEAD
        if (
            not chunks
            or len(chunks[-1]) >= options.max_sentences_per_prompt
            or size + grows > options.max_chars_per_prompt
        ):
            chunks.append([])
            size = 0
        chunks[-1].append(index)
        size += grows
    return chunks


def _kept(claim: str, sentences: tuple[str, ...], options: SelectionOptions, embedder: Embedder | None) -> list[int]:
    """Every sentence of a small node; of a large one, the ranker's best with their neighbours.
    Sentences that share nothing with the claim are not kept (the ranker's own rule)."""
    everything = list(range(len(sentences)))
    if not options.rank_top_k or not _large(sentences, options):
        return everything
    scores = _ranker().rank_sentences(claim, _corpus(sentences), embedder)
    best = [int(i) for i in (-scores).argsort(kind="stable")[: options.rank_top_k] if scores[i] > 0]
    windows = _ranker().merge_windows(best, options.context, len(sentences))
    return [i for start, end in windows for i in range(start, end + 1)]


def _large(sentences: Sequence[str], options: SelectionOptions) -> bool:
    if options.rank_above_sentences is not None:
        return len(sentences) > options.rank_above_sentences
    chars = sum(len(sentence) + LINE_OVERHEAD for sentence in sentences)
    return len(sentences) > options.max_sentences_per_prompt or chars > options.max_chars_per_prompt


def build_prompt(claim: str, sentences: Sequence[str], indices: Sequence[int]) -> str:
    """The claim, then the chunk's sentences by id (the claim before the node's text: a claim's
    prompts share the longest prefix)."""
    return f"Claim: {claim}\n\nText:\n" + numbered_text(sentences, indices)


def numbered_text(sentences: Sequence[str], indices: Sequence[int]) -> str:
    """The chunk's sentences, one a line by id, "…" where sentences were left out between them."""
    lines: list[str] = []
    for position, index in enumerate(indices):
        if position and index != indices[position - 1] + 1:
            lines.append(GAP)
        lines.append(f"{sentence_id(index)}: {sentences[index]}")
    return "\n".join(lines)


def select_evidence(
    llm: JsonLLM,
    *,
    claim: str,
    node_id: str,
    text: str,
    options: SelectionOptions | None = None,
    embedder: Embedder | None = None,
) -> NodeSelection:
    """One call per prompt the node needs (none for a node whose kept sentences are none)."""
    options = options or SelectionOptions()
    sentences = node_sentences(text)
    chosen: set[int] = set()
    summaries: list[str] = []
    chunks = prompt_chunks(claim, sentences, options, embedder)
    for indices in chunks:
        asked = {sentence_id(i): i for i in indices}
        ids, summary = llm.complete(
            system=SYSTEM_PROMPT,
            user=build_prompt(claim, sentences, indices),
            schema_name="evidence_selection",
            schema=SCHEMA,
            parse=lambda answer, asked=asked: parse_selection(answer, asked),
            max_tokens=answer_tokens(len(indices)),
            done=json_answer_complete,
        )
        chosen.update(asked[sentence] for sentence in ids)
        if ids and summary:
            summaries.append(summary)
    return selection_of(node_id, sentences, sorted(chosen), " ".join(summaries), len(chunks), options.context)


def selection_of(
    node_id: str, sentences: Sequence[str], chosen: list[int], summary: str, prompts: int, context: int
) -> NodeSelection:
    shown = sorted({j for i in chosen for j in range(max(0, i - context), min(len(sentences), i + context + 1))})
    return NodeSelection(
        node_id=node_id,
        sentence_ids=tuple(sentence_id(i) for i in chosen),
        sentences={sentence_id(i): sentences[i] for i in shown},
        summary=summary[:MAX_SUMMARY_CHARS],
        prompts=prompts,
    )


_ID = re.compile(r"\bS(\d{1,7})(?:\s*(?:-|–|to)\s*S?(\d{1,7}))?\b", re.IGNORECASE)
# A range longer than this is not a list of evidence but a model naming the whole text.
MAX_RANGE = 20
_IDS_LINE = re.compile(r"^\W*(?:sentence[_ ]?ids?|sentences|ids|evidence|selected)\W*?[:=][*_\s]*(.*)$", re.IGNORECASE)
_SUMMARY_LINE = re.compile(r"^\W*summary\W*?[:=][*_\s]*(.*)$", re.IGNORECASE)
_ONLY_IDS = re.compile(r"^[\W_]*S\d+(?:[\W_]+(?:S\d+|and|to))*[\W_]*$", re.IGNORECASE)
_NONE = re.compile(r"^\W*(?:none|no sentences?|nothing|\[\s*\])\W*$", re.IGNORECASE)


def parse_selection(answer: Any, asked: dict[str, int]) -> tuple[list[str], str]:
    """The answer → (the ids it selects that were asked, in text order; the summary). JSON as
    asked, a bare list of ids, or the plain lines a small model writes instead
    ("Sentences: S2, S7" / "Summary: …"). Ids not in the prompt are dropped."""
    if isinstance(answer, dict) and isinstance(answer.get("sentence_ids"), list):
        named = [str(item) for item in answer["sentence_ids"]]
        summary = answer.get("summary")
        summary = summary if isinstance(summary, str) else ""
    elif isinstance(answer, list):
        named, summary = [str(item) for item in answer], ""
    elif isinstance(answer, str):
        named, summary = plain_selection(answer)
    else:
        raise MalformedAnswer("expected an object with a 'sentence_ids' list and a 'summary'")
    found = {sentence for item in named for sentence in ids_in(item) if sentence in asked}
    return sorted(found, key=asked.__getitem__), " ".join(summary.split())


def ids_in(text: str) -> list[str]:
    ids: list[str] = []
    for match in _ID.finditer(text):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if first <= last <= first + MAX_RANGE:
            ids.extend(f"S{n}" for n in range(first, last + 1))
    return ids


def plain_selection(text: str) -> tuple[list[str], str]:
    named: list[str] = []
    summary: list[str] = []
    answered = False
    in_summary = False
    for line in text.splitlines():
        if ids_line := _IDS_LINE.match(line):
            named.append(ids_line.group(1))
            answered, in_summary = True, False
        elif summary_line := _SUMMARY_LINE.match(line):
            summary.append(summary_line.group(1))
            answered, in_summary = True, True
        elif in_summary:
            summary.append(line)
        elif _ONLY_IDS.match(line.strip()) or _NONE.match(line):
            named.append(line)
            answered = True
    if not answered:
        raise MalformedAnswer(f"neither JSON nor 'Sentences: …' and 'Summary: …' lines: {text[:80]!r}")
    return named, " ".join(summary)
