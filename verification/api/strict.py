"""Request bodies that refuse a key they do not know (issue 38). A key put one level off
("evidence" beside "text" instead of inside "settings") was dropped, and the run made with the
default in its place; now the answer is a 400 that names every such key and, where it is plain,
where it belongs. `extra: forbid` keeps the OpenAPI document saying the same
(additionalProperties: false)."""

from typing import Any, ClassVar

from ninja import Schema
from pydantic import model_validator

# Unknown keys named in one answer: enough to find them, short enough to read.
MAX_NAMED = 10


class StrictIn(Schema):
    model_config = {"extra": "forbid"}
    # An unknown key that is plainly a known one put in the wrong place → what to say after its
    # name: "belongs inside settings".
    MISPLACED: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _known_keys_only(cls, data: Any) -> Any:
        if isinstance(data, dict) and (unknown := [key for key in data if key not in cls.model_fields]):
            raise ValueError(unknown_keys(unknown, known=list(cls.model_fields), misplaced=cls.MISPLACED))
        return data


def unknown_keys(unknown: list[str], *, known: list[str], misplaced: dict[str, str]) -> str:
    """ "unknown key 'evidence': evidence belongs inside settings"; the keys this object takes are
    listed when some key is not merely misplaced."""
    named = ", ".join(repr(key) for key in unknown[:MAX_NAMED]) + (" …" if len(unknown) > MAX_NAMED else "")
    message = f"unknown key{'s' if len(unknown) > 1 else ''} {named}"
    where = [f"{key} {misplaced[key]}" for key in unknown[:MAX_NAMED] if key in misplaced]
    if where:
        message += ": " + "; ".join(where)
    if any(key not in misplaced for key in unknown):
        message += f" (the keys here are {', '.join(known)})"
    return message
