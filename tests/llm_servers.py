"""Real model servers as the fake model imitates them: `FakeLLM(profile=PROFILES["mistral"])`.

A profile is data read from ../shared/PROVIDERS.md: what a server takes, what it refuses and in
which words, what it drops without a word, where its thinking goes, and what it does with a
prompt or an answer too long for it. The functions below apply any profile, so another server is
one entry in PROFILES. Where PROVIDERS.md quotes no body, the shape here is marked "assumed".

Tokens are counted as len(text) // 4, as the rest of the fake counts them."""

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

# Where a server puts its thinking: nowhere (it does not think), hidden (only counted in
# usage), a field of its own, inside `content` (<think>…</think>), or inside `content` with only
# the closing tag (the chat template opened the block in the prompt).
NONE, HIDDEN, INLINE, CLOSED = "", "hidden", "inline", "closed"
REASONING_CONTENT, REASONING = "reasoning_content", "reasoning"
FIELDS = (REASONING_CONTENT, REASONING)

# Error bodies' shapes: OpenAI's {"error": {...}}, Gemini's list, LM Studio's plain string,
# vLLM's flat object, llama.cpp's, Anthropic's.
OPENAI, GEMINI, LMSTUDIO, VLLM, LLAMACPP, ANTHROPIC = "openai", "gemini", "lmstudio", "vllm", "llamacpp", "anthropic"

# What a server that never stops on its own writes after its answer, until a cap or this many tokens.
FILLER = "\n\nI hope this helps. Let me know if you have any other questions or need further clarification."
RUNAWAY_TOKENS = 4096
# What a model answers when what it was asked about was cut out of its prompt.
LOST_TEXT = "I cannot find the text you refer to. Could you share it again?"


@dataclass(frozen=True)
class Refusal:
    """A 400 for `param` (dotted for a member: "response_format.type") when a request sends it
    (not None, not false) with a value outside `accepted` (any value when empty). `message`
    may name the value as {value}; `named`: the body's `param` names the top-level field (DeepSeek's
    is null)."""

    param: str
    message: str
    accepted: tuple = ()
    code: str = "unsupported_parameter"
    named: bool = True
    # Taken while the reasoning effort is none (OpenAI's gpt-5.1 and later: the sampling parameters).
    taken_at_effort_none: bool = False


@dataclass(frozen=True)
class ServerProfile:
    # The model the server serves, as /v1/models lists it (`listed_as` when it lists another id).
    model: str
    listed_as: str = ""
    errors: str = OPENAI
    refusals: tuple[Refusal, ...] = ()
    # Mistral: any field not named here gets a 422 (empty: any field is taken). "x." also
    # checks the members of the object x against "x.member".
    known_fields: frozenset[str] = frozenset()
    # Dropped without a word before the model reads the request.
    ignored: frozenset[str] = frozenset()
    # DeepSeek: json_object refused unless the word "json" is in the messages.
    json_word: bool = False
    # Azure: a POST anywhere else gets 404 "Resource not found".
    path_prefix: str = ""
    # The effort when a request names none (OpenAI gpt-5: medium, gpt-5.1: none).
    default_effort: str = ""
    thinking: str = NONE
    # Hidden thinking's tokens by effort (counted in usage and against the cap).
    hidden_tokens: dict[str, int] = field(default_factory=dict, hash=False)
    # Visible thinking also counted in usage.completion_tokens_details.reasoning_tokens.
    usage_reasoning: bool = False
    # The prompt's room (0: any length): a longer prompt is cut from the front without an error
    # (Ollama's num_ctx, "cut") or refused with `context_message` ("refuse").
    context_tokens: int = 0
    over_context: str = ""
    context_message: str = ""
    # The cap asked for counts with the prompt against the context (vLLM), or not (llama.cpp).
    context_counts_cap: bool = False
    # Never stops on its own: writes FILLER after its answer until the cap (or RUNAWAY_TOKENS).
    runaway: bool = False
    # More keys of the model list's entry (vLLM's max_model_len).
    model_entry: dict[str, Any] = field(default_factory=dict, hash=False)
    # llama.cpp's GET /props, which tells the context size.
    props: bool = False


@dataclass(frozen=True)
class Refused:
    status: int
    param: str  # what the refusal names (a parameter, "path" or "context"): FakeLLM.refused's key
    body: Any


