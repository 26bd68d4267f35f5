"""Sentences (with their paragraphs as context) → standalone atomic claims, each with a web query.

One call decomposes a chunk of consecutive sentences (FaStfact's chunked extraction): the
instructions and the paragraphs are sent once instead of once per sentence. Every claim stays
tied to the sentence it came from."""

import re
from collections.abc import Callable, Sequence
from typing import Any

from .types import ClaimDraft, JsonLLM, MalformedAnswer, SegmentedSentence

MAX_CLAIMS_PER_SENTENCE = 8
MAX_QUERY_CHARS = 200
# Target sentences per call and characters of context per call: enough to pay the instructions
# once for a typical chatbot answer, few enough that a small local model keeps every sentence
# apart (and that the run's first sentences do not wait for a long text's last ones).
CHUNK_SENTENCES = 10
CHUNK_CHARS = 3000

# Worded after the FACTS&EVIDENCE prompt: the paragraphs are numbered S1..Sn so the model can
# resolve "it"/"this treatment" from earlier sentences, and only the target sentences are split.
# The example shows decontextualization and an empty answer for an opinion, because models
# otherwise invent claims for greetings and hedges; every target is listed in the answer so a
# sentence the model skips is noticed (and asked again) instead of read as "no claims". The
# answer is plain lines, not JSON: the model writes every character of it, and the keys and
# quotes of JSON cost about a third of what it wrote.
SYSTEM_PROMPT = """You split sentences of an AI-written text into atomic claims for fact-checking. An
atomic claim states exactly one checkable fact and stands alone: replace pronouns and references
("it", "this drug") with what they refer to in the context. Add no facts the sentence does not
state. Opinions, greetings, advice and questions have no claims. Give each claim a short web
search query that would find evidence for or against it. Paragraphs are separated by a blank line.

Example
Context:
S1: Metformin is the first-line drug for type 2 diabetes.
S2: It lowers blood sugar and was approved in the US in 1994.
S3: I hope this helps!
Target sentences: S2, S3
Answer:
S2:
- Metformin lowers blood sugar. | metformin lowers blood sugar
- Metformin was approved in the US in 1994. | metformin FDA approval 1994
S3:

Answer every target sentence, in order, as in the example."""

NOT_ANSWERED = "the model left this sentence out of its answer (asked twice)"


def chunks(
    sentences: Sequence[SegmentedSentence], *, max_sentences: int = CHUNK_SENTENCES
) -> list[list[SegmentedSentence]]:
    """Consecutive sentences (in text order) grouped for one call each: at most `max_sentences`
    targets and CHUNK_CHARS characters of context (a paragraph chunk longer than that goes
    alone). Depends only on the sentences, so every task and the sweeper find the same chunks."""
    groups: list[list[SegmentedSentence]] = []
    size = 0
    seen: set[tuple[str, ...]] = set()
    for sentence in sorted(sentences, key=lambda s: s.index):
        new_context = sentence.context not in seen
        grows = sum(map(len, sentence.context)) if new_context else 0
        if not groups or len(groups[-1]) >= max_sentences or (new_context and size + grows > CHUNK_CHARS):
            groups.append([])
            size, seen = 0, set()
            grows = sum(map(len, sentence.context))
        groups[-1].append(sentence)
        seen.add(sentence.context)
        size += grows
    return groups


def build_prompt(targets: Sequence[SegmentedSentence]) -> str:
    """Each paragraph (chunk) of the targets once, numbered S1..Sn across paragraphs, then the
    targets' numbers."""
    lines, asked = _numbered(targets)
    return "Context:\n" + "\n".join(lines) + f"\nTarget sentences: {', '.join(asked)}\nAnswer:"


def labels(targets: Sequence[SegmentedSentence]) -> dict[str, int]:
    """{"S3": sentence index} for the targets, as build_prompt numbers them."""
    return {label: sentence.index for label, sentence in zip(_numbered(targets)[1], targets, strict=True)}


def _numbered(targets: Sequence[SegmentedSentence]) -> tuple[list[str], list[str]]:
    lines: list[str] = []
    asked: list[str] = []
    first: dict[tuple[str, ...], int] = {}
    for sentence in targets:
        if sentence.context not in first:
            first[sentence.context] = len(first and [line for line in lines if line]) + 1
            lines += [""] if lines else []
            lines += [f"S{first[sentence.context] + i}: {text}" for i, text in enumerate(sentence.context)]
        asked.append(f"S{first[sentence.context] + sentence.position_in_context}")
    return lines, asked


def decompose_chunk(
    llm: JsonLLM,
    targets: Sequence[SegmentedSentence],
    on_sentence: Callable[[int, list[ClaimDraft]], None] | None = None,
) -> dict[int, list[ClaimDraft]]:
    """{sentence index: its claims} for the targets. Sentences the answer leaves out are asked
    once more on their own call; those still missing are absent from the result.

    `on_sentence(index, claims)` is called for each sentence as soon as the model has written
    its claims (its section is followed by the next one's header), while it writes the rest: the
    first sentences' claims can be searched meanwhile. Called once per sentence, with the claims
    the result then holds for it."""
    found: dict[int, list[ClaimDraft]] = {}
    for _attempt in range(2):
        missing = [s for s in targets if s.index not in found]
        if not missing:
            break
        found |= _ask(llm, missing, _Watcher(labels(missing), on_sentence) if on_sentence else None)
    return found


