"""LLMClient over real HTTP against OpenAI-compatible servers on 127.0.0.1: FakeLLM for the
happy paths, a scripted server where a test needs a given sequence of answers."""

import json
import socket
import threading
from dataclasses import dataclass, field, replace
from email.message import Message
from http.server import BaseHTTPRequestHandler
from types import SimpleNamespace

import openai
import pytest
from tenacity import nap

from tests.fakes import FakeLLM, LoopbackServer
from verification.clients import llm
from verification.clients.llm import LLMClient, ModelChoice, decode_answer, parse_model_list
from verification.pipeline.types import LLMUsage, MalformedAnswer, StepError

SYSTEM = "You classify websites by the kind of source they are."
SCHEMA = {
    "type": "object",
    "properties": {"source_type": {"type": "string"}},
    "required": ["source_type"],
    "additionalProperties": False,
}
# A server's own Retry-After keeps the openai client's backoff out of the tests' time.
FAST_RETRY = {"retry-after-ms": "1"}


def parse_source_type(value):
    if not isinstance(value, dict) or "source_type" not in value:
        raise MalformedAnswer("no source_type in the answer")
    return value["source_type"]


def ask(client: LLMClient, title: str = "Eiffel Tower - Wiki encyclopedia") -> str:
    return client.complete(
        system=SYSTEM,
        user=f"Host: example.org\nTitle: {title}",
        schema_name="source_type",
        schema=SCHEMA,
        parse=parse_source_type,
    )


def make_client(url: str, *, model="test-model", api_key="test-key", timeout=2.0, max_retries=0):
    return LLMClient(model=model, base_url=url + "/v1", api_key=api_key, timeout=timeout, max_retries=max_retries)