@dataclass
class Reply:
    """What the server writes for an answer: its content, thinking in a field of its own, why it
    stopped and its usage; `hidden_tokens` of thinking nobody sees (they take time all the same)."""

    content: str
    usage: dict
    reasoning: str = ""
    reasoning_field: str = ""
    finish_reason: str = "stop"
    hidden_tokens: int = 0

    @property
    def reasoning_tokens(self) -> int:
        return (self.usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)


# --- the servers

_PARAMETER = "Unsupported parameter: '{param}' is not supported with this model."
_TEMPERATURE = (
    "Unsupported value: 'temperature' does not support {value} with this model."
    " Only the default (1) value is supported."
)
_EFFORT = (
    "Unsupported value: 'reasoning_effort' does not support '{value}' with this model. Supported values are: {names}."
)
_JSON_WORD = "Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'."


def _unsupported(param: str, *, hint: str = "", at_none: bool = False) -> Refusal:
    message = _PARAMETER.format(param=param) + (f" {hint}" if hint else "")
    return Refusal(param, message, taken_at_effort_none=at_none)


def _efforts(*names: str) -> Refusal:
    quoted = [f"'{name}'" for name in names]
    listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    return Refusal("reasoning_effort", _EFFORT.replace("{names}", listed), accepted=names, code="unsupported_value")


def _openai_reasoning(*efforts: str, at_none: bool = False) -> tuple[Refusal, ...]:
    """OpenAI's reasoning models: only the default temperature, no logprobs nor top_p nor
    penalties (at `at_none`: all taken while the effort is none), the cap under its new name."""
    sampling = (
        Refusal("temperature", _TEMPERATURE, accepted=(1,), code="unsupported_value", taken_at_effort_none=at_none),
        *(
            _unsupported(p, at_none=at_none)
            for p in ("logprobs", "top_logprobs", "top_p", "frequency_penalty", "presence_penalty")
        ),
    )
    return (
        _efforts(*efforts),
        _unsupported("max_tokens", hint="Use 'max_completion_tokens' instead."),
        *sampling,
    )


_GPT5_MINI = ServerProfile(
    model="gpt-5-mini",
    refusals=_openai_reasoning("minimal", "low", "medium", "high"),
    default_effort="medium",
    thinking=HIDDEN,
    hidden_tokens={"minimal": 12, "low": 200, "medium": 600, "high": 1500},
)
_DEEPSEEK_FORMATS = Refusal(
    "response_format.type",
    "This response_format type is unavailable now",
    accepted=("json_object", "text"),
    code="invalid_request_error",
    named=False,
)
_NOT_THERE = frozenset({"logprobs", "top_logprobs"})
# What Mistral's chat completions take: anything else is "Extra inputs are not permitted".
_MISTRAL_FIELDS = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "top_p",
        "max_tokens",
        "stream",
        "stop",
        "random_seed",
        "response_format",
        "tools",
        "tool_choice",
        "n",
        "safe_prompt",
        "prediction",
        "parallel_tool_calls",
        "prompt_mode",
        # Known as an object whose members are checked: its include_usage is refused.
        "stream_options",
        "stream_options.",
    }
)
_OLLAMA = ServerProfile(
    model="qwen3:8b",
    thinking=REASONING,
    ignored=_NOT_THERE,
    context_tokens=4096,
    over_context="cut",
)
_LLAMACPP = ServerProfile(
    model="qwen3-8b-q4_k_m.gguf",
    thinking=REASONING_CONTENT,
    context_tokens=8192,
    over_context="refuse",
    errors=LLAMACPP,
    context_message="the request exceeds the available context size, try increasing it",
    props=True,
)
_VLLM = ServerProfile(
    model="Qwen/Qwen3-8B",
    thinking=REASONING,
    context_tokens=8192,
    over_context="refuse",
    errors=VLLM,
    context_counts_cap=True,
    context_message=(
        "This model's maximum context length is {n_ctx} tokens. However, you requested {total} tokens "
        "({prompt} in the messages, {completion} in the completion). Please reduce the length of the "
        "messages or completion."
    ),
    model_entry={"max_model_len": 8192},
)

