"""Sentences (with their paragraphs as context) → standalone atomic claims, each with a web query.

One call decomposes a chunk of consecutive sentences (FaStfact's chunked extraction): the
instructions and the paragraphs are sent once instead of once per sentence. Every claim stays
tied to the sentence it came from."""

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from . import languages

# The instructions (re-exported: the tests' fake model reads them here).
from .decompose_prompts import (  # noqa: F401
    ENGLISH_QUERY_LINE,
    LANGUAGE_LINE,
    QUICK_INSTRUCTION,
    QUICK_INSTRUCTION_NO_QUERY,
    QUICK_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_NO_QUERY,
    system_prompt,
)
from .types import ClaimDraft, JsonLLM, MalformedAnswer, SegmentedSentence, TokenLogprob

MAX_CLAIMS_PER_SENTENCE = 8
MAX_QUERY_CHARS = 200
# Target sentences per call and characters of context per call: enough to pay the instructions
# once for a typical chatbot answer, few enough that a small local model keeps every sentence
# apart (and that the run's first sentences do not wait for a long text's last ones).
CHUNK_SENTENCES = 10
CHUNK_CHARS = 3000

# Alternatives per token asked of the server with the logprobs: the label's own token is what is
# read, but some servers send no logprobs unless at least one alternative is asked for.
QUICK_TOP_LOGPROBS = 1
LABELS = ("true", "false", "unsure")

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


def build_prompt(targets: Sequence[SegmentedSentence], language: str | None = None, *, queries: bool = True) -> str:
    """Each paragraph (chunk) of the targets once, numbered S1..Sn across paragraphs, then the
    targets' numbers, and for a text in another language than English, the language to write
    the claims (and queries) in."""
    lines, asked = _numbered(targets)
    told = language_lines(language, queries=queries)
    return "Context:\n" + "\n".join(lines) + f"\nTarget sentences: {', '.join(asked)}\n{told}Answer:"


def language_lines(language: str | None, *, queries: bool = True) -> str:
    """What the prompt says of the text's language ("" for English, or for a language not
    known: the model then writes as the example does). An English query as well where the
    language's web is thin and the model writes queries at all."""
    found = languages.language(language)
    if found is None or found.code == "en":
        return ""
    told = LANGUAGE_LINE.format(name=found.name, and_queries=" and their queries" if queries else "")
    if queries and found.thin_web:
        told += ENGLISH_QUERY_LINE.format(name=found.name)
    return told + "\n"


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
    *,
    quick: bool = False,
    queries: bool = True,
    language: str | None = None,
) -> dict[int, list[ClaimDraft]]:
    """{sentence index: its claims} for the targets. Sentences the answer leaves out are asked
    once more on their own call; those still missing are absent from the result.

    `on_sentence(index, claims)` is called for each sentence as soon as the model has written
    its claims (its section is followed by the next one's header), while it writes the rest: the
    first sentences' claims can be searched meanwhile. Called once per sentence, with the claims
    the result then holds for it.

    `quick`: each claim also gets the model's own label (true, false, unsure) and, from a server
    that gives logprobs, that label's probability. `queries=False`: the model writes no search
    query, and each claim's query is its own text. `language`: the text's (ISO 639-1), which
    the claims and queries are written in (build_prompt)."""
    found: dict[int, list[ClaimDraft]] = {}
    for _attempt in range(2):
        missing = [s for s in targets if s.index not in found]
        if not missing:
            break
        watcher = _Watcher(labels(missing), on_sentence, quick=quick) if on_sentence else None
        found |= _ask(llm, missing, watcher, quick=quick, queries=queries, language=language)
    return found


def _ask(
    llm: JsonLLM,
    targets: Sequence[SegmentedSentence],
    watcher: "_Watcher | None",
    *,
    quick: bool = False,
    queries: bool = True,
    language: str | None = None,
) -> dict[int, list[ClaimDraft]]:
    asked = labels(targets)

    def parse(answer: Any, tokens: Sequence[TokenLogprob] | None = None) -> dict[int, list[ClaimDraft]]:
        parsed = parse_chunk(without_trailing_prose(answer, asked), asked)
        if quick:
            parsed = {index: scored(claims, tokens) for index, claims in parsed.items()}
        if watcher is None:
            return parsed
        # What was handed on while the answer streamed stays what the sentence got (a retried
        # call may word it differently); the rest is handed on now.
        parsed |= {index: claims for index, claims in watcher.given.items() if index in parsed}
        for index, claims in parsed.items():
            watcher.give(index, claims)
        return parsed

    streamed: dict[str, Any] = {"on_text": watcher.read} if watcher else {}
    if quick:
        streamed["logprobs"] = QUICK_TOP_LOGPROBS
    return llm.complete(
        system=system_prompt(quick=quick, queries=queries),
        user=build_prompt(targets, language, queries=queries),
        schema_name="claims",
        schema=None,
        parse=parse,
        max_tokens=answer_tokens(targets),
        done=lambda answer: answer_complete(answer, asked),
        **streamed,
    )


