"""A chat-completions request built from what the server takes (llm_capabilities), and a
server's refusal told in words a person can act on."""

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai

from verification.clients.llm_capabilities import JSON_OBJECT, JSON_SCHEMA, Capabilities, Refusal

# Said in the prompt where the server does not enforce the schema. It holds the word "JSON",
# which DeepSeek's json_object mode requires of the prompt.
JSON_INSTRUCTION = "Answer with one JSON object only, matching this JSON schema:"
# The optional parts of a request, which a server may refuse and factsite can do without.
OPTIONAL = (
    "temperature",
    "reasoning_effort",
    "response_format",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "stream_options",
)


@dataclass(frozen=True)
class Ask:
    """One question to the model, before the server's capabilities shape it into a request.
    `max_tokens`: what its answer may hold (0: no cap); `reasoning_tokens`: what a model that
    thinks may spend on it besides."""

    system: str
    user: str
    schema_name: str = ""
    schema: dict | None = None
    logprobs: int = 0
    max_tokens: int = 0
    reasoning_tokens: int = 0
    stream: bool = False
    done: Callable[[str], bool] | None = None


def build_request(model: str, capabilities: Capabilities, ask: Ask) -> dict[str, Any]:
    user = ask.user
    body: dict[str, Any] = {"model": model}
    if capabilities.temperature:
        body["temperature"] = 0
    if capabilities.reasoning_effort:
        body["reasoning_effort"] = capabilities.reasoning_effort
    if ask.schema is not None:
        if capabilities.output_format == JSON_SCHEMA:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": ask.schema_name, "schema": ask.schema, "strict": True},
            }
        else:
            user = f"{user}\n\n{JSON_INSTRUCTION}\n{json.dumps(ask.schema)}"
            if capabilities.output_format == JSON_OBJECT:
                body["response_format"] = {"type": "json_object"}
    if ask.logprobs and capabilities.logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = ask.logprobs
    if ask.max_tokens and capabilities.token_cap:
        body[capabilities.token_cap] = token_cap(capabilities, ask)
    if ask.stream and capabilities.stream:
        body["stream"] = True
        if capabilities.stream_usage:
            body["stream_options"] = {"include_usage": True}
    body["messages"] = [{"role": "system", "content": ask.system}, {"role": "user", "content": user}]
    return body


def token_cap(capabilities: Capabilities, ask: Ask) -> int:
    """The answer's cap, and room to think for a model that thinks (its reasoning tokens count
    against the same cap at OpenAI, and in the context at a local server)."""
    return ask.max_tokens + (ask.reasoning_tokens if capabilities.thinks else 0)


def optional_parts(body: dict[str, Any]) -> set[str]:
    return {name for name in OPTIONAL if name in body} | ({"stream"} if body.get("stream") else set())


def describe_refusal(refusal: Refusal, model: str, base_url: str) -> str:
    """A refusal factsite could not get round: the server's own words and the parameter it named."""
    said = f": “{refusal.message}”" if refusal.message else ""
    named = f" It named the parameter {refusal.parameter}." if refusal.parameter else ""
    return f"the LLM server at {base_url} refused the request for {model} (HTTP {refusal.status}){said}.{named}"


def describe_context_exceeded(refusal: Refusal, model: str, base_url: str, context_tokens: int) -> str:
    size = f" (it holds {context_tokens:,} tokens)" if context_tokens else ""
    return (
        f"the prompt is longer than the context of the model {model} at {base_url}{size}: “{refusal.message}”. "
        "Start the server with a larger context, or set LLM_CONTEXT_TOKENS to its size so that factsite "
        "sends smaller prompts."
    )


def describe_silent_cut(model: str, base_url: str, sent: int, read: int) -> str:
    return (
        f"the server at {base_url} read only {read:,} of the about {sent:,} prompt tokens sent to {model}: it cut "
        "the prompt without an error (Ollama keeps only the end of a prompt longer than its context, num_ctx / "
        "OLLAMA_CONTEXT_LENGTH, 4,096 tokens by default), so its answer would be about what was left. Give the "
        "server a larger context and set LLM_CONTEXT_TOKENS to it."
    )


def describe_cut_answer(model: str, cap: int, thinking: bool) -> str:
    if thinking:
        return (
            f"the model {model} spent its whole budget of {cap:,} tokens thinking and wrote no answer: set "
            "LLM_REASONING_EFFORT lower, or LLM_REASONING_TOKENS higher"
        )
    return f"the answer of {model} was cut at its cap of {cap:,} tokens before it was complete"


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
