"""Which models are configured (`LLM_MODELS`) and on which server: kept apart from the client
so that reading the list does not import `openai` (over half a second at a web server's start)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelChoice:
    name: str
    base_url: str
    # The tokens the model's server holds (0: LLM_CONTEXT_TOKENS, or what the server reports).
    context_tokens: int = 0


def parse_model_list(spec: str, default_base_url: str) -> list[ModelChoice]:
    """`LLM_MODELS`: comma list, first is the default; `name=base_url` gives a model its own
    server, e.g. `gpt-5-mini,qwen3:8b=http://localhost:11434/v1`; `;context=N` after an entry
    gives its context in tokens (`qwen3:8b=http://localhost:11434/v1;context=16384`)."""
    choices = []
    for entry in spec.split(","):
        entry, _, options = entry.strip().partition(";")
        name, _, base_url = entry.strip().partition("=")
        if name.strip():
            context = _option(options, "context")
            choices.append(ModelChoice(name.strip(), base_url.strip() or default_base_url, context))
    return choices


def _option(options: str, key: str) -> int:
    for option in options.split(";"):
        name, _, value = option.partition("=")
        if name.strip().lower() == key and value.strip().isascii() and value.strip().isdigit():
            return int(value.strip())
    return 0