# What an answer may hold (issue 37: a small model that does not stop on its own wrote for
# minutes): a sentence's claims restate its words, each with a query and a label, so a sentence
# gets as many tokens as it has characters (about four times its own tokens), and a header's.
ANSWER_TOKENS_BASE = 32
ANSWER_TOKENS_PER_SENTENCE = 48


def answer_tokens(targets: Sequence[SegmentedSentence]) -> int:
    return ANSWER_TOKENS_BASE + sum(ANSWER_TOKENS_PER_SENTENCE + len(s.text) for s in targets)


def without_trailing_prose(answer: Any, asked: dict[str, int]) -> Any:
    """A plain-text answer that has every target's section, without what follows the last
    one's claims ("I hope this helps…": a small model writes on after its answer)."""
    if not isinstance(answer, str):
        return answer
    lines = answer.splitlines()
    headers = [n for n, line in enumerate(lines) if (h := _header(line)) and h.group(1).upper() in asked]
    if {_header(lines[n]).group(1).upper() for n in headers} != set(asked):
        return answer
    for n in range(headers[-1] + 1, len(lines)):
        line = lines[n].strip()
        if line and not _BULLET.match(line) and not _NONE.fullmatch(line):
            return "\n".join(lines[:n])
    return answer


def answer_complete(answer: str, asked: dict[str, int]) -> bool:
    """Whether a plain-text answer has every target's section, the last one ended by a line
    that is not a claim (a model that writes on after its answer)."""
    sections = _sections(answer)
    if not {label.strip().upper() for label, _ in sections} >= set(asked):
        return False
    last_lines = [line for line in sections[-1][1].splitlines() if line.strip()]
    return bool(last_lines) and not _BULLET.match(last_lines[-1])


class _Watcher:
    """Reads an answer as it is written and hands on each sentence whose section is complete."""

    def __init__(
        self, asked: dict[str, int], on_sentence: Callable[[int, list[ClaimDraft]], None], *, quick: bool = False
    ) -> None:
        self.asked, self.on_sentence, self.quick = asked, on_sentence, quick
        self.given: dict[int, list[ClaimDraft]] = {}

    def read(self, text: str, tokens: Sequence[TokenLogprob] | None = None) -> bool:
        """Hands on what is complete; True once the whole answer is (the rest is not read)."""
        if text.lstrip().startswith(("{", "[", "`")):  # JSON: read whole, at the end
            return False
        complete_lines = text[: text.rfind("\n") + 1]
        for label, body in _sections(complete_lines)[:-1]:  # the last may still grow
            index = self.asked.get(label.strip().upper())
            if index is None or index in self.given:
                continue
            try:
                claims = parse_claims(body)
            except MalformedAnswer:
                continue  # the whole answer's parse decides (and may ask again)
            self.give(index, scored(claims, tokens) if self.quick else claims)
        return answer_complete(complete_lines, self.asked)

    def give(self, index: int, claims: list[ClaimDraft]) -> None:
        if index not in self.given:
            self.given[index] = claims
            self.on_sentence(index, claims)


def decompose_sentence(llm: JsonLLM, sentence: SegmentedSentence, *, quick: bool = False) -> list[ClaimDraft]:
    found = decompose_chunk(llm, [sentence], quick=quick)
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
            claim, _, rest = match.group(1).partition("|")
            query, english, label = _fields(rest)
            items.append({"claim": claim, "query": query, "english_query": english, "label": label})
    if not items:
        raise MalformedAnswer(f"neither JSON nor a bullet list: {text[:80]!r}")
    return items


def _draft(item: Any) -> ClaimDraft | None:
    if isinstance(item, str):
        item = {"claim": item}
    if not isinstance(item, dict):
        raise MalformedAnswer("a claim is neither text nor an object")
    claim = " ".join(str(item.get("claim") or "").split())
    query, english = english_query(" ".join(str(item.get("query") or "").split()))
    english = " ".join(str(item.get("english_query") or item.get("en") or english).split())
    query = query or claim
    if not claim:
        return None
    return ClaimDraft(
        text=claim,
        query=query[:MAX_QUERY_CHARS],
        label=_label(str(item.get("label") or "")),
        english_query="" if english.lower() == query.lower() else english[:MAX_QUERY_CHARS],
    )


# "query | en: english query", as ENGLISH_QUERY_LINE asks ("| EN:", "| **en**:" as models vary
# it, or the English query alone after the claim).
_ENGLISH_QUERY = re.compile(r"(?:^|\s*\|)\s*\**en\**\s*:\s*", re.IGNORECASE)