PROFILES: dict[str, ServerProfile] = {
    "openai-gpt-4o-mini": ServerProfile(model="gpt-4o-mini"),
    "openai-gpt-5-mini": _GPT5_MINI,
    "openai-o4-mini": ServerProfile(
        model="o4-mini",
        refusals=_openai_reasoning("low", "medium", "high"),
        default_effort="medium",
        thinking=HIDDEN,
        hidden_tokens={"low": 250, "medium": 700, "high": 1800},
    ),
    "openai-gpt-5.1": ServerProfile(
        model="gpt-5.1",
        refusals=_openai_reasoning("none", "low", "medium", "high", at_none=True),
        default_effort="none",
        thinking=HIDDEN,
        hidden_tokens={"none": 0, "low": 200, "medium": 600, "high": 1500},
    ),
    # Azure's v1 route (base_url <fake>/openai/v1), model = the deployment's name; the legacy
    # deployments route gets 404 at both.
    "azure-legacy": ServerProfile(model="gpt-4o-mini", path_prefix="/openai/v1/"),
    "azure-v1": replace(_GPT5_MINI, model="my-gpt-5-mini", path_prefix="/openai/v1/"),
    "deepseek-chat": ServerProfile(model="deepseek-chat", refusals=(_DEEPSEEK_FORMATS,), json_word=True),
    "deepseek-reasoner": ServerProfile(
        model="deepseek-reasoner",
        # Assumed: no thread quotes the body.
        refusals=(_DEEPSEEK_FORMATS, Refusal("logprobs", _PARAMETER.format(param="logprobs"))),
        json_word=True,
        ignored=frozenset({"temperature", "top_p", "frequency_penalty", "presence_penalty"}),
        thinking=REASONING_CONTENT,
        usage_reasoning=True,
    ),
    "gemini": ServerProfile(
        model="gemini-2.5-flash",
        listed_as="models/gemini-2.5-flash",
        errors=GEMINI,
        refusals=(
            Refusal("logprobs", "Logprobs is not enabled for models/gemini-2.5-flash"),
            Refusal("top_logprobs", "Logprobs is not enabled for models/gemini-2.5-flash"),
        ),
        default_effort="medium",
        thinking=HIDDEN,
        hidden_tokens={"none": 0, "minimal": 40, "low": 300, "medium": 800, "high": 2000},
    ),
    "anthropic": ServerProfile(
        model="claude-sonnet-4-5",
        errors=ANTHROPIC,
        # Assumed words.
        refusals=(Refusal("n", "n: only n=1 is supported", accepted=(1,), code="invalid_request_error"),),
        ignored=frozenset(
            {
                "response_format",
                "logprobs",
                "top_logprobs",
                "reasoning_effort",
                "seed",
                "frequency_penalty",
                "presence_penalty",
            }
        ),
    ),
    "groq-qwen3": ServerProfile(
        model="qwen/qwen3-32b",
        refusals=(
            Refusal("logprobs", "`logprobs` is not supported with this model", code="invalid_request_error"),
            Refusal(
                "response_format.type",
                "This model does not support response format `json_schema`",
                accepted=("json_object", "text"),
                code="invalid_request_error",
            ),
        ),
        thinking=INLINE,
    ),
    "openrouter": ServerProfile(model="deepseek/deepseek-r1", thinking=REASONING, usage_reasoning=True),
    "mistral": ServerProfile(model="mistral-small-latest", known_fields=_MISTRAL_FIELDS),
    "ollama-qwen3": _OLLAMA,
    "ollama-qwen3-old": replace(_OLLAMA, thinking=INLINE),
    "ollama-deepseek-r1": replace(_OLLAMA, model="deepseek-r1:8b", thinking=CLOSED),
    "llamacpp": _LLAMACPP,
    "llamacpp-raw": replace(_LLAMACPP, thinking=INLINE),
    "llamacpp-runaway": replace(
        _LLAMACPP, model="qwen2.5-0.5b-instruct-q4_k_m.gguf", thinking=NONE, context_tokens=4096, runaway=True
    ),
    "vllm": _VLLM,
    "vllm-raw": replace(_VLLM, thinking=INLINE),
    "lmstudio": ServerProfile(
        model="qwen/qwen3-8b",
        errors=LMSTUDIO,
        refusals=(
            Refusal(
                "response_format.type",
                "'response_format.type' must be 'json_schema' or 'text'",
                accepted=("json_schema", "text"),
            ),
        ),
        ignored=_NOT_THERE,
        thinking=INLINE,
    ),
}


# --- what a server does with a request