@dataclass
class Reply:
    status: int = 200
    content: str | None = '{"source_type": "wiki"}'
    usage: dict | None = field(
        default_factory=lambda: {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    )
    headers: dict = field(default_factory=dict)
    # An error's own body (a server's shape), instead of the default one.
    body: object = None
    finish_reason: str = "stop"


class _ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: "ScriptedLLM"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        reply = self.owner.next_reply(self.headers, body)
        if reply.status == 200:
            payload = {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": reply.finish_reason,
                    }
                ],
                "usage": reply.usage,
            }
        else:
            payload = reply.body or {"error": {"message": f"scripted {reply.status}", "type": "scripted"}}
        data = json.dumps(payload).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class ScriptedLLM(LoopbackServer):
    """Chat completions on 127.0.0.1 answering with `replies` in order (the last one repeats),
    recording each request's headers (case-insensitive) and JSON body."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = replies
        self.requests: list[tuple[Message, dict]] = []
        self._lock = threading.Lock()
        super().__init__(_ScriptedHandler)
        self.start()

    def next_reply(self, headers: Message, body: dict) -> Reply:
        with self._lock:
            self.requests.append((headers, body))
            return self.replies[min(len(self.requests), len(self.replies)) - 1]


@pytest.fixture(autouse=True)
def fresh_llm_state(monkeypatch):
    # Ports are reused between tests; nothing learnt about one server may leak into another.
    llm.LOCAL_STORE.clear()
    llm.close_clients()
    yield
    llm.close_clients()
    llm.LOCAL_STORE.clear()


@pytest.fixture
def scripted():
    servers = []

    def start(*replies: Reply) -> ScriptedLLM:
        server = ScriptedLLM(list(replies))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def fake_llm():
    servers = []

    def start(**options) -> FakeLLM:
        server = FakeLLM(**options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- answers


def test_it_returns_the_parsed_answer(fake_llm):
    server = fake_llm()

    assert ask(make_client(server.url)) == "wiki"

    [request] = server.requests
    assert request["model"] == "test-model"
    assert request["temperature"] == 0
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert request["messages"][0]["content"] == SYSTEM
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "source_type", "schema": SCHEMA, "strict": True},
    }


def test_it_falls_back_to_plain_text_when_the_server_has_no_structured_output(fake_llm):
    server = fake_llm(structured=False)

    assert ask(make_client(server.url)) == "wiki"

    structured, plain = server.requests
    assert "response_format" in structured
    assert "response_format" not in plain
    assert json.dumps(SCHEMA) in plain["messages"][-1]["content"]


def test_a_step_without_a_schema_gets_the_plain_text_it_asked_for(fake_llm):
    server = fake_llm(structured=False)
    seen = []

    def keep(answer):
        seen.append(answer)
        return answer

    make_client(server.url).complete(
        system="Judge each passage.",
        user="C1: It is tall.\nE1\nIt is tall.",
        schema_name="judgements",
        schema=None,
        parse=keep,
    )

    [request] = server.requests  # no structured attempt first, so no 400 to fall back from
    assert "response_format" not in request
    assert request["messages"][-1]["content"] == "C1: It is tall.\nE1\nIt is tall."
    assert seen == ["E1: The passage states this. (overlap 100%) | supported"]


def test_it_remembers_a_server_without_structured_output(fake_llm):
    server = fake_llm(structured=False)
    client = make_client(server.url)
    ask(client)

    assert ask(client, title="City News") == "news"

    assert ["response_format" in r for r in server.requests] == [True, False, False]


def test_it_remembers_the_fallback_per_model(fake_llm):
    server = fake_llm(structured=False)
    ask(make_client(server.url, model="small"))

    ask(make_client(server.url, model="large"))

    assert [(r["model"], "response_format" in r) for r in server.requests] == [
        ("small", True),
        ("small", False),
        ("large", True),
        ("large", False),
    ]


def test_it_gives_up_when_the_server_refuses_plain_text_too(scripted):
    server = scripted(Reply(status=400))

    with pytest.raises(StepError, match="HTTP 400"):
        ask(make_client(server.url, max_retries=2))

    assert ["response_format" in body for _, body in server.requests] == [True, False]


def test_it_asks_once_more_after_a_malformed_answer(scripted):
    server = scripted(Reply(content="Sorry, I cannot help with that."), Reply())
    client = make_client(server.url)

    assert ask(client) == "wiki"

    assert len(server.requests) == 2
    assert client.usage.calls == 2


def test_it_fails_after_two_malformed_answers(fake_llm):
    server = fake_llm(garbage_words=("garbage",))

    with pytest.raises(StepError) as error:
        ask(make_client(server.url), title="garbage")

    assert str(error.value) == ("the model test-model gave a malformed answer twice (no source_type in the answer)")
    assert server.calls["source_type"] == 2


def test_it_treats_an_empty_answer_as_malformed(scripted):
    server = scripted(Reply(content=None))

    with pytest.raises(StepError, match="malformed answer twice"):
        ask(make_client(server.url))

    assert len(server.requests) == 2


# --- failures of the server


def test_it_retries_a_server_error_then_reports_it(scripted):
    server = scripted(Reply(status=500, headers=FAST_RETRY))
    client = make_client(server.url, max_retries=2)

    with pytest.raises(StepError) as error:
        ask(client)

    assert str(error.value) == "the LLM server answered HTTP 500 for test-model, also after retries"
    assert len(server.requests) == 3
    assert client.usage.calls == 0


def test_it_retries_a_rate_limit_then_succeeds(scripted):
    server = scripted(Reply(status=429, headers=FAST_RETRY), Reply())
    client = make_client(server.url, max_retries=2)

    assert ask(client) == "wiki"

    assert len(server.requests) == 2
    assert client.usage.calls == 1


def test_retries_stop_at_the_time_budget_not_only_the_count(scripted, monkeypatch):
    # A server asking to come back in 30 s, ten retries allowed, a 1 s budget: it gives up
    # now instead of holding the run for minutes. The waits the retries ask for are noted, not
    # slept: a client that ignored the budget fails here at once, not after minutes.
    waits = []
    monkeypatch.setattr(nap, "time", SimpleNamespace(sleep=waits.append))
    server = scripted(Reply(status=503, headers={"retry-after": "30"}))
    client = LLMClient(
        model="test-model", base_url=server.url + "/v1", api_key="k", timeout=2.0, max_retries=10, retry_budget=1.0
    )

    with pytest.raises(StepError, match="HTTP 503"):
        ask(client)

    assert waits == []  # it did not begin the 30 s wait asked
    assert len(server.requests) == 1


def test_retries_go_on_within_the_budget(scripted):
    server = scripted(*[Reply(status=500, headers=FAST_RETRY)] * 4, Reply())
    client = LLMClient(
        model="test-model", base_url=server.url + "/v1", api_key="k", timeout=2.0, max_retries=5, retry_budget=10.0
    )

    assert ask(client) == "wiki"
    assert len(server.requests) == 5


def test_it_reports_a_refused_api_key_without_retrying(scripted):
    server = scripted(Reply(status=401, headers=FAST_RETRY))

    with pytest.raises(StepError) as error:
        ask(make_client(server.url, max_retries=2))

    assert str(error.value) == ("the LLM server refused the API key (HTTP 401): check OPENAI_API_KEY for test-model")
    assert len(server.requests) == 1


def test_it_reports_an_unknown_model(scripted):
    server = scripted(Reply(status=404))

    with pytest.raises(StepError) as error:
        ask(make_client(server.url))

    assert str(error.value) == (
        f"the LLM server at {server.url}/v1 does not know the model test-model (HTTP 404) "
        "(check LLM_MODELS and OPENAI_BASE_URL)"
    )
    assert error.value.transient is False  # asking again meets the same answer


def test_azures_legacy_route_is_told_to_use_the_v1_route():
    from verification.clients.llm import describe_api_error

    legacy = "https://res.openai.azure.com/openai/deployments/gpt5"
    error = openai.NotFoundError.__new__(openai.NotFoundError)  # only its kind is read

    assert "/openai/v1/" in describe_api_error(error, "gpt5", legacy)


def test_it_reports_a_server_that_does_not_answer_in_time(fake_llm):
    # The server holds the answer until the test lets it go (or 60 s): the client gave up on it
    # before it answered, however slow the machine.
    server = fake_llm(held_words=("Eiffel",))
    try:
        with pytest.raises(StepError, match="did not answer in time"):
            ask(make_client(server.url, timeout=0.3))

        assert server.finished == []  # nothing answered yet when the error came
    finally:
        server.release()


def test_it_reports_a_server_that_cannot_be_reached():
    url = f"http://127.0.0.1:{closed_port()}"

    with pytest.raises(StepError) as error:
        ask(make_client(url))

    assert str(error.value) == f"could not connect to the LLM server at {url}/v1"


# --- key and usage


@pytest.mark.parametrize(("api_key", "sent"), [("test-key", "test-key"), ("", "unused")])
def test_it_sends_the_api_key(scripted, api_key, sent):
    server = scripted(Reply())

    ask(make_client(server.url, api_key=api_key))

    [(headers, _)] = server.requests
    assert headers["Authorization"] == f"Bearer {sent}"


def test_it_counts_calls_and_tokens(scripted):
    server = scripted(Reply())
    client = make_client(server.url)

    ask(client)
    ask(client)

    assert client.usage == LLMUsage(calls=2, prompt_tokens=22, completion_tokens=14)


def test_it_counts_a_call_whose_answer_has_no_usage(scripted):
    server = scripted(Reply(usage=None))
    client = make_client(server.url)

    ask(client)

    assert client.usage == LLMUsage(calls=1, prompt_tokens=0, completion_tokens=0)


# --- streamed answers

CHUNK_PROMPT = (
    "Context:\nS1: The Eiffel Tower is in Paris.\nS2: It was completed in 1889.\nS3: It is made of iron.\n"
    "Target sentences: S1, S2, S3\nAnswer:"
)


def ask_streamed(client: LLMClient, seen: list, on_text=None):
    return client.complete(
        system="You split sentences into atomic claims.",
        user=CHUNK_PROMPT,
        schema_name="claims",
        schema=None,
        parse=lambda answer: answer,
        on_text=on_text or seen.append,
    )


FIRST_LINES = "S1:\n- The Eiffel Tower is in Paris.\n"
REST = ("S2:\n- It was completed", " in 1889.\nS3:\n- It is made of iron.")
WROTE_THE_REST = "(the server writes the rest)"


class _TwoPartHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: "TwoPartStream"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        server = self.owner
        server.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": FIRST_LINES}}]})
        server.handed_on.wait(server.hold_s)
        server.log.append(WROTE_THE_REST)
        for piece in REST:
            self._event({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        self._event({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _event(self, fields: dict) -> None:
        chunk = {"id": "chatcmpl-two-parts", "object": "chat.completion.chunk", "created": 0, "model": "test-model"}
        self._chunk(f"data: {json.dumps(chunk | fields)}\n\n".encode())

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class TwoPartStream(LoopbackServer):
    """Chat completions streaming FIRST_LINES at once, then the rest of the answer only once
    `handed_on` is set (by the client's on_text) or after `hold_s`, noting WROTE_THE_REST in
    `log` then: the order in which the client handed lines on and the server wrote them."""

    def __init__(self, hold_s: float = 30.0) -> None:
        self.hold_s = hold_s
        self.requests: list[dict] = []
        self.log: list[str] = []
        self.handed_on = threading.Event()
        super().__init__(_TwoPartHandler)
        self.start()


@pytest.fixture
def two_part_stream():
    server = TwoPartStream()
    yield server
    server.handed_on.set()
    server.stop()


def test_a_streamed_answer_is_handed_on_line_by_line_while_it_is_written(two_part_stream):
    server = two_part_stream
    client = make_client(server.url, timeout=60)
    client.remember(replace(client.capabilities, thinking="none"))  # known not to think aloud

    def on_text(text: str) -> None:
        server.log.append(text)
        server.handed_on.set()

    answer = ask_streamed(client, [], on_text=on_text)

    [request] = server.requests
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert answer == FIRST_LINES + "".join(REST)
    # At each line's end, once; the first lines before the server wrote the rest of the answer.
    assert server.log == [FIRST_LINES, WROTE_THE_REST, FIRST_LINES + REST[0], answer]
    assert client.usage == LLMUsage(calls=1, prompt_tokens=11, completion_tokens=7)


def request_tokens(request: dict) -> int:
    return len(" ".join(m["content"] for m in request["messages"])) // 4


def test_usage_sent_in_every_streamed_event_is_counted_once(fake_llm):
    server = fake_llm(usage_in_every_event=True)
    client = make_client(server.url)

    answer = ask_streamed(client, [])

    [request] = server.requests
    assert client.usage == LLMUsage(calls=1, prompt_tokens=request_tokens(request), completion_tokens=len(answer) // 4)


def test_a_server_that_answers_without_a_stream_is_asked_without_one_from_then_on(fake_llm):
    server = fake_llm(streams=False)
    client = make_client(server.url)

    first, second = ask_streamed(client, []), ask_streamed(client, [])

    assert first == second and first.startswith("S1:\n- The Eiffel Tower is in Paris.")
    assert [r.get("stream", False) for r in server.requests] == [True, False, False]


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
def test_logprobs_asked_for_reach_parse_and_on_text_as_the_answers_tokens(fake_llm, streamed):
    server = fake_llm()
    client = make_client(server.url)
    seen = []

    text, tokens = client.complete(
        system="You split sentences into atomic claims.",
        user=CHUNK_PROMPT,
        schema_name="claims",
        schema=None,
        parse=lambda answer, tokens: (answer, tokens),
        logprobs=2,
        **({"on_text": lambda text, tokens: seen.append((text, tokens))} if streamed else {}),
    )

    [request] = server.requests
    assert request["logprobs"] is True and request["top_logprobs"] == 2
    assert tokens and "".join(t.token for t in tokens) == text and all(t.logprob <= 0 for t in tokens)
    assert all("".join(t.token for t in so_far).startswith(so_far_text) for so_far_text, so_far in seen)
    assert bool(seen) is streamed


def test_a_server_without_logprobs_gives_parse_none_for_the_tokens(fake_llm):
    server = fake_llm(logprobs=False)
    client = make_client(server.url)

    tokens = ask_with_logprobs(client)

    assert tokens is None and server.requests[0]["logprobs"] is True


def test_a_server_that_refuses_logprobs_is_asked_without_them_from_then_on(scripted):
    server = scripted(Reply(status=400), Reply(content="S1:\n- The Eiffel Tower is in Paris. | eiffel paris | true"))
    client = make_client(server.url)

    first, second = ask_with_logprobs(client, streamed=False), ask_with_logprobs(client, streamed=False)

    assert first is None and second is None
    assert [body.get("logprobs", False) for _, body in server.requests] == [True, False, False]


def ask_with_logprobs(client: LLMClient, *, streamed: bool = True):
    return client.complete(
        system="You split sentences into atomic claims.",
        user=CHUNK_PROMPT,
        schema_name="claims",
        schema=None,
        parse=lambda answer, tokens: tokens,
        logprobs=1,
        **({"on_text": lambda text, tokens: None} if streamed else {}),
    )


def test_a_server_that_refuses_to_stream_is_asked_without_a_stream(scripted):
    server = scripted(Reply(status=400), Reply(content="S1:\n- The Eiffel Tower is in Paris. | eiffel paris"))
    client = make_client(server.url)

    answer = ask_streamed(client, [])

    assert answer == "S1:\n- The Eiffel Tower is in Paris. | eiffel paris"
    assert [body.get("stream", False) for _, body in server.requests] == [True, False]
    assert client.usage.calls == 1


def test_a_streamed_request_that_fails_is_reported_after_retries(fake_llm):
    server = fake_llm(fail_words={"Eiffel": 503})
    client = make_client(server.url, max_retries=1)

    with pytest.raises(StepError, match="HTTP 503"):
        ask_streamed(client, [])

    assert [r.get("stream") for r in server.requests] == [True, True]


# --- pure helpers

DEFAULT = "https://api.openai.com/v1"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("gpt-4o-mini", [ModelChoice("gpt-4o-mini", DEFAULT)]),
        (
            "gpt-4o-mini,llama3.1:8b=http://localhost:11434/v1",
            [
                ModelChoice("gpt-4o-mini", DEFAULT),
                ModelChoice("llama3.1:8b", "http://localhost:11434/v1"),
            ],
        ),
        (" a , , b ,", [ModelChoice("a", DEFAULT), ModelChoice("b", DEFAULT)]),
        ("a=", [ModelChoice("a", DEFAULT)]),
        ("m = http://gpu:8000/v1 ", [ModelChoice("m", "http://gpu:8000/v1")]),
        ("m=http://gpu/v1?key=1", [ModelChoice("m", "http://gpu/v1?key=1")]),
        ("=http://gpu/v1", []),
        ("", []),
    ],
)
def test_it_parses_the_model_list(spec, expected):
    assert parse_model_list(spec, DEFAULT) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  {"a": 1}\n', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```JSON\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here is the answer:\n```json\n{"a": 1}\n```', {"a": 1}),
        ('Sure! {"a": {"b": [1, 2]}} Hope this helps.', {"a": {"b": [1, 2]}}),
        ("[1, 2]", [1, 2]),
        ("  Sorry, I cannot help with that.  ", "Sorry, I cannot help with that."),
        ("a {broken: json} b", "a {broken: json} b"),
        ("", ""),
    ],
)
def test_it_decodes_json_from_an_answer(text, expected):
    assert decode_answer(text) == expected


def test_a_400_that_plain_text_also_gets_is_not_taken_for_missing_structured_output(scripted):
    server = scripted(Reply(status=400), Reply(status=400), Reply())

    with pytest.raises(StepError, match="HTTP 400"):
        ask(make_client(server.url))
    ask(make_client(server.url))

    assert ["response_format" in body for _, body in server.requests] == [True, False, True]


def test_a_server_that_is_not_an_openai_api_fails_with_a_readable_reason(serve_html):
    with pytest.raises(StepError, match="did not answer like an OpenAI chat-completions API"):
        ask(make_client(serve_html))


def test_a_streamed_request_to_a_server_that_is_not_an_openai_api_fails_with_a_readable_reason(serve_html):
    with pytest.raises(StepError, match="did not answer like an OpenAI chat-completions API"):
        ask_streamed(make_client(serve_html), [])


def test_a_stream_whose_events_are_not_json_fails_with_a_readable_reason(serve):
    url = serve(b"data: {not json\n\n", "text/event-stream")

    with pytest.raises(StepError, match="sent a stream that is not an OpenAI one"):
        ask_streamed(make_client(url), [])


@pytest.fixture
def serve():
    """serve(body, content_type): a server on 127.0.0.1 answering every POST with that body."""
    servers = []

    def start(body: bytes, content_type: str) -> str:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        servers.append(LoopbackServer(Handler).start())
        return servers[-1].url + "/v1"

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def serve_html(serve):
    return serve(b"<html>hello</html>", "text/html")


# --- real servers' habits (issue 37)

MISTRAL_422 = {
    "object": "error",
    "message": {
        "detail": [
            {"type": "extra_forbidden", "loc": ["body", "reasoning_effort"], "msg": "Extra inputs are not permitted"}
        ]
    },
    "type": "invalid_request_error",
    "param": None,
    "code": None,
}
GPT5_TEMPERATURE = {
    "error": {
        "message": "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) "
        "value is supported.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "unsupported_value",
    }
}


def test_a_thinking_block_in_the_answer_is_never_parsed_and_its_tokens_are_counted(scripted):
    draft = '{"source_type": "blog"} no wait'
    server = scripted(Reply(content=f'<think>The host looks like a blog. {draft}</think>\n{{"source_type": "wiki"}}'))
    client = make_client(server.url)

    assert ask(client) == "wiki"
    assert client.usage.reasoning_tokens > 0
    assert client.capabilities.thinking == "inline"


def test_a_refused_field_is_learned_once_and_the_request_sent_again_without_it(scripted):
    server = scripted(Reply(status=422, body=MISTRAL_422), Reply())
    client = make_client(server.url)

    assert ask(client) == "wiki" and ask(client) == "wiki"

    sent = [body for _, body in server.requests]
    assert len(sent) == 3 and "reasoning_effort" in sent[0]
    assert not any("reasoning_effort" in body for body in sent[1:])
    assert client.lessons == ["reasoning effort refused: sent without one"]


def test_another_client_of_the_same_server_and_model_does_not_pay_the_lesson_again(scripted):
    server = scripted(Reply(status=400, body=GPT5_TEMPERATURE), Reply())

    ask(make_client(server.url))
    ask(make_client(server.url))

    assert [("temperature" in body) for _, body in server.requests] == [True, False, False]


def test_a_refusal_factsite_cannot_get_round_gives_the_servers_own_words(scripted):
    refusal = {"error": {"message": "Your organization must be verified to use this model.", "param": None}}
    server = scripted(Reply(status=400, body=refusal))

    with pytest.raises(StepError) as failure:
        make_client(server.url).complete(
            system=SYSTEM, user="Host: a", schema_name="source_type", schema=None, parse=lambda answer: answer
        )

    assert "Your organization must be verified to use this model." in str(failure.value)
    assert "also after retries" not in str(failure.value) and len(server.requests) == 1


def test_an_answer_cut_at_its_cap_fails_with_that_reason(scripted):
    server = scripted(Reply(content='{"source_type": "wi', finish_reason="length"))

    with pytest.raises(StepError, match="cut at its cap of 8 tokens"):
        make_client(server.url).complete(
            system=SYSTEM,
            user="Host: a",
            schema_name="source_type",
            schema=SCHEMA,
            parse=parse_source_type,
            max_tokens=8,
        )

    assert server.requests[0][1]["max_completion_tokens"] == 8


def test_an_answer_cut_at_its_cap_after_it_was_complete_is_used(scripted):
    server = scripted(Reply(content='{"source_type": "wiki"} I hope this helps. I hope', finish_reason="length"))

    answer = make_client(server.url).complete(
        system=SYSTEM,
        user="Host: a",
        schema_name="source_type",
        schema=SCHEMA,
        parse=parse_source_type,
        max_tokens=8,
        done=lambda text: "}" in text,
    )

    assert answer == "wiki"


def test_a_model_found_thinking_when_its_answer_was_cut_is_asked_again_with_room_to_think(scripted):
    server = scripted(Reply(content="<think>Let me consider the host", finish_reason="length"), Reply())
    client = make_client(server.url)

    answer = client.complete(
        system=SYSTEM, user="Host: a", schema_name="source_type", schema=SCHEMA, parse=parse_source_type, max_tokens=8
    )

    assert answer == "wiki"
    caps = [body["max_completion_tokens"] for _, body in server.requests]
    assert caps == [8, 8 + client.reasoning_tokens]
