"""The language model, through the `openai` client, so any OpenAI-compatible server works
(OpenAI, vLLM, Ollama, llama.cpp). Transient failures (429, 5xx, timeouts) are retried with
jittered backoff (or the server's Retry-After) within a time budget per call, not only a count:
a server that keeps failing must not hold a run for minutes. A malformed answer is asked for
once more. A step that can act on an answer's first lines (decompose) gets it streamed. With
LLM_CONCURRENCY, each request waits for one of the server's slots (llm_slots), in priority order."""

import contextlib
import email.utils
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any, TypeVar

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_before_delay, wait_random_exponential

from verification.clients import llm_slots
from verification.clients.llm_models import ModelChoice, parse_model_list  # noqa: F401 (part of this API)
from verification.pipeline.types import LLMUsage, MalformedAnswer, StepError, TokenLogprob

T = TypeVar("T")

# Servers that answered 400 to `response_format=json_schema`; asked in plain text from then on.
_NO_STRUCTURED_OUTPUT: set[tuple[str, str]] = set()
# Servers that refused to stream an answer, or answered a stream request without one.
_NO_STREAMING: set[tuple[str, str]] = set()
# Servers that answered 400 to `logprobs`: asked without them from then on (the answer matters more).
_NO_LOGPROBS: set[tuple[str, str]] = set()
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

    def complete(
        self,
        *,
        system: str,
        user: str,
        schema_name: str,
        schema: dict | None,
        parse: Callable[..., T],
        on_text: Callable[..., None] | None = None,
        logprobs: int = 0,
    ) -> T:
        problem = ""
        for _attempt in range(2):
            asked = _Logprobs(logprobs) if logprobs else None
            if on_text is not None and schema is None and (self.base_url, self.model) not in _NO_STREAMING:
                text = self._streamed(system, user, on_text, asked)
            else:
                text = self._ask(system, user, schema_name, schema, asked)
            try:
                return parse(decode_answer(text), asked.tokens) if asked else parse(decode_answer(text))
            except MalformedAnswer as error:
                problem = str(error)
        raise StepError(f"the model {self.model} gave a malformed answer twice ({problem})")

    def _ask(
        self, system: str, user: str, schema_name: str, schema: dict | None, asked: _Logprobs | None = None
    ) -> str:
        if schema is None:  # a plain-text answer, in the format the prompt describes
            try:
                return self._chat(system, user, schema_name, schema, structured=False, asked=asked)
            except openai.BadRequestError as error:
                raise StepError(describe_api_error(error, self.model, self.base_url)) from error
        if (self.base_url, self.model) not in _NO_STRUCTURED_OUTPUT:
            try:
                return self._chat(system, user, schema_name, schema, structured=True)
            except openai.BadRequestError:
                pass  # maybe a server without JSON-schema output: try plain text below
        try:
            text = self._chat(system, user, schema_name, schema, structured=False)
        except openai.BadRequestError as error:
            raise StepError(describe_api_error(error, self.model, self.base_url)) from error
        # Plain text worked where structured output got a 400: remember, and skip the 400 next time.
        with _lock:
            _NO_STRUCTURED_OUTPUT.add((self.base_url, self.model))
        return text

    def _chat(
        self,
        system: str,
        user: str,
        schema_name: str,
        schema: dict | None,
        structured: bool,
        asked: _Logprobs | None = None,
    ) -> str:
        kwargs: dict[str, Any] = {}
        if structured:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
        elif schema is not None:
            user = f"{user}\n\nAnswer with one JSON object only, matching this JSON schema:\n{json.dumps(schema)}"
        try:
            response = self._create_asking(
                asked,
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                temperature=0,
                **kwargs,
            )
        except openai.BadRequestError:
            raise
        except openai.APIError as error:
            raise StepError(describe_api_error(error, self.model, self.base_url)) from error
        if not isinstance(response, ChatCompletion):
            raise StepError(
                f"the server at {self.base_url} did not answer like an OpenAI chat-completions API "
                "(check OPENAI_BASE_URL)"
            )
        self.usage.calls += 1
        self._count(response.usage)
        if not response.choices or response.choices[0].message.content is None:
            return ""
        if asked:
            asked.add(response.choices[0].logprobs)
        return response.choices[0].message.content

    def _streamed(self, system: str, user: str, on_text: Callable[..., None], asked: _Logprobs | None = None) -> str:
        """A plain-text answer asked for as a stream: `on_text` gets the answer so far at each
        line's end, so a step can act on its first lines while the model writes the rest. A
        server that refuses to stream (HTTP 400 to `stream_options`) or answers without a
        stream is asked again without one, and from then on."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        try:
            stream = self._create_asking(
                asked,
                model=self.model,
                messages=messages,
                temperature=0,
                stream=True,
                stream_options={"include_usage": True},
            )
        except openai.BadRequestError:
            return self._without_streaming(system, user, asked)
        except openai.APIError as error:
            raise StepError(describe_api_error(error, self.model, self.base_url)) from error
        parts: list[str] = []
        chunks, usage = 0, None
        with contextlib.closing(stream):
            for chunk in self._events(stream):
                chunks += 1
                # The last usage: servers that send it in every event send it summed so far.
                usage = chunk.usage or usage
                delta = chunk.choices[0].delta if chunk.choices else None  # null in some servers' last event
                piece = getattr(delta, "content", None)
                if asked and chunk.choices:
                    asked.add(chunk.choices[0].logprobs)
                if piece:
                    parts.append(piece)
                    if "\n" in piece:
                        on_text("".join(parts), asked.tokens) if asked else on_text("".join(parts))
        if not chunks:
            return self._without_streaming(system, user, asked)
        self.usage.calls += 1
        self._count(usage)
        return "".join(parts)

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

    def _without_streaming(self, system: str, user: str, asked: _Logprobs | None = None) -> str:
        with _lock:
            _NO_STREAMING.add((self.base_url, self.model))
        return self._ask(system, user, "", None, asked)

    def _count(self, usage: Any) -> None:
        if usage is not None:
            self.usage.prompt_tokens += usage.prompt_tokens or 0
            self.usage.completion_tokens += usage.completion_tokens or 0

    def _create_asking(self, asked: _Logprobs | None, **request) -> Any:
        """`_create`, asking for the tokens' logprobs when `asked` (and the server takes them)."""
        if asked is None or (self.base_url, self.model) in _NO_LOGPROBS:
            return self._create(**request)
        try:
            return self._create(**request, logprobs=True, top_logprobs=asked.top)
        except openai.BadRequestError:
            with _lock:
                _NO_LOGPROBS.add((self.base_url, self.model))
            return self._create(**request)

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
        return f"the LLM server at {base_url} does not know the model {model} (HTTP 404)"
    if isinstance(error, openai.APIStatusError):
        return f"the LLM server answered HTTP {error.status_code} for {model}, also after retries"
    if isinstance(error, openai.APITimeoutError):
        return f"the LLM server at {base_url} did not answer in time, also after retries"
    if isinstance(error, openai.APIConnectionError):
        return f"could not connect to the LLM server at {base_url}"
    return f"the LLM call failed: {error}"


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