def listing(profile: ServerProfile, path: str) -> tuple[int, Any]:
    """A GET: the model list (/v1/models, /openai/v1/models), llama.cpp's /props."""
    path = urlsplit(path).path.rstrip("/")
    if profile.props and path == "/props":
        return 200, {"default_generation_settings": {"n_ctx": profile.context_tokens}}
    if path.endswith("/models"):
        entry = {"id": profile.listed_as or profile.model, "object": "model", "owned_by": "tests"}
        return 200, {"object": "list", "data": [entry | profile.model_entry]}
    return 404, error_body(profile.errors, 404, "Not found")


def refusal(profile: ServerProfile, path: str, request: dict) -> Refused | None:
    """The server's refusal of a request, or None: the first thing it objects to."""
    if profile.path_prefix and not urlsplit(path).path.startswith(profile.path_prefix):
        return Refused(404, "path", {"error": {"code": "404", "message": "Resource not found"}})
    if profile.known_fields:
        unknown = _unknown_field(profile.known_fields, request)
        if unknown:
            return unknown
    effort = request.get("reasoning_effort") or profile.default_effort
    for rule in profile.refusals:
        value = _value(request, rule.param)
        if value is None or value is False or (rule.accepted and value in rule.accepted):
            continue
        if rule.taken_at_effort_none and effort == "none":
            continue
        message = rule.message.replace("{value}", _shown(value))
        param = rule.param.split(".")[0]
        body = error_body(profile.errors, 400, message, param=param if rule.named else None, code=rule.code)
        return Refused(400, param, body)
    json_object = _value(request, "response_format.type") == "json_object"
    if profile.json_word and json_object and "json" not in _prompt(request).lower():
        body = error_body(profile.errors, 400, _JSON_WORD, code="invalid_request_error")
        return Refused(400, "response_format", body)
    if profile.over_context == "refuse":
        prompt = len(_prompt(request)) // 4
        completion = _cap(request) if profile.context_counts_cap else 0
        if prompt + completion > profile.context_tokens:
            message = profile.context_message.format(
                n_ctx=profile.context_tokens, prompt=prompt, completion=completion, total=prompt + completion
            )
            return Refused(400, "context", error_body(profile.errors, 400, message, code="exceed_context_size_error"))
    return None


