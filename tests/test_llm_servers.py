"""The fake model's server profiles (tests/llm_servers.py) against what ../shared/PROVIDERS.md
says each real server does: plain HTTP to the fake on 127.0.0.1, no factsite client."""

import json
import re
import time

import pytest
import requests

from tests.fakes import FakeLLM
from tests.llm_servers import CLOSED, FIELDS, FILLER, HIDDEN, INLINE, LOST_TEXT, NONE, PROFILES, RUNAWAY_TOKENS
from verification.clients.llm_answers import strip_thinking
from verification.pipeline import trail_select

JUDGE_SYSTEM = "Judge each passage (E1..) against the claim (C1..) above it, from the passage alone."
JUDGE_USER = (
    "C1: The Eiffel Tower is in Paris.\n"
    "E1 (from: Wiki)\nThe Eiffel Tower is a wrought-iron lattice tower in Paris, France.\n\n"
    "E2\nThe Eiffel Tower is not in Paris, it is a myth.\n\n"
    "E3\nBananas are yellow and grow in warm places."
)
# The answer as JSON asked for in the prompt, as any server takes it.
JUDGE_JSON = JUDGE_USER + "\n\nAnswer with one JSON object only."
JUDGEMENTS = {"type": "json_schema", "json_schema": {"name": "judgements", "strict": True, "schema": {}}}
TRAIL_SYSTEM = trail_select.SYSTEM_PROMPT
TRAIL_USER = (
    "Claim: The Eiffel Tower was completed in 1889.\n\nText:\n"
    "S1: Paris has many museums.\nS2: The Eiffel Tower was completed in 1889 for the fair.\nS3: It rains."
)
GPT5_TEMPERATURE = {
    "error": {
        "message": "Unsupported value: 'temperature' does not support 0 with this model. "
        "Only the default (1) value is supported.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "unsupported_value",
    }
}


def openai_error(message: str, param: str | None, code: str | None) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def unsupported(param: str, hint: str = "") -> dict:
    message = f"Unsupported parameter: '{param}' is not supported with this model." + (f" {hint}" if hint else "")
    return openai_error(message, param, "unsupported_parameter")


