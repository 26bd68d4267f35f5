"""What a model's server takes, found with one small request per capability (`manage.py
check_llm`): reachable, the model known, temperature, output formats, streaming usage, logprobs,
the reasoning effort and where thinking goes, the context size, first-token latency and speed.
Each request goes through the client, so what a refusal teaches is kept as the runs then use it
(llm_capabilities)."""

import time
from dataclasses import dataclass, field, replace
from typing import Any

import openai
import requests

from verification.clients.llm import LLMClient
from verification.pipeline.types import StepError

_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
# Where servers report their context: vLLM's model list (max_model_len), OpenRouter's
# (context_length), Groq's (context_window), LM Studio's (max_context_length), llama.cpp's /props.
_CONTEXT_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


@dataclass
class ModelReport:
    model: str
    base_url: str
    problem: str = ""  # why runs cannot use the model ("" when they can)
    rows: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problem


def check_model(client: LLMClient, *, api_key: str) -> ModelReport:
    report = ModelReport(client.model, client.base_url)
    listed, context, problem = _model_list(client, api_key)
    if problem:
        report.problem = problem
        report.rows.append(("reachable", problem))
        return report
    report.rows.append(("reachable", "yes"))
    if listed and client.model not in listed:
        report.problem = (
            f"the server at {client.base_url} does not list the model {client.model} "
            f"(it lists {', '.join(sorted(listed)[:8])}): check LLM_MODELS"
        )
        report.rows.append(("model known", report.problem))
        return report
    report.rows.append(("model known", "yes" if listed else "not listed (the server keeps no list)"))
    context = context or _llama_cpp_context(client.base_url, api_key)
    if context and not client.context_tokens:
        client.remember(replace(client.capabilities, context_tokens=context))
    try:
        first_token_s = _timed(lambda: _ask(client, "Answer with the word OK.", max_tokens=8))
        speed = _tokens_per_second(client)
        _ask(client, "Answer with the word OK.", schema=_SCHEMA, max_tokens=16)
        streamed = _ask(client, "Count from 1 to 5, a number a line.", max_tokens=32, stream=True)
        logprobs = _ask(client, "Answer with the word OK.", max_tokens=8, logprobs=1)
    except StepError as error:
        report.problem = str(error)
        report.rows.append(("answers", report.problem))
        return report
    report.rows += _capability_rows(client, streamed, logprobs)
    report.rows.append(("first answer", f"{first_token_s:.2f} s (a one-word answer)"))
    report.rows.append(("speed", f"{speed:.0f} tokens/s" if speed else "not measured (no usage reported)"))
    return report


def _capability_rows(client: LLMClient, streamed: Any, logprobs: Any) -> list[tuple[str, str]]:
    known = client.capabilities
    thinking = {
        "": "not seen",
        "none": "does not think aloud",
        "hidden": "hidden (reasoning tokens counted)",
        "field": "in a field of its own (reasoning_content / reasoning), never read",
        "inline": "inside the answer (<think>…</think>), removed",
        "closed": "inside the answer, its opening tag in the prompt (…</think>), removed",
    }[known.thinking]
    return [
        ("temperature 0", "sent" if known.temperature else "refused: the model's default"),
        ("output format", known.output_format.replace("_", " ")),
        ("streaming", "yes" if known.stream else "refused: answers asked whole"),
        ("streaming usage", "yes" if known.stream_usage and known.stream else "no"),
        ("logprobs", "yes" if logprobs is not None else "no (quick mode searches every claim)"),
        ("reasoning effort", known.reasoning_effort or "not sent"),
        ("thinking", thinking),
        ("token cap", known.token_cap or "refused: none sent"),
        ("context", f"{known.context_tokens:,} tokens" if known.context_tokens else "not reported: LLM_CONTEXT_TOKENS"),
        ("learned", "; ".join(known.lessons) or "nothing refused"),
    ]


def _ask(client: LLMClient, user: str, *, schema=None, max_tokens: int, stream=False, logprobs=0) -> Any:
    streamed: dict[str, Any] = {"on_text": lambda *_: None} if stream else {}
    if logprobs:
        return client.complete(
            system="You are a terse assistant.",
            user=user,
            schema_name="check",
            schema=schema,
            parse=lambda answer, tokens: tokens,
            max_tokens=max_tokens,
            logprobs=logprobs,
            done=lambda answer: bool(answer.strip()),
            **streamed,
        )
    return client.complete(
        system="You are a terse assistant.",
        user=user,
        schema_name="check",
        schema=schema,
        parse=lambda answer: answer,
        max_tokens=max_tokens,
        done=lambda answer: bool(answer.strip()),
        **streamed,
    )


def _timed(call) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


def _tokens_per_second(client: LLMClient) -> float:
    before = client.usage.completion_tokens
    seconds = _timed(lambda: _ask(client, "Write the numbers from 1 to 40, separated by spaces.", max_tokens=160))
    written = client.usage.completion_tokens - before
    return written / seconds if written and seconds else 0.0


def _model_list(client: LLMClient, api_key: str) -> tuple[set[str], int, str]:
    """(the model ids the server lists, the context it reports for ours, a problem in words)."""
    try:
        page = client.openai.models.list()
    except openai.AuthenticationError:
        return set(), 0, f"the server at {client.base_url} refused the API key (HTTP 401): check OPENAI_API_KEY"
    except openai.NotFoundError:
        return set(), 0, ""  # a server without a model list (Azure's deployments, some proxies)
    except openai.APIConnectionError:
        return set(), 0, f"cannot reach the server at {client.base_url}: check OPENAI_BASE_URL / LLM_MODELS"
    except openai.APIError as error:
        return set(), 0, f"the server at {client.base_url} answered {error} to the model list"
    entries = list(getattr(page, "data", []) or [])
    # Gemini lists "models/gemini-2.5-flash" for the model asked for as "gemini-2.5-flash".
    ids = {str(getattr(entry, "id", "")).removeprefix("models/") for entry in entries} - {""}
    ours = next((e for e in entries if str(getattr(e, "id", "")).removeprefix("models/") == client.model), None)
    extra = (getattr(ours, "model_extra", None) or {}) if ours is not None else {}
    context = next((int(extra[name]) for name in _CONTEXT_FIELDS if isinstance(extra.get(name), int)), 0)
    return ids, context, ""


def _llama_cpp_context(base_url: str, api_key: str) -> int:
    """llama.cpp's server reports its context (n_ctx) at /props, beside /v1."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        answer = requests.get(f"{root}/props", headers={"Authorization": f"Bearer {api_key}"}, timeout=5)
        settings = answer.json().get("default_generation_settings", {}) if answer.ok else {}
    except (requests.RequestException, ValueError, AttributeError):
        return 0
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return n_ctx if isinstance(n_ctx, int) else 0


def table(report: ModelReport) -> str:
    width = max(len(name) for name, _ in report.rows) if report.rows else 0
    lines = [f"{report.model} at {report.base_url}"]
    lines += [f"  {name.ljust(width)}  {value}" for name, value in report.rows]
    lines.append(f"  => {'usable' if report.ok else 'NOT usable: ' + report.problem}")
    return "\n".join(lines)
