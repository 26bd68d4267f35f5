"""The answer in a model's reply, never its thinking.

Reasoning models draft the answer before they settle, often with other verdicts: a draft read
as the answer silently changes what the reader sees. Servers put the thinking in a field of its
own (`reasoning_content`, `reasoning`: never read here), hide it, or leave it in `content` as a
`<think>…</think>` block: opened and closed, opened and never closed (the budget ran out), or only
closed (the chat template opened it in the prompt). `strip_thinking` removes such a block from a
whole answer; `ThinkingFilter` does the same to a stream, piece by piece, so the lines a step
acts on while the model writes start after it."""

import json
import re
from dataclasses import dataclass
from typing import Any

_TAGS = ("think", "thinking", "reasoning")
_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.I)
_CLOSE = re.compile(r"</(think|thinking|reasoning)>", re.I)


def strip_thinking(text: str) -> tuple[str, str]:
    """(the answer, the thinking removed from it)."""
    thought: list[str] = []
    closing = _CLOSE.search(text)
    opening = _OPEN.search(text)
    if closing and (opening is None or opening.start() > closing.start()):
        # Only closed: everything before the closing tag was thinking.
        thought.append(text[: closing.start()])
        text = text[closing.end() :]
    while (opening := _OPEN.search(text)) is not None:
        tag = opening.group(1).lower()
        closing = re.compile(rf"</{tag}>", re.I).search(text, opening.end())
        end = closing.end() if closing else len(text)
        thought.append(text[opening.end() : closing.start() if closing else len(text)])
        text = text[: opening.start()] + text[end:]
    return text.strip(), "".join(thought)


class ThinkingFilter:
    """A stream's content pieces in, the answer's pieces out. While the content so far could
    still be the start of a thinking block (whitespace, or part of "<think>"), nothing is let
    through; inside a block, nothing until it closes. `only_closed` (a model whose template opens
    the block in the prompt, learned from an earlier answer): everything until the closing tag
    is thinking."""

    def __init__(self, *, only_closed: bool = False) -> None:
        self._held = ""
        self._thinking = only_closed
        self._decided = only_closed
        self.thought = ""
        self.saw_tag = False

    def feed(self, piece: str) -> str:
        self._held += piece
        out = []
        while self._held:
            if self._thinking:
                closing = _CLOSE.search(self._held)
                if closing is None:
                    keep = _partial_tag_suffix(self._held)
                    self.thought += self._held[: len(self._held) - keep]
                    self._held = self._held[len(self._held) - keep :]
                    break
                self.thought += self._held[: closing.start()]
                self._held = self._held[closing.end() :].lstrip()
                self._thinking, self._decided, self.saw_tag = False, True, True
                continue
            if not self._decided:
                stripped = self._held.lstrip()
                if not stripped or any(f"<{tag}>".startswith(stripped.lower()) for tag in _TAGS):
                    break  # could still be a thinking block's start
                opening = _OPEN.match(stripped)
                if opening:
                    self._held = stripped[opening.end() :]
                    self._thinking, self.saw_tag = True, True
                    continue
                self._decided = True
            opening = _OPEN.search(self._held)
            if opening:
                out.append(self._held[: opening.start()])
                self._held = self._held[opening.end() :]
                self._thinking, self.saw_tag = True, True
                continue
            keep = _partial_tag_suffix(self._held)
            out.append(self._held[: len(self._held) - keep])
            self._held = self._held[len(self._held) - keep :]
            break
        return "".join(out)

    def end(self) -> str:
        """What is left when the stream ends (a block never closed is thinking, dropped)."""
        held, self._held = self._held, ""
        if self._thinking:
            self.thought += held
            return ""
        return held if self._decided or held.strip() else ""


def _partial_tag_suffix(text: str) -> int:
    """How many characters at the end of `text` may be the start of a tag ("<", "</thi"…)."""
    start = text.rfind("<")
    if start == -1 or len(text) - start > len("</reasoning>"):
        return 0
    tail = text[start:].lower()
    candidates = [f"<{tag}>" for tag in _TAGS] + [f"</{tag}>" for tag in _TAGS]
    return len(text) - start if any(c.startswith(tail) for c in candidates) else 0


def estimated_tokens(text: str) -> int:
    """Tokens in a text as a server counts them, roughly (about four characters a token in
    English; shorter for other scripts, so this is a floor for them)."""
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class EstimatedUsage:
    """Usage estimated from the text, for a stream that ended without the server's count."""

    prompt_tokens: int
    completion_tokens: int


def reasoning_field(message: Any) -> str:
    """The thinking a server sends in a field of its own (DeepSeek, llama.cpp: `reasoning_content`;
    vLLM, Ollama, OpenRouter, Groq: `reasoning`): counted, never read as the answer."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def reasoning_tokens(usage: Any) -> int:
    details = getattr(usage, "completion_tokens_details", None)
    return getattr(details, "reasoning_tokens", None) or 0


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def decode_answer(text: str) -> Any:
    """JSON from a model's answer: plain, inside a ``` fence, or the outermost {...} in prose.
    Anything else comes back as the stripped text, for the steps' plain-text fallbacks."""
    text = _FENCE.sub("", text.strip())
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        try:
            return json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            pass
    return text