def mistral_extra(loc: list[str], value) -> dict:
    detail = {"type": "extra_forbidden", "loc": ["body", *loc], "msg": "Extra inputs are not permitted", "input": value}
    return {
        "object": "error",
        "message": {"detail": [detail]},
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


@pytest.fixture
def serve():
    servers = []

    def start(name: str | None, **options) -> FakeLLM:
        server = FakeLLM(profile=PROFILES[name] if name else None, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def base(server: FakeLLM) -> str:
    """The base URL a client is given: Azure's v1 route, else /v1."""
    return server.url + ("/openai/v1" if server.profile and server.profile.path_prefix else "/v1")


def ask(server: FakeLLM, *, system: str = JUDGE_SYSTEM, user: str = JUDGE_USER, **fields) -> requests.Response:
    body = {"model": server.profile.model if server.profile else "fake-model"}
    body["messages"] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return requests.post(base(server) + "/chat/completions", json=body | fields, timeout=30)


def events(response: requests.Response) -> list[dict]:
    lines = [line for line in response.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[len("data: ") :]) for line in lines[:-1]]


def first_json_object(text: str) -> dict:
    """What a naive reader takes for the answer: the first {...} that parses."""
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            return json.JSONDecoder().raw_decode(text[start:])[0]
        except json.JSONDecodeError:
            continue
    raise AssertionError(f"no JSON object in {text!r}")


def thought_and_answer(profile_name: str, message: dict) -> tuple[str, str]:
    """(the thinking, the answer) of a message as its server places them."""
    thinking = PROFILES[profile_name].thinking
    if thinking in FIELDS:
        return message[thinking], message["content"]
    answer, thought = strip_thinking(message["content"])
    return thought, answer


THINKING_ALOUD = [name for name, p in PROFILES.items() if p.thinking not in (NONE, HIDDEN)]


# --- what every server does


@pytest.mark.parametrize("name", PROFILES)
def test_it_lists_the_profiles_model(serve, name):
    server = serve(name)

    listed = requests.get(base(server) + "/models", timeout=5).json()["data"]

    assert [entry["id"] for entry in listed] == [PROFILES[name].listed_as or PROFILES[name].model]


@pytest.mark.parametrize("name", PROFILES)
def test_its_answer_after_the_thinking_is_the_plain_fakes(serve, name):
    plain, server = serve(None), serve(name)

    expected = ask(plain).json()["choices"][0]["message"]["content"]
    choice = ask(server).json()["choices"][0]
    thought, answer = thought_and_answer(name, choice["message"])

    if PROFILES[name].runaway:
        assert answer.startswith(expected + FILLER) and choice["finish_reason"] == "length"
    else:
        assert answer == expected and choice["finish_reason"] == "stop"
    assert bool(thought) == (name in THINKING_ALOUD)
    assert not server.refused


def test_without_a_profile_it_takes_everything_as_before(serve):
    server = serve(None)

    fields = {"temperature": 0, "logprobs": True, "max_tokens": 50, "reasoning_effort": "minimal", "metadata": {}}
    reply = ask(server, **fields).json()

    assert reply["choices"][0]["logprobs"]["content"]
    assert set(reply["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert server.sent == [] and not server.refused


# --- refusals, in each server's words


REFUSALS = [
    ("openai-gpt-5-mini", {"temperature": 0}, 400, GPT5_TEMPERATURE),
    ("openai-gpt-5-mini", {"logprobs": True, "top_logprobs": 2}, 400, unsupported("logprobs")),
    (
        "openai-gpt-5-mini",
        {"max_tokens": 100},
        400,
        unsupported("max_tokens", "Use 'max_completion_tokens' instead."),
    ),
    ("openai-gpt-5-mini", {"top_p": 0.5}, 400, unsupported("top_p")),
    (
        "openai-gpt-5-mini",
        {"reasoning_effort": "none"},
        400,
        openai_error(
            "Unsupported value: 'reasoning_effort' does not support 'none' with this model. "
            "Supported values are: 'minimal', 'low', 'medium', and 'high'.",
            "reasoning_effort",
            "unsupported_value",
        ),
    ),
    (
        "openai-gpt-5.1",
        {"reasoning_effort": "minimal"},
        400,
        openai_error(
            "Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. "
            "Supported values are: 'none', 'low', 'medium', and 'high'.",
            "reasoning_effort",
            "unsupported_value",
        ),
    ),
    ("openai-gpt-5.1", {"reasoning_effort": "low", "temperature": 0}, 400, GPT5_TEMPERATURE),
    ("openai-gpt-5.1", {"reasoning_effort": "high", "logprobs": True}, 400, unsupported("logprobs")),
    ("azure-v1", {"temperature": 0}, 400, GPT5_TEMPERATURE),
    (
        "deepseek-chat",
        {"response_format": JUDGEMENTS},
        400,
        openai_error("This response_format type is unavailable now", None, "invalid_request_error"),
    ),
    (
        "deepseek-chat",
        {"response_format": {"type": "json_object"}},
        400,
        openai_error(
            "Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'.",
            None,
            "invalid_request_error",
        ),
    ),
    ("deepseek-reasoner", {"logprobs": True}, 400, unsupported("logprobs")),
    (
        "deepseek-reasoner",
        {"response_format": JUDGEMENTS},
        400,
        openai_error("This response_format type is unavailable now", None, "invalid_request_error"),
    ),
    (
        "gemini",
        {"logprobs": True},
        400,
        [
            {
                "error": {
                    "code": 400,
                    "message": "Logprobs is not enabled for models/gemini-2.5-flash",
                    "status": "INVALID_ARGUMENT",
                }
            }
        ],
    ),
    (
        "anthropic",
        {"n": 2},
        400,
        {"type": "error", "error": {"type": "invalid_request_error", "message": "n: only n=1 is supported"}},
    ),
    (
        "groq-qwen3",
        {"logprobs": True},
        400,
        openai_error("`logprobs` is not supported with this model", "logprobs", "invalid_request_error"),
    ),
    (
        "groq-qwen3",
        {"response_format": JUDGEMENTS},
        400,
        openai_error(
            "This model does not support response format `json_schema`",
            "response_format",
            "invalid_request_error",
        ),
    ),
    (
        "mistral",
        {"stream_options": {"include_usage": True}, "stream": True},
        422,
        mistral_extra(["stream_options", "include_usage"], True),
    ),
    ("mistral", {"max_completion_tokens": 100}, 422, mistral_extra(["max_completion_tokens"], 100)),
    ("mistral", {"reasoning_effort": "low"}, 422, mistral_extra(["reasoning_effort"], "low")),
    ("mistral", {"logprobs": True, "top_logprobs": 1}, 422, mistral_extra(["logprobs"], True)),
    ("mistral", {"metadata": {"run": "1"}}, 422, mistral_extra(["metadata"], {"run": "1"})),
    ("mistral", {"frequency_penalty": 0.1}, 422, mistral_extra(["frequency_penalty"], 0.1)),
    (
        "lmstudio",
        {"response_format": {"type": "json_object"}},
        400,
        {"error": "'response_format.type' must be 'json_schema' or 'text'"},
    ),
]


@pytest.mark.parametrize(("name", "fields", "status", "body"), REFUSALS)
def test_it_refuses_in_the_servers_own_words(serve, name, fields, status, body):
    server = serve(name)

    response = ask(server, **fields)

    assert (response.status_code, response.json()) == (status, body)
    error = body.get("error") if isinstance(body, dict) else None
    named = ((error.get("param") if isinstance(error, dict) else None) or next(iter(fields))).split(".")[0]
    assert server.refused == {named: 1} and server.refusals == [(status, named)]
    assert server.calls.total() == 0  # the model never saw it


ACCEPTED = [
    ("openai-gpt-4o-mini", {"temperature": 0, "logprobs": True, "max_tokens": 500, "response_format": JUDGEMENTS}),
    ("openai-gpt-5-mini", {"temperature": 1, "max_completion_tokens": 5000, "reasoning_effort": "minimal"}),
    ("openai-gpt-5.1", {"temperature": 0, "logprobs": True, "top_logprobs": 2}),
    ("openai-gpt-5.1", {"reasoning_effort": "none", "temperature": 0, "logprobs": True}),
    ("deepseek-chat", {"user": JUDGE_JSON, "response_format": {"type": "json_object"}, "logprobs": True}),
    ("deepseek-reasoner", {"temperature": 0, "top_p": 0.1}),
    ("gemini", {"response_format": JUDGEMENTS, "reasoning_effort": "low"}),
    ("anthropic", {"response_format": JUDGEMENTS, "logprobs": True, "reasoning_effort": "high", "n": 1}),
    ("groq-qwen3", {"response_format": {"type": "json_object"}}),
    ("mistral", {"temperature": 0, "max_tokens": 500, "stream": False, "response_format": JUDGEMENTS}),
    ("ollama-qwen3", {"logprobs": True, "reasoning_effort": "low", "stream_options": {"include_usage": True}}),
    ("llamacpp", {"logprobs": True, "response_format": JUDGEMENTS}),
    ("vllm", {"logprobs": True, "max_completion_tokens": 2000}),
    ("lmstudio", {"response_format": JUDGEMENTS, "logprobs": True}),
]


@pytest.mark.parametrize(("name", "fields"), ACCEPTED)
def test_it_takes_what_its_server_takes(serve, name, fields):
    server = serve(name)

    response = ask(server, **fields)

    assert response.status_code == 200, response.text
    assert not server.refused


def test_gpt_5_1_gives_logprobs_only_at_effort_none(serve):
    server = serve("openai-gpt-5.1")

    choice = ask(server, logprobs=True).json()["choices"][0]

    assert choice["logprobs"]["content"]
    assert ask(server, logprobs=True, reasoning_effort="medium").status_code == 400


@pytest.mark.parametrize("name", ["anthropic", "ollama-qwen3", "lmstudio"])
def test_what_a_server_ignores_changes_nothing_in_its_answer(serve, name):
    plain, server = serve(None), serve(name)

    fields = {"logprobs": True} | ({"response_format": JUDGEMENTS} if name == "anthropic" else {})
    choice = ask(server, **fields).json()["choices"][0]

    assert choice["logprobs"] is None
    assert thought_and_answer(name, choice["message"])[1] == ask(plain).json()["choices"][0]["message"]["content"]


def test_deepseek_answers_json_object_with_the_payload_when_the_prompt_says_json(serve):
    server = serve("deepseek-chat")

    response = ask(server, user=JUDGE_USER + "\n\nAnswer in JSON.", response_format={"type": "json_object"})

    verdicts = [j["verdict"] for j in json.loads(response.json()["choices"][0]["message"]["content"])["judgements"]]
    assert verdicts == ["supported", "not_supported", "irrelevant"]


def test_azure_answers_404_off_its_v1_route(serve):
    server = serve("azure-legacy")

    legacy = requests.post(
        server.url + "/openai/deployments/gpt-4o-mini/chat/completions",
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
        timeout=5,
    )

    assert (legacy.status_code, legacy.json()) == (404, {"error": {"code": "404", "message": "Resource not found"}})
    assert ask(server).status_code == 200
    assert server.refused == {"path": 1}


def test_mistral_streams_without_stream_options_and_sends_no_usage(serve):
    server = serve("mistral")

    chunks = events(ask(server, stream=True))

    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert not any("usage" in c for c in chunks)


# --- context


def long_prompt(tokens: int = 6000) -> str:
    """A judge prompt of about `tokens`: a first claim with a long passage, then a short one."""
    long_passage = " ".join(["The Eiffel Tower stands in Paris, France, on the Champ de Mars."] * (tokens // 16))
    return (
        f"C1: The Eiffel Tower is in Paris.\nE1\n{long_passage}\n\n"
        "C2: Bananas are yellow.\nE2\nBananas are yellow and grow in warm places."
    )


def test_ollama_cuts_a_long_prompt_from_the_front_without_a_word(serve):
    plain, server = serve(None), serve("ollama-qwen3")

    full = ask(plain, user=long_prompt()).json()
    cut = ask(server, user=long_prompt()).json()

    assert full["usage"]["prompt_tokens"] > 5000
    assert 4000 <= cut["usage"]["prompt_tokens"] <= PROFILES["ollama-qwen3"].context_tokens
    assert abs(server.prompt_tokens_cut - (full["usage"]["prompt_tokens"] - cut["usage"]["prompt_tokens"])) <= 1
    assert "E1:" in full["choices"][0]["message"]["content"]
    assert "E1:" not in cut["choices"][0]["message"]["content"]  # its passage was cut off: no verdict
    assert "E2:" in cut["choices"][0]["message"]["content"] and not server.refused


def test_ollama_answers_all_the_same_when_what_it_was_asked_about_was_cut(serve):
    server = serve("ollama-qwen3")

    filler = " ".join(["Paris has many museums and parks."] * 700)
    reply = ask(server, system=TRAIL_SYSTEM, user=TRAIL_USER.replace("Text:\n", f"Text:\n{filler}\n"))

    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"] == LOST_TEXT


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("llamacpp", "the request exceeds the available context size, try increasing it"),
        (
            "vllm",
            "This model's maximum context length is 8192 tokens. However, you requested 10040 tokens "
            "(9040 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
        ),
    ],
)
def test_a_local_server_refuses_a_prompt_over_its_context(serve, name, message):
    server = serve(name)

    response = ask(server, user=long_prompt(9000), max_tokens=1000)

    assert response.status_code == 400
    assert message in json.dumps(response.json())
    assert server.refused == {"context": 1}


def test_local_servers_tell_their_context(serve):
    llamacpp, vllm = serve("llamacpp"), serve("vllm")

    props = requests.get(llamacpp.url + "/props", timeout=5).json()
    models = requests.get(vllm.url + "/v1/models", timeout=5).json()

    assert props == {"default_generation_settings": {"n_ctx": 8192}}
    assert models["data"][0]["max_model_len"] == 8192


# --- thinking


@pytest.mark.parametrize("name", THINKING_ALOUD)
def test_the_thinking_goes_where_its_server_puts_it(serve, name):
    server = serve(name)

    message = ask(server).json()["choices"][0]["message"]

    place = PROFILES[name].thinking
    if place in FIELDS:
        assert "<think>" not in message["content"] and "Wait, let me re-check" in message[place]
    elif place == INLINE:
        assert message["content"].startswith("<think>\n") and "\n</think>\n\n" in message["content"]
    else:
        assert place == CLOSED
        assert "<think>" not in message["content"] and "\n</think>\n\n" in message["content"]


@pytest.mark.parametrize("name", THINKING_ALOUD)
def test_the_draft_has_other_verdicts_and_a_naive_reader_takes_it(serve, name):
    server = serve(name)

    message = ask(server, user=JUDGE_JSON).json()
    thought, answer = thought_and_answer(name, message["choices"][0]["message"])

    final = [j["verdict"] for j in first_json_object(answer)["judgements"]]
    drafted = [j["verdict"] for j in first_json_object(thought)["judgements"]]
    assert final == ["supported", "not_supported", "irrelevant"]
    assert drafted == ["not_supported", "supported", "supported"]
    assert thought.strip().startswith("Okay, the task: " + JUDGE_SYSTEM)
    if PROFILES[name].thinking in (INLINE, CLOSED):
        assert first_json_object(message["choices"][0]["message"]["content"])["judgements"][0]["verdict"] == (
            "not_supported"
        )


@pytest.mark.parametrize("name", ["deepseek-reasoner", "llamacpp-raw", "ollama-deepseek-r1"])
def test_a_drafted_selection_names_other_sentences(serve, name):
    server = serve(name)

    message = ask(server, system=TRAIL_SYSTEM, user=TRAIL_USER).json()["choices"][0]["message"]
    thought, answer = thought_and_answer(name, message)

    assert first_json_object(answer)["sentence_ids"] == ["S2"]
    assert first_json_object(thought)["sentence_ids"] == ["S3"]


@pytest.mark.parametrize("name", THINKING_ALOUD)
def test_a_stream_brings_the_thinking_first(serve, name):
    server = serve(name)

    chunks = events(ask(server, stream=True, stream_options={"include_usage": True}))

    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    place = PROFILES[name].thinking
    content = "".join(d.get("content") or "" for d in deltas)
    if place in FIELDS:
        thinking_at = [n for n, d in enumerate(deltas) if d.get(place)]
        content_at = [n for n, d in enumerate(deltas) if d.get("content")]
        assert thinking_at and max(thinking_at) < min(content_at)
        assert "".join(d.get(place, "") for d in deltas).endswith("here is the corrected answer.")
    else:
        assert strip_thinking(content)[1].strip().startswith("Okay, the task")
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    assert [c["choices"][0].get("finish_reason") for c in chunks if c["choices"]][-1] == "stop"


@pytest.mark.parametrize("name", THINKING_ALOUD)
def test_a_stream_without_include_usage_ends_without_usage(serve, name):
    server = serve(name)

    chunks = events(ask(server, stream=True))

    assert not any("usage" in c for c in chunks)


def test_hidden_thinking_is_counted_and_grows_with_the_effort(serve):
    server = serve("openai-gpt-5-mini")

    counted = {}
    for effort in ("minimal", "low", "medium", "high"):
        usage = ask(server, reasoning_effort=effort).json()["usage"]
        counted[effort] = usage["completion_tokens_details"]["reasoning_tokens"]
        assert usage["completion_tokens"] > counted[effort]
    default = ask(server).json()["usage"]["completion_tokens_details"]["reasoning_tokens"]

    assert counted["minimal"] <= 20 < counted["low"] < counted["medium"] < counted["high"]
    assert default == counted["medium"]
    assert server.reasoning_tokens == sum(counted.values()) + default


def test_hidden_thinking_counts_against_the_cap(serve):
    server = serve("openai-gpt-5-mini")

    empty = ask(server, max_completion_tokens=300).json()
    short = ask(server, max_completion_tokens=620).json()
    whole = ask(server, reasoning_effort="minimal", max_completion_tokens=300).json()

    assert empty["choices"][0]["finish_reason"] == "length" and empty["choices"][0]["message"]["content"] == ""
    assert empty["usage"]["completion_tokens"] == 300
    assert short["choices"][0]["finish_reason"] == "length"
    assert 0 < len(short["choices"][0]["message"]["content"]) <= 80
    assert whole["choices"][0]["finish_reason"] == "stop"


def test_visible_thinking_counts_against_the_cap(serve):
    server = serve("llamacpp-raw")

    choice = ask(server, max_tokens=40).json()["choices"][0]

    assert choice["finish_reason"] == "length"
    assert choice["message"]["content"].startswith("<think>") and "</think>" not in choice["message"]["content"]


@pytest.mark.parametrize("name", ["deepseek-reasoner", "openrouter", "gemini"])
def test_usage_tells_the_reasoning_tokens(serve, name):
    server = serve(name)

    usage = ask(server).json()["usage"]

    assert usage["completion_tokens_details"]["reasoning_tokens"] > 0
    assert server.reasoning_tokens == usage["completion_tokens_details"]["reasoning_tokens"]


# --- a small model that does not stop


def test_a_runaway_model_writes_until_the_cap(serve):
    server = serve("llamacpp-runaway")

    capped = ask(server, max_tokens=200).json()
    uncapped = ask(server).json()

    assert capped["choices"][0]["finish_reason"] == "length" and capped["usage"]["completion_tokens"] == 200
    assert capped["choices"][0]["message"]["content"].count("I hope this helps") > 3
    assert uncapped["choices"][0]["finish_reason"] == "length"
    assert uncapped["usage"]["completion_tokens"] == RUNAWAY_TOKENS


def test_a_runaway_model_takes_the_time_of_what_it_writes(serve):
    server = serve("llamacpp-runaway", tokens_per_s=20_000)

    started = time.monotonic()
    ask(server, max_tokens=100)
    short = time.monotonic() - started
    started = time.monotonic()
    chunks = events(ask(server, stream=True))
    long = time.monotonic() - started

    assert short < 0.1 < RUNAWAY_TOKENS / 20_000 <= long
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
