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
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_before_delay

from verification.clients import llm_capabilities as caps
from verification.clients import llm_slots
from verification.clients.llm_answers import (
    EstimatedUsage,
    ThinkingFilter,
    decode_answer,
    estimated_tokens,
    reasoning_field,
    reasoning_tokens,
    strip_thinking,
)
from verification.clients.llm_capabilities import Capabilities, read_refusal
from verification.clients.llm_knowledge import LOCAL_STORE, CapabilityStore, ServerKnowledge
from verification.clients.llm_models import ModelChoice, parse_model_list  # noqa: F401 (part of this API)
from verification.clients.llm_requests import Ask, build_request, describe_api_error, describe_cut_answer, token_cap
from verification.clients.llm_retries import backoff, retryable
from verification.pipeline.types import LLMUsage, MalformedAnswer, StepError, TokenLogprob

T = TypeVar("T")

# How many refusals one call may learn from before it gives up (each names another parameter).
MAX_LESSONS = 6


# One client per server and process: its HTTP connection pool is reused by every task. The
# least recently used beyond MAX_CLIENTS is closed (its connections with it).
MAX_CLIENTS = 16
_clients: OrderedDict[tuple[str, str, float], openai.OpenAI] = OrderedDict()
_clients_lock = threading.Lock()


def _openai_client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    key = (base_url, api_key, timeout)
    with _clients_lock:
        if key in _clients:
            _clients.move_to_end(key)
            return _clients[key]
        # Its own retries are off: ours below also stop at a time budget.
        client = _clients[key] = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
        while len(_clients) > MAX_CLIENTS:
            _clients.popitem(last=False)[1].close()
        return client


def close_clients() -> None:
    """Every server's client closed (a test's servers are gone; a process ending)."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()


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
        self.reasoning_tokens = reasoning_tokens
        # What the server takes and what it taught, shared with every client of it; LLM_CONTEXT_TOKENS
        # for this model (what the person set) wins over what was learned.
        self.knowledge = ServerKnowledge(
            model=model,
            base_url=base_url,
            store=store or LOCAL_STORE,
            effort=reasoning_effort,
            context_tokens=context_tokens,
        )

    @property
    def openai(self) -> openai.OpenAI:
        """The server's own client (check_llm lists its models)."""
        return self._client

    @property
    def capabilities(self) -> Capabilities:
        return self.knowledge.capabilities

    @property
    def context_tokens(self) -> int:
        """The server's context in tokens (0: not known): what a step's prompt must fit in."""
        return self.knowledge.context_tokens

    @property
    def lessons(self) -> list[str]:
        return self.knowledge.lessons

    def remember(self, capabilities: Capabilities) -> None:
        self.knowledge.remember(capabilities)

    def prompt_budget(self) -> int:
        """The prompt tokens one call may send (0: no limit known)."""
        return self.knowledge.prompt_budget(self.reasoning_tokens)

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
        hidden = reasoning_tokens(response.usage)
        reasoning = reasoning_field(choice.message)
        self.usage.reasoning_tokens += hidden or estimated_tokens(thought + reasoning)
        self.knowledge.learn_thinking(reasoning, content, hidden, unclosed=bool(thought) and thought == content)
        self.knowledge.check_cut_prompt(ask.system + ask.user, response.usage)
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
            first = self.knowledge.first_request(capabilities, body)
            try:
                response = self._create(**body)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as error:
                refusal = read_refusal(error.status_code, _error_body(error))
                fresh = self.capabilities
                if not guessed and build_request(self.model, fresh, ask) != body:
                    capabilities = fresh  # another call learned it meanwhile: no lesson to pay twice
                    continue
                capabilities = self.knowledge.learn_refusal(capabilities if guessed else fresh, refusal, body)
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
            self.knowledge.confirm(capabilities, body)
            return response, capabilities, body
        raise StepError(f"the LLM server at {self.base_url} refused {MAX_LESSONS} requests in a row for {self.model}")

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
                reasoning.append(reasoning_field(delta) if delta is not None else "")
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
            usage = EstimatedUsage(estimated_tokens(ask.system + ask.user), estimated_tokens("".join(raw + reasoning)))
        self._count(usage)
        hidden = reasoning_tokens(usage)
        # The whole answer read again: a closing tag alone ends a block the filter could not
        # know had begun (nothing was handed on before it for a model whose template may open
        # one: may_think_unopened).
        content = "".join(raw)
        answer, thought = self._answer_of(content, cut=finish == "length")
        self.usage.reasoning_tokens += hidden or estimated_tokens(thought + "".join(reasoning))
        self.knowledge.learn_thinking(
            "".join(reasoning), content, hidden, unclosed=bool(thought) and thought == content
        )
        self.knowledge.check_cut_prompt(ask.system + ask.user, usage)
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
            wait=backoff,
            retry=retry_if_exception(retryable),
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


def _error_body(error: openai.APIStatusError) -> Any:
    try:
        return error.response.content
    except Exception:  # a response already read or closed
        return error.body
