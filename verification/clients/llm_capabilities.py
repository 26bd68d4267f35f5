"""What one model's server takes, and what it refused: the parameters a request may carry
(temperature, a reasoning effort, logprobs, the output format, streaming usage, which name the
answer's token cap goes under) and what factsite knows of the model (where its thinking goes, its
context size).

Known model families start from what their providers document (../shared/PROVIDERS.md); any
other model starts by sending everything and learns from its first refusal. A refusal (400 or 422
that names a parameter, in OpenAI's, Mistral's, Gemini's or LM Studio's shape) is read by
`read_refusal` and turned into a new `Capabilities` by `learn`; the caller keeps it per (server,
model) in a store shared by processes, so a lesson is paid once, not once per call or worker."""

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

# Output formats, strongest first: a JSON schema the server enforces, any JSON object (the prompt
# must then say "JSON" and give the schema), or the plain text the prompt describes.
JSON_SCHEMA, JSON_OBJECT, TEXT = "json_schema", "json_object", "text"
OUTPUT_FORMATS = (JSON_SCHEMA, JSON_OBJECT, TEXT)
# Reasoning efforts, lowest first, as OpenAI names them (Ollama and vLLM take the same words).
EFFORTS = ("none", "minimal", "low", "medium", "high")
LOWEST = "lowest"
# Where a model's thinking goes: not known yet, nowhere (it does not think, or keeps it hidden),
# a field of its own (`reasoning_content`, `reasoning`), inside `content` (<think>…</think>), or
# inside `content` with only its closing tag (the chat template opened it in the prompt).
THINKING_UNKNOWN, THINKING_NONE, THINKING_HIDDEN, THINKING_FIELD = "", "none", "hidden", "field"
THINKING_INLINE, THINKING_CLOSED = "inline", "closed"
MAX_COMPLETION_TOKENS, MAX_TOKENS = "max_completion_tokens", "max_tokens"


