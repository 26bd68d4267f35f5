"""What a server takes (llm_capabilities) and the answer without its thinking (llm_answers):
pure functions, table-driven, with the refusal bodies the servers send (../shared/PROVIDERS.md)."""

import json

import pytest

from verification.clients.llm_answers import ThinkingFilter, strip_thinking
from verification.clients.llm_capabilities import (
    JSON_OBJECT,
    TEXT,
    Capabilities,
    context_in_message,
    known_defaults,
    learn,
    read_refusal,
)
from verification.clients.llm_requests import Ask, build_request

OPENAI_TEMPERATURE = {
    "error": {
        "message": "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) "
        "value is supported.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "unsupported_value",
    }
}
MISTRAL_STREAM_OPTIONS = {
    "object": "error",
    "message": {
        "detail": [
            {
                "type": "extra_forbidden",
                "loc": ["body", "stream_options", "include_usage"],
                "msg": "Extra inputs are not permitted",
                "input": True,
            }
        ]
    },
    "type": "invalid_request_error",
    "param": None,
    "code": None,
}
GEMINI_LOGPROBS = [
    {
        "error": {
            "code": 400,
            "message": "Logprobs is not enabled for models/gemini-2.5-flash",
            "status": "INVALID_ARGUMENT",
        }
    }
]
DEEPSEEK_JSON_SCHEMA = {
    "error": {
        "message": "This response_format type is unavailable now",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
}
LMSTUDIO_JSON_OBJECT = {"error": "'response_format.type' must be 'json_schema' or 'text'"}
GPT51_MINIMAL = {
    "error": {
        "message": "Unsupported value: 'reasoning_effort' does not support 'minimal' with this model. Supported "
        "values are: 'none', 'low', 'medium', and 'high'.",
        "type": "invalid_request_error",
        "param": "reasoning_effort",
        "code": "unsupported_value",
    }
}
OLLAMA_THINK = {"error": {"message": 'think value "none" is not supported for this model', "type": "api_error"}}


@pytest.mark.parametrize(
    ("status", "body", "parameter", "said"),
    [
        (400, OPENAI_TEMPERATURE, "temperature", "'temperature' does not support 0"),
        (422, MISTRAL_STREAM_OPTIONS, "stream_options", "stream_options.include_usage: Extra inputs"),
        (400, GEMINI_LOGPROBS, "logprobs", "Logprobs is not enabled"),
        (400, DEEPSEEK_JSON_SCHEMA, "response_format", "This response_format type is unavailable now"),
        (400, LMSTUDIO_JSON_OBJECT, "response_format", "must be 'json_schema' or 'text'"),
        (400, GPT51_MINIMAL, "reasoning_effort", "does not support 'minimal'"),
        (400, OLLAMA_THINK, "reasoning_effort", "think value"),
        (400, {"error": {"message": "scripted 400"}}, "", "scripted 400"),
    ],
    ids=["openai", "mistral", "gemini", "deepseek", "lmstudio", "gpt-5.1", "ollama", "unnamed"],
)
def test_it_reads_the_parameter_and_the_message_of_each_servers_refusal(status, body, parameter, said):
    refusal = read_refusal(status, json.dumps(body).encode())

    assert refusal.status == status and refusal.parameter == parameter
    assert said in refusal.message


def test_a_refusal_that_is_not_json_keeps_its_text():
    refusal = read_refusal(400, b"Bad Request: the model is loading")

    assert refusal.message == "Bad Request: the model is loading" and refusal.parameter == ""


def request_for(capabilities: Capabilities, **ask) -> dict:
    return build_request("m", capabilities, Ask(system="s", user="u", **ask))


@pytest.mark.parametrize(
    ("body", "ask", "changed"),
    [
        (OPENAI_TEMPERATURE, {}, {"temperature": False}),
        (MISTRAL_STREAM_OPTIONS, {"stream": True}, {"stream_usage": False}),
        (GEMINI_LOGPROBS, {"logprobs": 2}, {"logprobs": False}),
        (DEEPSEEK_JSON_SCHEMA, {"schema": {"type": "object"}}, {"output_format": JSON_OBJECT}),
        (GPT51_MINIMAL, {}, {"reasoning_effort": "none"}),
        (OLLAMA_THINK, {}, {"reasoning_effort": ""}),
    ],
    ids=["temperature", "stream usage", "logprobs", "json_schema", "lowest effort offered", "no effort"],
)
def test_a_refusal_drops_what_it_named_and_says_what_factsite_did(body, ask, changed):
    before = Capabilities(reasoning_effort="minimal" if body is GPT51_MINIMAL else "none")
    request = request_for(before, max_tokens=10, **ask)

    after, lesson = learn(before, read_refusal(400, json.dumps(body)), request)

    assert {name: getattr(after, name) for name in changed} == changed and lesson
    assert after.lessons == (lesson,)
    assert all(getattr(after, name) == getattr(before, name) for name in ("token_cap", "stream") if name not in changed)


def test_the_token_cap_moves_to_the_other_name_then_goes():
    refused = {
        "error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model.",
            "param": "max_tokens",
        }
    }
    capabilities = Capabilities(token_cap="max_tokens")

    moved, _ = learn(capabilities, read_refusal(400, json.dumps(refused)), request_for(capabilities, max_tokens=5))
    assert moved.token_cap == "max_completion_tokens"
    refused_too = {
        "error": {"message": "max_completion_tokens: Extra inputs are not permitted", "param": "max_completion_tokens"}
    }
    gone, _ = learn(moved, read_refusal(422, json.dumps(refused_too)), request_for(moved, max_tokens=5))

    assert gone.token_cap == "" and "max_tokens" not in request_for(gone, max_tokens=5)
    assert "max_completion_tokens" not in request_for(gone, max_tokens=5)


