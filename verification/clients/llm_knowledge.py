"""What factsite knows of one model's server, kept per (server, model) in a store shared by
processes: the capabilities a request is built from (llm_capabilities), the lessons its refusals
taught, where the model's thinking goes, its context. LLMClient asks and reads; this module
decides what an answer or a refusal teaches."""

import logging
import re
import threading
from dataclasses import replace
from typing import Any, Protocol

from verification.clients import llm_capabilities as caps
from verification.clients.llm_answers import estimated_tokens
from verification.clients.llm_capabilities import Capabilities, Refusal, learn
from verification.clients.llm_requests import (
    describe_context_exceeded,
    describe_refusal,
    describe_silent_cut,
    optional_parts,
)
from verification.pipeline.types import StepError

logger = logging.getLogger(__name__)

# A request carrying a part its server has not yet taken is sent alone: calls that would carry
# the same part wait for its answer (at most this long), so a refusal is paid once, not once
# per concurrent call.
FIRST_REQUEST_WAIT_S = 3.0
# Room kept in a known context for a call's answer (steps cap theirs at a few hundred tokens).
ANSWER_ROOM_TOKENS = 768
# Below this many prompt tokens, a short count by the server is no sign of a cut prompt.
CUT_CHECK_MIN_TOKENS = 256
# A server that reports fewer than this share of the tokens sent did not read the whole prompt.
CUT_SHARE = 0.7


class CapabilityStore(Protocol):
    """Where what a server takes is kept, by (server, model): shared by processes in production
    (providers.py puts it in the cache); a process's own dict by default."""

    def get(self, key: str) -> dict | None: ...

    def put(self, key: str, value: dict) -> None: ...


class LocalStore:
    def __init__(self) -> None:
        self._values: dict[str, dict] = {}

    def get(self, key: str) -> dict | None:
        return self._values.get(key)

    def put(self, key: str, value: dict) -> None:
        self._values[key] = value

    def clear(self) -> None:
        self._values.clear()


LOCAL_STORE = LocalStore()
_first_requests: dict[str, threading.Event] = {}
_lock = threading.Lock()


class ServerKnowledge:
    """What is known of `model` at `base_url`, asked for a reasoning `effort` (a lesson learned
    at one effort does not hold at another); `context_tokens` set by the person wins over what
    was learned."""

    def __init__(
        self, *, model: str, base_url: str, store: CapabilityStore, effort: str, context_tokens: int = 0
    ) -> None:
        self.model, self.base_url = model, base_url
        self._store, self._effort, self._context_tokens = store, effort, context_tokens
        # What this client's calls learned, in words (a run's log and check_llm show them).
        self.lessons: list[str] = []

    @property
    def store_key(self) -> str:
        return f"factsite:llm-capabilities:v1:{self.base_url}|{self.model}|{self._effort}"

    @property
    def capabilities(self) -> Capabilities:
        stored = self._store.get(self.store_key)
        known = Capabilities.from_dict(stored) if stored else caps.known_defaults(self.model, self._effort)
        if self._context_tokens:
            known = replace(known, context_tokens=self._context_tokens)
        return known

    @property
    def context_tokens(self) -> int:
        """The server's context in tokens (0: not known): what a step's prompt must fit in."""
        return self.capabilities.context_tokens

    def prompt_budget(self, reasoning_tokens: int) -> int:
        """The prompt tokens one call may send (0: no limit known): the context, less room for
        the answer and, for a model that thinks, for its thinking (a local server counts both in
        its context)."""
        known = self.capabilities
        if not known.context_tokens:
            return 0
        thinking = min(reasoning_tokens, known.context_tokens // 4) if known.thinks else 0
        return max(ANSWER_ROOM_TOKENS, known.context_tokens - thinking - ANSWER_ROOM_TOKENS)

    def remember(self, capabilities: Capabilities) -> None:
        self._store.put(self.store_key, capabilities.as_dict())

    def learn_refusal(self, capabilities: Capabilities, refusal: Refusal, body: dict) -> Capabilities:
        if caps.exceeds_context(refusal):
            learned = caps.context_in_message(refusal.message)
            if learned and not capabilities.context_tokens:
                self.remember(replace(capabilities, context_tokens=learned))
            raise StepError(describe_context_exceeded(refusal, self.model, self.base_url, learned), transient=False)
        learned, lesson = learn(capabilities, refusal, body)
        if not lesson:
            # The same request would be refused again: "Retry failed parts" leaves it alone.
            raise StepError(describe_refusal(refusal, self.model, self.base_url), transient=False)
        logger.info("%s at %s: %s (%s)", self.model, self.base_url, lesson, refusal.message)
        self.lessons.append(lesson)
        return learned

    def first_request(self, capabilities: Capabilities, body: dict) -> threading.Event | None:
        """Whether this request goes first (an event to set when its answer has come) or waits,
        because another one carrying the same untried parts is being answered."""
        untried = optional_parts(body) - set(capabilities.confirmed)
        if not untried:
            return None
        # By the parts untried: a request of another shape (a long streamed answer) would hold
        # back the ones whose refusal comes at once.
        key = f"{self.store_key}|{','.join(sorted(untried))}"
        with _lock:
            waiting = _first_requests.get(key)
            if waiting is None or waiting.is_set():
                _first_requests[key] = threading.Event()
                return _first_requests[key]
        waiting.wait(FIRST_REQUEST_WAIT_S)
        return None

    def confirm(self, capabilities: Capabilities, body: dict) -> None:
        taken = optional_parts(body) - set(capabilities.confirmed)
        if taken:
            current = self.capabilities
            self.remember(replace(current, confirmed=tuple(sorted({*current.confirmed, *taken}))))

    def learn_thinking(self, reasoning: str, content: str, hidden: int, *, unclosed: bool = False) -> None:
        """Where this model's thinking goes, learned from an answer the first time it shows
        (`unclosed`: the whole answer was a block opened in the prompt and never closed)."""
        if reasoning:
            found = caps.THINKING_FIELD
        elif re.search(r"<(think|thinking|reasoning)>", content, re.I):
            found = caps.THINKING_INLINE
        elif unclosed or re.search(r"</(think|thinking|reasoning)>", content, re.I):
            found = caps.THINKING_CLOSED
        elif hidden:
            found = caps.THINKING_HIDDEN
        else:
            found = caps.THINKING_NONE
        current = self.capabilities
        if current.thinking != found and (current.thinking in (caps.THINKING_UNKNOWN, caps.THINKING_NONE)):
            self.remember(replace(current, thinking=found))

    def check_cut_prompt(self, prompt: str, usage: Any) -> None:
        """A server that read far fewer prompt tokens than were sent cut the prompt (Ollama does,
        without an error): its answer is about what was left, so it is not used."""
        read = getattr(usage, "prompt_tokens", None) or 0
        sent = estimated_tokens(prompt)
        if read and sent >= CUT_CHECK_MIN_TOKENS and read < CUT_SHARE * sent:
            current = self.capabilities
            if not current.context_tokens:
                self.remember(replace(current, context_tokens=read))
            raise StepError(describe_silent_cut(self.model, self.base_url, sent, read), transient=False)