def error_body(style: str, status: int, message: str, *, param: str | None = None, code: str | None = None) -> Any:
    if style == GEMINI:
        return [{"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}]
    if style == LMSTUDIO:
        return {"error": message}
    if style == VLLM:
        return {"object": "error", "message": message, "type": "BadRequestError", "param": param, "code": status}
    if style == LLAMACPP:
        return {"error": {"code": status, "message": message, "type": code or "invalid_request_error"}}
    if style == ANTHROPIC:
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def _unknown_field(known: frozenset[str], request: dict) -> Refused | None:
    """Mistral's 422 for the first field (or member of a checked object) it does not know."""
    for key, value in request.items():
        if key not in known:
            return _extra(key, [key], value)
        if isinstance(value, dict) and f"{key}." in known:
            for member, inner in value.items():
                if f"{key}.{member}" not in known:
                    return _extra(key, [key, member], inner)
    return None


def _extra(param: str, loc: list[str], value: Any) -> Refused:
    detail = {"type": "extra_forbidden", "loc": ["body", *loc], "msg": "Extra inputs are not permitted", "input": value}
    body = {"object": "error", "message": {"detail": [detail]}, "type": "invalid_request_error"}
    return Refused(422, param, body | {"param": None, "code": None})


def as_read(profile: ServerProfile | None, request: dict) -> tuple[dict, int]:
    """The request as the model reads it, and the prompt tokens cut: the fields the server drops
    without a word left out; a prompt over the context (Ollama) cut from the front of what follows
    the system message, the system message kept (the fake finds the step by it)."""
    if profile is None:
        return request, 0
    read = {key: value for key, value in request.items() if key not in profile.ignored}
    room = profile.context_tokens * 4
    excess = len(_prompt(read)) - room
    if profile.over_context != "cut" or excess <= 0:
        return read, 0
    messages = [dict(m) for m in read["messages"]]
    for message in messages[1:] if messages[0].get("role") == "system" else messages:
        taken = min(excess, len(message["content"]))
        message["content"] = message["content"][taken:]
        excess -= taken
    messages = [m for m in messages[:-1] if m["content"]] + messages[-1:]
    read["messages"] = messages
    return read, (len(_prompt(request)) - len(_prompt(read))) // 4


def reply(profile: ServerProfile | None, request: dict, answer: str, prompt: str) -> Reply:
    """The server's reply carrying `answer`: thinking placed where the server puts it, cut at the
    cap (thinking counts against it, hidden or not), a runaway model's filler."""
    if profile is None:
        usage = {
            "prompt_tokens": len(prompt) // 4,
            "completion_tokens": len(answer) // 4,
            "total_tokens": (len(prompt) + len(answer)) // 4,
        }
        return Reply(answer, usage)
    effort = request.get("reasoning_effort") or profile.default_effort
    hidden = profile.hidden_tokens.get(effort, 0) if profile.thinking == HIDDEN else 0
    thought = thinking(request, answer) if profile.thinking not in (NONE, HIDDEN) else ""
    cap = _cap(request) or (RUNAWAY_TOKENS if profile.runaway else 0)
    if profile.runaway:
        answer += FILLER * (cap * 4 // len(FILLER) + 1)
    field_text, content = (thought, answer) if profile.thinking in FIELDS else ("", answer)
    if profile.thinking == INLINE:
        content = f"<think>\n{thought}\n</think>\n\n{answer}"
    elif profile.thinking == CLOSED:
        content = f"{thought}\n</think>\n\n{answer}"
    finish = "stop"
    if cap:
        hidden = min(hidden, cap)
        room = (cap - hidden) * 4
        if len(field_text) + len(content) > room:
            field_text, content = field_text[:room], content[: max(0, room - len(field_text))]
            finish = "length"
    written = (len(field_text) + len(content)) // 4
    usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": hidden + written}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if profile.thinking == HIDDEN or profile.usage_reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": hidden + len(field_text) // 4}
    field_name = profile.thinking if profile.thinking in FIELDS else ""
    return Reply(content, usage, field_text, field_name, finish, hidden)


# --- thinking aloud

# A draft's verdicts and labels: each the other way round (or another one), as a model that
# settles only after it re-checks. Longer words first, so "not_supported" is not read as "supported".
_FLIPS = {
    "not_fully_supported": "fully_supported",
    "not fully supported": "fully supported",
    "fully_supported": "contradicted",
    "fully supported": "contradicted",
    "not_supported": "supported",
    "supported": "not_supported",
    "irrelevant": "supported",
    "supports": "refutes",
    "refutes": "supports",
    "contradicted": "fully_supported",
    "inconclusive": "not_fully_supported",
    "true": "false",
    "false": "true",
    "unsure": "true",
    "wiki": "news",
    "news": "blog",
    "blog": "wiki",
    "OK": "NOT OK",
}
_FLIP = re.compile(r"\b(" + "|".join(re.escape(word) for word in _FLIPS) + r")\b")


def draft(answer: str) -> str:
    """The answer as a thinking model drafts it before it re-checks: in the same format, with
    other verdicts and labels, other sentence ids, claims worded otherwise."""
    text = _FLIP.sub(lambda m: _FLIPS[m.group(1)], answer)
    text = re.sub(r"\bS(\d+)\b", lambda m: f"S{int(m.group(1)) + 1}", text)
    text = text.replace('"sentence_ids": []', '"sentence_ids": ["S1"]')
    text = text.replace('"claim": "', '"claim": "Probably ')
    text = re.sub(r"^- ", "- Probably ", text, flags=re.M)
    return text if text != answer else f"{answer} (not sure yet)"


def thinking(request: dict, answer: str) -> str:
    """What a model thinks aloud before `answer`: the task restated, a draft of the answer,
    then a second look."""
    system = request["messages"][0]["content"] if request.get("messages") else ""
    task = re.split(r"(?<=[.!?])\s", system.strip(), maxsplit=1)[0][:200] or "answer the question"
    return (
        f"Okay, the task: {task} Let me work through it and draft the answer.\n\n"
        f"{draft(answer)}\n\n"
        "Wait, let me re-check each one against the text before I answer. Some of those are wrong; "
        "here is the corrected answer."
    )


def _value(request: dict, param: str) -> Any:
    value: Any = request
    for key in param.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _prompt(request: dict) -> str:
    return " ".join(m.get("content") or "" for m in request.get("messages", []))


def _cap(request: dict) -> int:
    return int(request.get("max_completion_tokens") or request.get("max_tokens") or 0)