def english_query(query: str) -> tuple[str, str]:
    """A query as written → (the query in the text's language, the English one or "")."""
    parts = _ENGLISH_QUERY.split(query, maxsplit=1)
    if len(parts) == 1:
        return query.strip(), ""
    return parts[0].strip(), parts[1].strip()


# A quick-mode label as models write it: "true", "**False**", "label: unsure", "True (confident)".
_LABEL = re.compile(
    r"[\s*_`\"'(\[]*(?:label\s*[:=]\s*)?(true|false|unsure|unknown|uncertain)\b[\s*_`\"')\].!]*(?:\(.*\))?\s*",
    re.IGNORECASE,
)


def _label(text: str) -> str:
    match = _LABEL.fullmatch(text)
    if not match:
        return ""
    word = match.group(1).lower()
    return word if word in LABELS else "unsure"


def _fields(rest: str) -> tuple[str, str, str]:
    """What follows a claim's first "|": its query, its English query (" | en: …") and its quick-mode
    label, the last two in either order: both prompts say to add theirs after the query."""
    before, english = english_query(rest)
    english_only, bar, last = english.rpartition("|")
    if bar and _label(last):
        query, _ = _query_and_label(before)
        return query, english_only.strip(), _label(last)
    query, label = _query_and_label(before)
    return query, english, label


def _query_and_label(rest: str) -> tuple[str, str]:
    """What follows a claim's first "|": its query, and the label after a last "|" (quick mode).
    The whole rest is a label only when it is nothing else ("- claim | true", no query)."""
    query, bar, last = rest.rpartition("|")
    if bar and _label(last):
        return query, _label(last)
    if _label(rest):
        return "", _label(rest)
    return rest, ""


def known_by_model(draft: ClaimDraft, min_probability: float) -> bool:
    """Quick mode: the model labelled the claim true or false with at least this probability, so
    it is not searched (FaStfact's pre-verification). Never without a probability."""
    return draft.label in ("true", "false") and draft.probability is not None and draft.probability >= min_probability


def scored(drafts: list[ClaimDraft], tokens: Sequence[TokenLogprob] | None) -> list[ClaimDraft]:
    """The drafts with their labels' probabilities from the answer's tokens (None without them,
    or for a label not found among them)."""
    if tokens is None:
        return drafts
    found = label_probabilities(tokens)
    return [replace(d, probability=found.get(d.text.lower())) if d.label else d for d in drafts]


def label_probabilities(tokens: Sequence[TokenLogprob]) -> dict[str, float]:
    """Claim text (lower case) → the probability of the label the answer gives it: exp(logprob)
    of the label's token, the product over its tokens when the label is split in several. Read
    from the answer as written, claim lines ("- claim | query | true") or JSON ("label": "true"
    after its "claim"); the first line of a claim written twice counts."""
    text = "".join(token.token for token in tokens)
    ends = [0]
    for token in tokens:
        ends.append(ends[-1] + len(token.token))

    def probability(start: int, end: int) -> float:
        logprob = sum(t.logprob for t, a, b in zip(tokens, ends, ends[1:], strict=False) if a < end and b > start)
        return min(1.0, math.exp(logprob))

    found: dict[str, float] = {}
    for line in re.finditer(r"[^\n]+", text):
        claim, label = _claim_line(line.group())
        if claim and label and claim not in found:
            bar = line.start() + line.group().rfind("|") + 1
            match = _LABEL.fullmatch(text, bar, line.end())
            if match:
                found[claim] = probability(match.start(1), match.end(1))
    if found:
        return found
    claims = [(m.end(), m.group(1)) for m in _JSON_CLAIM.finditer(text)]
    for label in _JSON_LABEL.finditer(text):
        before = [claim for end, claim in claims if end <= label.start()]
        if before:
            try:
                claim = " ".join(json.loads(f'"{before[-1]}"').split()).lower()
            except json.JSONDecodeError:
                continue
            found.setdefault(claim, probability(label.start(1), label.end(1)))
    return found


_JSON_CLAIM = re.compile(r'"claim"\s*:\s*"((?:[^"\\]|\\.)*)"')
_JSON_LABEL = re.compile(r'"label"\s*:\s*"\s*(true|false|unsure)\s*"', re.IGNORECASE)


def _claim_line(line: str) -> tuple[str, str]:
    """A line of the answer as its claim (lower case) and label, as _sections and _bullets read
    it; ("", "") for any other line."""
    header = _header(line)
    body = header.group(2) if header else line
    bullet = _BULLET.match(body)
    if bullet:
        body = bullet.group(1)
    elif not header:
        return "", ""
    claim, bar, rest = body.partition("|")
    label = _query_and_label(rest)[1] if bar else ""
    return " ".join(claim.split()).lower(), label