@dataclass(frozen=True)
class Capabilities:
    temperature: bool = True
    # The effort sent as `reasoning_effort` ("" sends none).
    reasoning_effort: str = ""
    logprobs: bool = True
    output_format: str = JSON_SCHEMA
    stream: bool = True
    stream_usage: bool = True
    # The name the token cap goes under ("" sends no cap: a server that refused both).
    token_cap: str = MAX_COMPLETION_TOKENS
    thinking: str = THINKING_UNKNOWN
    # The prompt and answer tokens the server holds (0: not known).
    context_tokens: int = 0
    # The optional parts of a request the server has answered (sent alone until then).
    confirmed: tuple[str, ...] = ()
    # What was learned, in a person's words, in the order it was learned (check_llm shows it).
    lessons: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return values | {"lessons": list(self.lessons), "confirmed": list(self.confirmed)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Capabilities":
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["lessons"] = tuple(known.get("lessons", ()))
        known["confirmed"] = tuple(known.get("confirmed", ()))
        return cls(**known)

    @property
    def thinks(self) -> bool:
        thinking = self.thinking in (THINKING_HIDDEN, THINKING_FIELD, THINKING_INLINE, THINKING_CLOSED)
        return thinking or self.reasoning_effort not in ("", "none")


def _family(model: str) -> str:
    """The model's own name without a router's or a registry's prefix ("openai/gpt-5-mini",
    "models/gemini-2.5-flash") and in lowercase."""
    return model.lower().rsplit("/", 1)[-1]


# OpenAI's reasoning models before 5.1: no temperature but the default, no logprobs, a
# reasoning effort from `minimal` (gpt-5) or `low` (o-series). gpt-5.1 and later take
# temperature and logprobs while their effort is `none`, which is their lowest.
_OPENAI_REASONING = re.compile(r"^(?:gpt-5(?:-mini|-nano|-pro|-codex)?|o[134](?:-mini|-pro)?)(?:-\d{4}-\d{2}-\d{2})?$")
_OPENAI_5_LATER = re.compile(r"^gpt-5\.\d+")


def known_defaults(model: str, effort: str = LOWEST) -> Capabilities:
    """What a model's provider documents, before any request: the model's name decides."""
    name = _family(model)
    if _OPENAI_REASONING.match(name):
        lowest = "low" if name.startswith("o") else "minimal"
        return Capabilities(
            temperature=False, logprobs=False, reasoning_effort=_effort(effort, lowest), thinking=THINKING_HIDDEN
        )
    if _OPENAI_5_LATER.match(name):
        chosen = _effort(effort, "none")
        # Their temperature and logprobs are refused at any effort above none.
        return Capabilities(
            temperature=chosen == "none", logprobs=chosen == "none", reasoning_effort=chosen, thinking=THINKING_HIDDEN
        )
    if name.startswith("deepseek-reasoner"):
        return Capabilities(logprobs=False, output_format=JSON_OBJECT, thinking=THINKING_FIELD)
    if name.startswith("deepseek-chat"):
        return Capabilities(output_format=JSON_OBJECT, thinking=THINKING_NONE)
    if name.startswith("gemini-"):
        return Capabilities(logprobs=False, reasoning_effort=_effort(effort, "low"), thinking=THINKING_HIDDEN)
    if name.startswith("claude"):
        # Anthropic's endpoint ignores response_format and logprobs without a word: ask in plain text.
        return Capabilities(logprobs=False, output_format=TEXT, reasoning_effort="", thinking=THINKING_NONE)
    if name.startswith(("gpt-4", "gpt-3.5")):
        return Capabilities(reasoning_effort="", thinking=THINKING_NONE)
    return Capabilities(reasoning_effort=_effort(effort, "none"))


# Reasoning models whose chat template may open the thinking block in the prompt (DeepSeek-R1 and
# its distills, QwQ, "thinking" variants): only the closing tag shows in the answer.
_MAY_THINK_UNOPENED = re.compile(r"(?:^|[-_:.])(?:r1|qwq|thinking|reasoner|reasoning)(?:$|[-_:.])")


def may_think_unopened(model: str) -> bool:
    return bool(_MAY_THINK_UNOPENED.search(_family(model)))


def _effort(setting: str, lowest: str) -> str:
    """LLM_REASONING_EFFORT for a family whose lowest effort is `lowest` ("" for "off": send none)."""
    setting = (setting or LOWEST).strip().lower()
    if setting == LOWEST:
        return lowest
    if setting in ("off", "unset", "default"):
        return ""
    if setting in EFFORTS and EFFORTS.index(setting) < EFFORTS.index(lowest):
        return lowest  # lower than the family takes
    return setting


@dataclass(frozen=True)
class Refusal:
    """A server's refusal of a request: its status, its own message, and the parameter it named
    ("" when it named none)."""

    status: int
    message: str
    parameter: str = ""


def read_refusal(status: int, body: Any) -> Refusal:
    """A 400/422 body as OpenAI (`{"error": {"message", "param"}}`), Mistral (`{"message":
    {"detail": [{"loc": ["body", "stream_options", …], "msg"}]}}`), Gemini (a list of such errors),
    LM Studio (`{"error": "…"}`) and others send it. The parameter comes from the body's own
    field when there is one, else from the message's words."""
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except (TypeError, ValueError):
            return Refusal(status, _clip(body if isinstance(body, str) else body.decode(errors="replace")))
    if isinstance(body, list) and body:
        body = body[0]
    if not isinstance(body, dict):
        return Refusal(status, "")
    error = body.get("error", body)
    if isinstance(error, str):
        return Refusal(status, _clip(error), _named_in(error))
    if not isinstance(error, dict):
        return Refusal(status, "")
    message = error.get("message", "")
    if isinstance(message, dict) and isinstance(message.get("detail"), list):  # Mistral's 422
        return _validation_errors(status, message["detail"])
    if isinstance(error.get("detail"), list):  # a FastAPI server's own 422 (vLLM's, others')
        return _validation_errors(status, error["detail"])
    message = message if isinstance(message, str) else json.dumps(message)
    parameter = error.get("param") if isinstance(error.get("param"), str) else ""
    return Refusal(status, _clip(message), parameter or _named_in(message))


def _validation_errors(status: int, details: list) -> Refusal:
    for detail in details:
        if isinstance(detail, dict):
            location = [part for part in detail.get("loc", []) if isinstance(part, str) and part != "body"]
            message = f"{'.'.join(location)}: {detail.get('msg', 'refused')}" if location else str(detail.get("msg"))
            return Refusal(status, _clip(message), location[0] if location else "")
    return Refusal(status, "")


# The parameters factsite sends, as a refusal's words name them.
_PARAMETERS = (
    "reasoning_effort",
    "max_completion_tokens",
    "max_tokens",
    "stream_options",
    "top_logprobs",
    "logprobs",
    "temperature",
    "response_format",
    "json_schema",
    "json_object",
)


def _named_in(message: str) -> str:
    lowered = message.lower()
    if "think value" in lowered:  # Ollama: `think value "low" is not supported for this model`
        return "reasoning_effort"
    if "response format" in lowered or "response_format" in lowered:
        return "response_format"
    return next((name for name in _PARAMETERS if re.search(rf"\b{name}\b", lowered)), "")


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def learn(capabilities: Capabilities, refusal: Refusal, request: dict) -> tuple[Capabilities, str]:
    """What a refusal of `request` teaches: the capabilities without what it refused, and what
    factsite did, in words ("" when the refusal names nothing the request can do without: then
    it is the server's final answer)."""
    name = refusal.parameter or _guess_refused(refusal, request)
    if name in ("json_schema", "json_object"):
        name = "response_format"
    if name == "stream_options" and "stream_options" in request:
        return _lesson(capabilities, "stream usage refused: asked without it", stream_usage=False)
    if name == "stream" and request.get("stream"):
        return _lesson(capabilities, "streaming refused: asked without a stream", stream=False, stream_usage=False)
    if name == "temperature" and "temperature" in request:
        return _lesson(capabilities, "temperature 0 refused: sent without it (the model's default)", temperature=False)
    if name in ("logprobs", "top_logprobs") and "logprobs" in request:
        return _lesson(capabilities, "logprobs refused: asked without them", logprobs=False)
    if name in (MAX_TOKENS, MAX_COMPLETION_TOKENS) and name in request:
        other = MAX_TOKENS if name == MAX_COMPLETION_TOKENS else MAX_COMPLETION_TOKENS
        if capabilities.token_cap == name and f"{other} refused" not in " ".join(capabilities.lessons):
            return _lesson(capabilities, f"{name} refused: the cap sent as {other}", token_cap=other)
        return _lesson(capabilities, f"{name} refused: sent without a cap", token_cap="")
    if name == "reasoning_effort" and "reasoning_effort" in request:
        lowest = _lowest_offered(refusal.message, request["reasoning_effort"])
        if lowest:
            lesson = f"reasoning effort {request['reasoning_effort']} refused: sent {lowest}"
            return _lesson(capabilities, lesson, reasoning_effort=lowest)
        return _lesson(capabilities, "reasoning effort refused: sent without one", reasoning_effort="")
    if name == "response_format" and "response_format" in request:
        current = request["response_format"].get("type", JSON_SCHEMA)
        weaker = OUTPUT_FORMATS[min(OUTPUT_FORMATS.index(current) + 1, len(OUTPUT_FORMATS) - 1)]
        if weaker == JSON_OBJECT and (_json_object_refused(refusal) or not _names_a_type(refusal)):
            weaker = TEXT
        lesson = f"{current} output refused: asked for {weaker.replace('_', ' ')}"
        return _lesson(capabilities, lesson, output_format=weaker)
    return capabilities, ""


def _guess_refused(refusal: Refusal, request: dict) -> str:
    """A refusal that names nothing: the newest optional part of the request, as servers without
    a feature answer a bare 400 to it (structured output, then logprobs, then a stream)."""
    if refusal.status != 400 or refusal.parameter:
        return ""
    for name in ("response_format", "logprobs", "stream"):
        if request.get(name):
            return name
    return ""


def _names_a_type(refusal: Refusal) -> bool:
    """A refusal of one kind of output ("This response_format type is unavailable now", "does not
    support response format `json_schema`"), not of response_format as a whole."""
    lowered = refusal.message.lower()
    return "json_schema" in lowered or "type" in lowered


def _json_object_refused(refusal: Refusal) -> bool:
    # LM Studio: "'response_format.type' must be 'json_schema' or 'text'"
    return "json_object" not in refusal.message and "'text'" in refusal.message


def _lowest_offered(message: str, refused: str) -> str:
    """The lowest effort a refusal lists as supported ("Supported values are: 'none', 'low', …")."""
    offered = [effort for effort in EFFORTS if re.search(rf"'{effort}'", message.split("upported values", 1)[-1])]
    offered = [effort for effort in offered if effort != refused] if "upported values" in message else []
    return offered[0] if offered else ""


def _lesson(capabilities: Capabilities, lesson: str, **changes: Any) -> tuple[Capabilities, str]:
    return replace(capabilities, lessons=(*capabilities.lessons, lesson), **changes), lesson


# A context size in a refusal: vLLM's "maximum context length is 8192 tokens", llama.cpp's
# "n_ctx: 4096" or "context size (4096 tokens)".
_CONTEXT_IN_MESSAGE = re.compile(r"(?:maximum context length is|n_ctx[\"':= ]+|context size \()\s*(\d{3,7})", re.I)


def context_in_message(message: str) -> int:
    match = _CONTEXT_IN_MESSAGE.search(message)
    return int(match.group(1)) if match else 0


def exceeds_context(refusal: Refusal) -> bool:
    lowered = refusal.message.lower()
    return "context length" in lowered or "context size" in lowered or "context window" in lowered
