"""The language model, through the `openai` client, so any OpenAI-compatible server works
(OpenAI, Azure, Gemini, Anthropic, DeepSeek, Mistral, Groq, OpenRouter, vLLM, Ollama, llama.cpp,
LM Studio). Each request carries only what its server takes (llm_capabilities: known families by
name, the rest learned from a refusal that names a parameter, once per server and model); the
answer is read without the model's thinking (llm_answers), and an answer cut by its cap or a
prompt the server cut is a failure with its reason, never half-read. Transient failures (429,
5xx, timeouts) are retried with jittered backoff (or the server's Retry-After) within a time
budget per call, not only a count. A malformed answer is asked for once more. A step that can act
on an answer's first lines (decompose) gets it streamed. With LLM_CONCURRENCY, each request waits
for one of the server's slots (llm_slots), in priority order."""

import contextlib
import email.utils
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Protocol, TypeVar

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_before_delay, wait_random_exponential

from verification.clients import llm_capabilities as caps
from verification.clients import llm_slots
from verification.clients.llm_answers import ThinkingFilter, estimated_tokens, strip_thinking
from verification.clients.llm_capabilities import Capabilities, Refusal, learn, read_refusal
from verification.clients.llm_models import ModelChoice, parse_model_list  # noqa: F401 (part of this API)
from verification.clients.llm_requests import (
    Ask,
    build_request,
    describe_context_exceeded,
    describe_cut_answer,
    describe_refusal,
    describe_silent_cut,
    optional_parts,
    token_cap,
)
from verification.pipeline.types import LLMUsage, MalformedAnswer, StepError, TokenLogprob

T = TypeVar("T")
logger = logging.getLogger(__name__)

# How many refusals one call may learn from before it gives up (each names another parameter).
MAX_LESSONS = 6
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


@lru_cache(maxsize=16)
def _openai_client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    # One client per server and process: its HTTP connection pool is reused by every task.
    # Its own retries are off: ours below also stop at a time budget.
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)


def _retryable(error: BaseException) -> bool:
    """What openai's own client retries: connection errors, timeouts, 408, 409, 429, 5xx."""
    if isinstance(error, openai.APIConnectionError):
        return True
    return isinstance(error, openai.APIStatusError) and (
        error.status_code in (408, 409, 429) or error.status_code >= 500
    )


def _backoff(retry_state) -> float:
    """The server's Retry-After when it gives one, else 0.5 s doubling to 4 s, jittered."""
    hinted = _retry_after(retry_state.outcome.exception())
    return hinted if hinted is not None else _JITTERED(retry_state)


_JITTERED = wait_random_exponential(multiplier=0.5, max=4)


def _retry_after(error: BaseException) -> float | None:
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        if "retry-after" in headers:
            value = headers["retry-after"]
            if value.strip().isdigit():
                return float(value)
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
    return None


class _Logprobs:
    """One call's request for token logprobs, and the tokens it got: None while the server sent
    none (a server without logprobs, or one that ignores the request)."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.tokens: list[TokenLogprob] | None = None

    def add(self, logprobs: Any) -> None:
        """`choices[0].logprobs` of a response or of a stream's chunk."""
        content = getattr(logprobs, "content", None)
        if content:
            self.tokens = (self.tokens or []) + [TokenLogprob(t.token, t.logprob) for t in content]