def test_output_formats_step_down_to_plain_text_where_json_object_is_refused_too():
    capabilities = Capabilities(output_format=JSON_OBJECT)

    after, _ = learn(capabilities, read_refusal(400, LMSTUDIO_JSON_OBJECT), request_for(capabilities, schema={}))

    assert after.output_format == TEXT
    plain = request_for(after, schema={"type": "object"})
    assert "response_format" not in plain and "JSON schema" in plain["messages"][1]["content"]


def test_a_refusal_that_names_nothing_the_request_carries_teaches_nothing():
    capabilities = Capabilities(temperature=False)

    after, lesson = learn(capabilities, read_refusal(400, OPENAI_TEMPERATURE), request_for(capabilities))

    assert (after, lesson) == (capabilities, "")


@pytest.mark.parametrize(
    ("model", "temperature", "logprobs", "effort"),
    [
        ("gpt-5-mini", False, False, "minimal"),
        ("openai/gpt-5-nano", False, False, "minimal"),
        ("o4-mini", False, False, "low"),
        ("gpt-5.1", True, True, "none"),
        ("gpt-4o-mini", True, True, ""),
        ("deepseek-reasoner", True, False, ""),
        ("gemini-2.5-flash", True, False, "low"),
        ("claude-sonnet-4-5", True, False, ""),
        ("qwen3:8b", True, True, "none"),
    ],
)
def test_known_families_start_from_what_their_providers_document(model, temperature, logprobs, effort):
    known = known_defaults(model)

    assert (known.temperature, known.logprobs, known.reasoning_effort) == (temperature, logprobs, effort)


def test_a_set_effort_is_sent_and_temperature_follows_it_on_gpt_5_1():
    assert known_defaults("gpt-5.1", "low").reasoning_effort == "low"
    assert known_defaults("gpt-5.1", "low").temperature is False
    assert known_defaults("gpt-5-mini", "none").reasoning_effort == "minimal"  # below what it takes
    assert known_defaults("gpt-5-mini", "off").reasoning_effort == ""


def test_claude_is_asked_in_plain_text_since_its_endpoint_ignores_response_format():
    body = build_request(
        "claude-sonnet-4-5", known_defaults("claude-sonnet-4-5"), Ask("s", "u", "x", {"type": "object"})
    )

    assert "response_format" not in body and "JSON" in body["messages"][1]["content"]


@pytest.mark.parametrize(
    ("message", "size"),
    [
        ("This model's maximum context length is 8192 tokens. However, you requested 9000 tokens", 8192),
        ("the request exceeds the available context size, try increasing it", 0),
        ("request (5000 tokens) exceeds the available context size (4096 tokens)", 4096),
    ],
)
def test_a_context_size_is_read_from_a_refusal(message, size):
    assert context_in_message(message) == size


# --- the answer, never the thinking

DRAFT = "The user wants verdicts.\nE1: it says so | supports\nWait, let me re-check."
ANSWER = "E1: The passage says the opposite. | refutes\nOthers: irrelevant"


@pytest.mark.parametrize(
    "content",
    [
        f"<think>{DRAFT}</think>\n\n{ANSWER}",
        f"<think>\n{DRAFT}\n</think>{ANSWER}",
        f"{DRAFT}\n</think>\n\n{ANSWER}",  # the chat template opened the block in the prompt
        f"<THINKING>{DRAFT}</THINKING>\n{ANSWER}",
    ],
    ids=["closed", "closed, no blank", "only closed", "other tag"],
)
def test_a_thinking_block_is_removed_from_an_answer(content):
    answer, thought = strip_thinking(content)

    assert answer == ANSWER and "supports" in thought


def test_a_thinking_block_never_closed_leaves_no_answer():
    answer, thought = strip_thinking(f"<think>{DRAFT}")

    assert answer == "" and DRAFT in thought


def test_an_answer_without_thinking_is_left_alone():
    assert strip_thinking("E1: a < b holds | supports") == ("E1: a < b holds | supports", "")


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
@pytest.mark.parametrize(
    ("content", "only_closed"),
    [
        (f"<think>{DRAFT}</think>\n\n{ANSWER}", False),
        (f"  <think>{DRAFT}", False),
        (f"{DRAFT}</think>\n{ANSWER}", True),
    ],
    ids=["closed", "never closed", "only closed"],
)
def test_a_streams_thinking_is_removed_piece_by_piece(size, content, only_closed):
    cleaner = ThinkingFilter(only_closed=only_closed)

    out = "".join(cleaner.feed(content[i : i + size]) for i in range(0, len(content), size)) + cleaner.end()

    assert out.strip() == (ANSWER if "</think>" in content else "")
    assert "supports" in cleaner.thought


def test_a_stream_without_thinking_is_handed_on_as_it_comes():
    cleaner = ThinkingFilter()

    assert cleaner.feed("S1:\n- The tower") == "S1:\n- The tower"
    assert cleaner.feed(" is in Paris. a <th") == " is in Paris. a "  # "<th" may start a tag
    assert cleaner.feed("e> c\n") == "<the> c\n"