def _ask(llm: JsonLLM, targets: Sequence[SegmentedSentence], watcher: "_Watcher | None") -> dict[int, list[ClaimDraft]]:
    asked = labels(targets)

    def parse(answer: Any) -> dict[int, list[ClaimDraft]]:
        parsed = parse_chunk(answer, asked)
        if watcher is None:
            return parsed
        # What was handed on while the answer streamed stays what the sentence got (a retried
        # call may word it differently); the rest is handed on now.
        parsed |= {index: claims for index, claims in watcher.given.items() if index in parsed}
        for index, claims in parsed.items():
            watcher.give(index, claims)
        return parsed

    streamed = {"on_text": watcher.read} if watcher else {}
    return llm.complete(
        system=SYSTEM_PROMPT, user=build_prompt(targets), schema_name="claims", schema=None, parse=parse, **streamed
    )


class _Watcher:
    """Reads an answer as it is written and hands on each sentence whose section is complete."""

    def __init__(self, asked: dict[str, int], on_sentence: Callable[[int, list[ClaimDraft]], None]) -> None:
        self.asked, self.on_sentence = asked, on_sentence
        self.given: dict[int, list[ClaimDraft]] = {}

    def read(self, text: str) -> None:
        if text.lstrip().startswith(("{", "[", "`")):  # JSON: read whole, at the end
            return
        complete_lines = text[: text.rfind("\n") + 1]
        for label, body in _sections(complete_lines)[:-1]:  # the last may still grow
            index = self.asked.get(label.strip().upper())
            if index is None or index in self.given:
                continue
            try:
                claims = parse_claims(body)
            except MalformedAnswer:
                continue  # the whole answer's parse decides (and may ask again)
            self.give(index, claims)

    def give(self, index: int, claims: list[ClaimDraft]) -> None:
        if index not in self.given:
            self.given[index] = claims
            self.on_sentence(index, claims)


def decompose_sentence(llm: JsonLLM, sentence: SegmentedSentence) -> list[ClaimDraft]:
    found = decompose_chunk(llm, [sentence])
    if sentence.index not in found:
        raise MalformedAnswer(NOT_ANSWERED)
    return found[sentence.index]


_HEADER = re.compile(r"^\W*(S\d+)\W*:?\s*(.*)$")
# A header some models number like a list item: "1. S2:", "2) **S3:**".
_NUMBERED_HEADER = re.compile(r"^\s*\d{1,2}[.)]\s+\W*(S\d+)\b\W*:\s*(.*)$")


def _header(line: str) -> re.Match | None:
    """A sentence's header line ("S2:"), not a claim's bullet."""
    numbered = _NUMBERED_HEADER.match(line)
    if numbered:
        return numbered
    header = _HEADER.match(line)
    return header if header and not _BULLET.match(line) else None


def parse_chunk(answer: Any, asked: dict[str, int]) -> dict[int, list[ClaimDraft]]:
    """The answer → {sentence index: claims} for the labels asked about (S3 → index). A label
    not in the answer is left out; an answer that covers none of them is malformed. With one
    target, the single-sentence shapes parse_claims knows are accepted too."""
    if isinstance(answer, dict) and isinstance(answer.get("sentences"), list):
        entries = [
            (str(e.get("sentence", "")), e.get("claims", [])) for e in answer["sentences"] if isinstance(e, dict)
        ]
    elif isinstance(answer, str) and any(_header(line) for line in answer.splitlines()):
        entries = _sections(answer)
    elif len(asked) == 1:
        return {next(iter(asked.values())): parse_claims(answer)}
    else:
        raise MalformedAnswer("expected an object with a 'sentences' list")
    found: dict[int, list[ClaimDraft]] = {}
    for label, claims in entries:
        index = asked.get(label.strip().upper())
        if index is not None and index not in found:
            found[index] = parse_claims({"claims": claims} if isinstance(claims, list) else claims)
    if not found:
        raise MalformedAnswer("the answer covers none of the target sentences")
    return found


def _sections(text: str) -> list[tuple[str, str]]:
    """Plain text "S2:" headers, each followed by its bullets (or nothing, or "none")."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        header = _header(line)
        if header:
            rest = header.group(2) if re.search(r"\w", header.group(2)) else ""  # not a stray "**"
            # A claim on the header's own line ("S2: Metformin … | query") is a claim too.
            if rest and not _NONE.fullmatch(rest) and not _BULLET.match(rest):
                rest = f"- {rest}"
            sections.append((header.group(1), [rest] if rest else []))
        elif sections:
            sections[-1][1].append(line)
    return [(label, "\n".join(lines).strip()) for label, lines in sections]


_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.+)$")
_NONE = re.compile(r"\W*(none|no claims?)\W*", re.IGNORECASE)


def parse_claims(answer: Any) -> list[ClaimDraft]:
    """One sentence's claims: plain text with one "- claim | query" bullet per line, as asked,
    or the JSON some models write anyway ({"claims": [{"claim", "query"}]} or a bare list)."""
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
    if _NONE.fullmatch(text) or not text:
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