class LLMClient:
    """Implements the pipeline's `JsonLLM` for one model, counting calls and tokens."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str,
        timeout: float,
        max_retries: int,
        retry_budget: float = 20.0,
        concurrency: int = 0,
        redis_url: str = "",
        priority: int = 0,
        store: CapabilityStore | None = None,
        reasoning_effort: str = caps.LOWEST,
        reasoning_tokens: int = 4096,
        context_tokens: int = 0,
    ) -> None:
        self.model = model
        self.base_url = base_url
        # At most `concurrency` requests at once to this server (0: any number), counted through
        # Redis when given; waiting ones go by `priority` (lower first: a sentence's index), then
        # by arrival.
        self._slots = llm_slots.slots_for(base_url, concurrency, redis_url)
        self.priority = priority
        self._turn: object | None = None  # the slot held by `turn()`, which its calls use
        # Local servers (Ollama, llama.cpp) take any key; openai refuses an empty one.
        self._client = _openai_client(base_url, api_key or "unused", timeout)
        self.max_retries = max_retries
        # No retry starts later than this many seconds after the first attempt did.
        self.retry_budget = retry_budget
        self.usage = LLMUsage()
        self._store = store or LOCAL_STORE
        self._effort = reasoning_effort
        self.reasoning_tokens = reasoning_tokens
        # LLM_CONTEXT_TOKENS for this model: what the person set wins over what was learned.
        self._context_tokens = context_tokens
        # What this client's calls learned, in words (a run's log and check_llm show them).
        self.lessons: list[str] = []

    @property
    def openai(self) -> openai.OpenAI:
        """The server's own client (check_llm lists its models)."""
        return self._client

    # --- what the server takes

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

    def prompt_budget(self) -> int:
        """The prompt tokens one call may send (0: no limit known): the context, less room for
        the answer and, for a model that thinks, for its thinking (a local server counts both in
        its context)."""
        known = self.capabilities
        if not known.context_tokens:
            return 0
        thinking = min(self.reasoning_tokens, known.context_tokens // 4) if known.thinks else 0
        return max(ANSWER_ROOM_TOKENS, known.context_tokens - thinking - ANSWER_ROOM_TOKENS)

    def remember(self, capabilities: Capabilities) -> None:
        self._store.put(self.store_key, capabilities.as_dict())

    # --- asking

    def complete(
        self,
        *,
        system: str,
        user: str,
        schema_name: str,
        schema: dict | None,
        parse: Callable[..., T],
        on_text: Callable[..., Any] | None = None,
        logprobs: int = 0,
        max_tokens: int = 0,
        done: Callable[[str], bool] | None = None,
    ) -> T:
        """`max_tokens`: what the answer may hold (the step sizes it to its input; 0: no cap).
        `on_text` may return True: the answer is complete, the rest of the stream is not read.
        `done`: whether an answer is complete; one cut at its cap is used only if it is (a model
        that writes on after its answer), otherwise the call fails with that reason."""
        problem = ""
        thinking_room = self.reasoning_tokens
        if self.context_tokens:
            thinking_room = min(thinking_room, self.context_tokens // 4)
        ask = Ask(system, user, schema_name, schema, logprobs, max_tokens, thinking_room, done=done)
        if on_text is None and done is not None:
            # Streamed to be read only to the answer's end: a model that writes on after it
            # (a small local one) would otherwise be waited for until its cap.
            on_text = lambda text, *_: done(text)  # noqa: E731
        for _attempt in range(2):
            asked = _Logprobs(logprobs) if logprobs else None
            if on_text is not None and self.capabilities.stream:
                text = self._streamed(replace(ask, stream=True), on_text, asked)
            else:
                text = self._ask(ask, asked)
            try:
                return parse(decode_answer(text), asked.tokens) if asked else parse(decode_answer(text))
            except MalformedAnswer as error:
                problem = str(error)
        raise StepError(f"the model {self.model} gave a malformed answer twice ({problem})")

    def _ask(self, ask: Ask, asked: _Logprobs | None = None) -> str:
        response, capabilities, body = self._send(ask, asked)
        return self._read_whole(response, capabilities, body, ask, asked)

    def _read_whole(
        self, response: Any, capabilities: Capabilities, body: dict, ask: Ask, asked: _Logprobs | None
    ) -> str:
        if not isinstance(response, ChatCompletion):
            raise StepError(
                f"the server at {self.base_url} did not answer like an OpenAI chat-completions API "
                "(check OPENAI_BASE_URL)"
            )
        self.usage.calls += 1
        self._count(response.usage)
        if not response.choices:
            return ""
        choice = response.choices[0]
        content = choice.message.content or ""
        answer, thought = self._answer_of(content, cut=choice.finish_reason == "length")
        hidden = _reasoning_tokens(response.usage)
        reasoning = _reasoning_field(choice.message)
        self.usage.reasoning_tokens += hidden or estimated_tokens(thought + reasoning)
        self._learn_thinking(reasoning, content, hidden, unclosed=bool(thought) and thought == content)
        self._check_cut_prompt(ask, response.usage)
        if asked:
            asked.add(choice.logprobs)
        if choice.finish_reason == "length":
            return self._cut_answer(answer, ask, asked, body, thinking=bool(thought or hidden or reasoning))
        return answer

    def _answer_of(self, content: str, *, cut: bool) -> tuple[str, str]:
        """(the answer, the thinking) of a reply's content. One cut at its cap with no thinking
        tag in it, from a model whose template may open the block in the prompt, was all
        thinking: the closing tag never came."""
        answer, thought = strip_thinking(content)
        known = self.capabilities.thinking
        opened_in_prompt = known == caps.THINKING_CLOSED or (
            known == caps.THINKING_UNKNOWN and caps.may_think_unopened(self.model)
        )
        if cut and opened_in_prompt and not thought:
            return "", content
        return answer, thought

    def _cut_answer(self, answer: str, ask: Ask, asked: _Logprobs | None, body: dict, *, thinking: bool) -> str:
        """An answer cut at its cap: used if the step finds it complete (a model that writes on
        after its answer); a model found thinking for the first time is asked once more with
        room to think; otherwise the call fails with the reason."""
        if answer.strip() and ask.done is not None and ask.done(answer):
            return answer
        cap = next((body[name] for name in (caps.MAX_COMPLETION_TOKENS, caps.MAX_TOKENS) if name in body), 0)
        if thinking and token_cap(self.capabilities, ask) > cap:
            return self._ask(replace(ask, stream=False), asked)
        raise StepError(describe_cut_answer(self.model, cap, thinking and not answer.strip()))

    def _send(self, ask: Ask, asked: _Logprobs | None) -> tuple[Any, Capabilities, dict]:
        """The request as the server takes it; a refusal that names something the request can do
        without is learned (kept for every later call) and the request sent again without it."""
        capabilities, guessed = self.capabilities, False
        ask = replace(ask, logprobs=ask.logprobs if asked else 0)
        for _lesson in range(MAX_LESSONS):
            body = build_request(self.model, capabilities, ask)
            first = self._first_request(capabilities, body)
            try:
                response = self._create(**body)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as error:
                refusal = read_refusal(error.status_code, _error_body(error))
                fresh = self.capabilities
                if not guessed and build_request(self.model, fresh, ask) != body:
                    capabilities = fresh  # another call learned it meanwhile: no lesson to pay twice
                    continue
                capabilities = self._learn_refusal(capabilities if guessed else fresh, refusal, body)
                # A refusal that named nothing is a guess (the newest optional part), kept only
                # if the request without that part is answered.
                guessed = guessed or not refusal.parameter
                if not guessed:
                    self.remember(capabilities)
                continue
            except openai.APIError as error:
                final = isinstance(
                    error, openai.AuthenticationError | openai.NotFoundError | openai.PermissionDeniedError
                )
                raise StepError(describe_api_error(error, self.model, self.base_url), transient=not final) from error
            finally:
                if first is not None:
                    first.set()
            if guessed:
                self.remember(replace(capabilities, confirmed=self.capabilities.confirmed))
            self._confirm(capabilities, body)
            return response, capabilities, body
        raise StepError(f"the LLM server at {self.base_url} refused {MAX_LESSONS} requests in a row for {self.model}")

    def _learn_refusal(self, capabilities: Capabilities, refusal: Refusal, body: dict) -> Capabilities:
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

    def _first_request(self, capabilities: Capabilities, body: dict) -> threading.Event | None:
        """Whether this request goes first (an event to set when its answer has come) or waits,
        because another one carrying the same untried parts is being answered."""
        if optional_parts(body) <= set(capabilities.confirmed):
            return None
        with _lock:
            waiting = _first_requests.get(self.store_key)
            if waiting is None or waiting.is_set():
                _first_requests[self.store_key] = threading.Event()
                return _first_requests[self.store_key]
        waiting.wait(FIRST_REQUEST_WAIT_S)
        return None

    def _confirm(self, capabilities: Capabilities, body: dict) -> None:
        taken = optional_parts(body) - set(capabilities.confirmed)
        if taken:
            current = self.capabilities
            self.remember(replace(current, confirmed=tuple(sorted({*current.confirmed, *taken}))))

    def _learn_thinking(self, reasoning: str, content: str, hidden: int, *, unclosed: bool = False) -> None:
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

    def _check_cut_prompt(self, ask: Ask, usage: Any) -> None:
        """A server that read far fewer prompt tokens than were sent cut the prompt (Ollama does,
        without an error): its answer is about what was left, so it is not used."""
        read = getattr(usage, "prompt_tokens", None) or 0
        sent = estimated_tokens(ask.system + ask.user)
        if read and sent >= CUT_CHECK_MIN_TOKENS and read < CUT_SHARE * sent:
            current = self.capabilities
            if not current.context_tokens:
                self.remember(replace(current, context_tokens=read))
            raise StepError(describe_silent_cut(self.model, self.base_url, sent, read), transient=False)

    def _streamed(self, ask: Ask, on_text: Callable[..., Any], asked: _Logprobs | None = None) -> str:
        """A plain-text answer asked for as a stream: `on_text` gets the answer so far (its
        thinking removed) at each line's end, so a step can act on its first lines while the
        model writes the rest, and may say it is complete. A model whose chat template may open
        a thinking block in the prompt (its closing tag alone shows, at the block's end) gets
        its answer handed on once, whole, until its habits are known. A server that refuses to stream or answers
        without a stream is asked again without one, and from then on."""
        stream, capabilities, body = self._send(ask, asked)
        if not body.get("stream"):  # the server refused to stream: learned, and asked without
            return self._read_whole(stream, capabilities, body, ask, asked)
        thinking = capabilities.thinking
        live = thinking != caps.THINKING_CLOSED and not (
            thinking == caps.THINKING_UNKNOWN and caps.may_think_unopened(self.model)
        )
        cleaner = ThinkingFilter(only_closed=thinking == caps.THINKING_CLOSED)
        parts: list[str] = []
        raw: list[str] = []
        reasoning: list[str] = []
        chunks, usage, finish = 0, None, None
        with contextlib.closing(stream):
            for chunk in self._events(stream):
                chunks += 1
                # The last usage: servers that send it in every event send it summed so far.
                usage = chunk.usage or usage
                choice = chunk.choices[0] if chunk.choices else None  # null in some servers' last event
                finish = getattr(choice, "finish_reason", None) or finish
                delta = getattr(choice, "delta", None)
                reasoning.append(_reasoning_field(delta) if delta is not None else "")
                piece = getattr(delta, "content", None)
                if asked and choice is not None:
                    asked.add(choice.logprobs)
                if not piece:
                    continue
                raw.append(piece)
                parts.append(cleaner.feed(piece))
                if live and "\n" in piece:
                    so_far = "".join(parts)
                    if (on_text(so_far, asked.tokens) if asked else on_text(so_far)) is True:
                        break
        if not chunks:
            return self._without_streaming(ask, asked)
        self.usage.calls += 1
        if usage is None:  # a stream left before its end (or a server that sends no usage): estimated
            usage = _Estimated(estimated_tokens(ask.system + ask.user), estimated_tokens("".join(raw + reasoning)))
        self._count(usage)
        hidden = _reasoning_tokens(usage)
        # The whole answer read again: a closing tag alone ends a block the filter could not
        # know had begun (nothing was handed on before it for a model whose template may open
        # one: may_think_unopened).
        content = "".join(raw)
        answer, thought = self._answer_of(content, cut=finish == "length")
        self.usage.reasoning_tokens += hidden or estimated_tokens(thought + "".join(reasoning))
        self._learn_thinking("".join(reasoning), content, hidden, unclosed=bool(thought) and thought == content)
        self._check_cut_prompt(ask, usage)
        if finish == "length":
            thinking = bool(thought or hidden or "".join(reasoning))
            return self._cut_answer(answer, ask, asked, body, thinking=thinking)
        if not live:
            on_text(answer, asked.tokens) if asked else on_text(answer)
        return answer

    def _without_streaming(self, ask: Ask, asked: _Logprobs | None) -> str:
        self.remember(replace(self.capabilities, stream=False, stream_usage=False))
        return self._ask(replace(ask, stream=False), asked)

    def _events(self, stream: Any) -> Iterator[ChatCompletionChunk]:
        """The stream's chunks; what goes wrong while reading it (not in `on_text`) as a StepError."""
        try:
            for chunk in stream:
                if not isinstance(chunk, ChatCompletionChunk):
                    return
                yield chunk
        except openai.APIError as error:
            raise StepError(describe_api_error(error, self.model, self.base_url)) from error
        except ValueError as error:  # an event that is not JSON
            raise StepError(f"the server at {self.base_url} sent a stream that is not an OpenAI one") from error

    def _count(self, usage: Any) -> None:
        if usage is not None:
            self.usage.prompt_tokens += usage.prompt_tokens or 0
            self.usage.completion_tokens += usage.completion_tokens or 0

    def _create(self, **request) -> Any:
        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1) | stop_before_delay(self.retry_budget),
            wait=_backoff,
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        return retrying(self._attempt, **request)

    @property
    def limited(self) -> bool:
        """Whether requests wait for one of a limited number of the server's slots."""
        return self._slots is not None

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Holds a slot of the server's (when their number is limited) for the calls made inside,
        retries and back-offs included: what the caller decides once its turn has come (which
        hosts are still to be asked) still holds when it asks. Without a limit, nothing."""
        if self._slots is None or self._turn is not None:
            yield
            return
        self._turn = self._slots.take(self.priority)
        try:
            yield
        finally:
            ticket, self._turn = self._turn, None
            self._slots.give_back(ticket)

    def _attempt(self, **request) -> Any:
        """One request, in a slot of the server's when their number is limited: an answer in one
        piece gives it back when it arrives (not kept while backing off), a stream when closed;
        inside `turn()`, in the slot it holds."""
        if self._slots is None or self._turn is not None:
            return self._client.chat.completions.create(**request)
        slots, ticket = self._slots, self._slots.take(self.priority)
        try:
            response = self._client.chat.completions.create(**request)
        except BaseException:
            slots.give_back(ticket)
            raise
        if not request.get("stream"):
            slots.give_back(ticket)
            return response
        return _SlotStream(response, lambda: slots.give_back(ticket))


class _SlotStream:
    """A stream that gives its slot back when closed: the server is busy until its last token."""

    def __init__(self, stream: Any, release: Callable[[], None]) -> None:
        self._stream = stream
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> Iterator[Any]:
        return iter(self._stream)

    def close(self) -> None:
        try:
            if hasattr(self._stream, "close"):
                self._stream.close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


def describe_api_error(error: openai.APIError, model: str, base_url: str) -> str:
    if isinstance(error, openai.AuthenticationError):
        return f"the LLM server refused the API key (HTTP 401): check OPENAI_API_KEY for {model}"
    if isinstance(error, openai.NotFoundError):
        hint = (
            ": Azure's plain client works only on the v1 route (https://<resource>.openai.azure.com/openai/v1/ "
            "as OPENAI_BASE_URL, the deployment name as the model)"
            if ".azure." in base_url and "/openai/v1" not in base_url
            else " (check LLM_MODELS and OPENAI_BASE_URL)"
        )
        return f"the LLM server at {base_url} does not know the model {model} (HTTP 404){hint}"
    if isinstance(error, openai.APIStatusError):
        return f"the LLM server answered HTTP {error.status_code} for {model}, also after retries"
    if isinstance(error, openai.APITimeoutError):
        return f"the LLM server at {base_url} did not answer in time, also after retries"
    if isinstance(error, openai.APIConnectionError):
        return f"could not connect to the LLM server at {base_url}"
    return f"the LLM call failed: {error}"


@dataclass(frozen=True)
class _Estimated:
    """Usage estimated from the text, for a stream that ended without the server's count."""

    prompt_tokens: int
    completion_tokens: int


def _error_body(error: openai.APIStatusError) -> Any:
    try:
        return error.response.content
    except Exception:  # a response already read or closed
        return error.body


def _reasoning_field(message: Any) -> str:
    """The thinking a server sends in a field of its own (DeepSeek, llama.cpp: `reasoning_content`;
    vLLM, Ollama, OpenRouter, Groq: `reasoning`): counted, never read as the answer."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _reasoning_tokens(usage: Any) -> int:
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
