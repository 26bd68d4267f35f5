"""Which models are configured (`LLM_MODELS`) and on which server: kept apart from the client
so that reading the list does not import `openai` (over half a second at a web server's start)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelChoice:
    name: str
    base_url: str


def parse_model_list(spec: str, default_base_url: str) -> list[ModelChoice]:
    """`LLM_MODELS`: comma list, first is the default; `name=base_url` gives a model its own
    server, e.g. `gpt-4o-mini,llama3.1:8b=http://localhost:11434/v1`."""
    choices = []
    for entry in spec.split(","):
        name, _, base_url = entry.strip().partition("=")
        if name.strip():
            choices.append(ModelChoice(name.strip(), base_url.strip() or default_base_url))
    return choices
