"""Benchmark files → plain items, with every problem named by file and line (or item).

- `favabench`: FavaBench's JSON list of {prompt, output, annotated, model, subject, dataset}.
- `claim-stance`: JSON lines {claim, evidence, stance}, stance one of STANCES.
- `segments`: JSON lines {response, segmented_response: [reference segments]}.

Item ids are "<dataset>-<n>-<hash>": n counts the file's records from 1 (blank lines do not count)
and the hash is the first 8 hex digits of the SHA-1 of the item's text (prompt and output; claim
and evidence; response). The same file gives the same ids on every run, so `evaluate --resume`
can tell which items are done, and an edited record gets a new id instead of an old result."""

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .annotated import ERROR_TYPES, AnnotationError, ErrorSpan
from .annotated import parse_annotated as _parse_annotated

__all__ = [
    "DATASETS",
    "ERROR_TYPES",
    "STANCES",
    "DatasetError",
    "ErrorSpan",
    "FavaItem",
    "SegmentsItem",
    "StanceItem",
    "load",
    "parse_annotated",
]

DATASETS = ("favabench", "claim-stance", "segments")
STANCES = ("completely-support", "partially-support", "refute", "irrelevant")


class DatasetError(ValueError):
    """A dataset file that cannot be read; the message names the file and the line or item."""


@dataclass(frozen=True)
class FavaItem:
    id: str
    prompt: str
    output: str
    model: str
    subject: str
    dataset: str
    errors: tuple[ErrorSpan, ...]


@dataclass(frozen=True)
class StanceItem:
    id: str
    claim: str
    evidence: str
    stance: str


@dataclass(frozen=True)
class SegmentsItem:
    id: str
    response: str
    segments: tuple[str, ...]


def parse_annotated(annotated: str, output: str) -> tuple[ErrorSpan, ...]:
    """FavaBench's tagged copy of `output` → its error spans as offsets into `output`
    (see annotated.py for how tags, marks and whitespace differences are handled)."""
    try:
        return _parse_annotated(annotated, output)
    except AnnotationError as error:
        raise DatasetError(str(error)) from None


def load(name: str, path: Path, limit: int | None = None) -> list:
    """The first `limit` items (all when None) of dataset `name` read from `path`."""
    readers: dict[str, Callable[[Path, int | None], list]] = {
        "favabench": _load_favabench,
        "claim-stance": _load_stance,
        "segments": _load_segments,
    }
    if name not in readers:
        raise DatasetError(f"unknown dataset {name!r}: choose one of {', '.join(DATASETS)}")
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: {'not a file' if path.exists() else 'no such file'}")
    try:
        return readers[name](path, limit)
    except OSError as error:
        raise DatasetError(f"{path}: cannot be read ({error.strerror or error})") from None


def _item_id(prefix: str, number: int, *texts: str) -> str:
    digest = hashlib.sha1("\n".join(texts).encode("utf-8")).hexdigest()[:8]
    return f"{prefix}-{number:04d}-{digest}"


def _text_field(record: Any, key: str, *, required: bool = True) -> str:
    """record[key] as a string; the problem in words (the caller says where) when it is not."""
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, found {type(record).__name__}")
    value = record.get(key)
    if value is None and not required:
        return ""
    if value is None:
        raise ValueError(f"{key!r} is missing")
    if not isinstance(value, str):
        raise ValueError(f"{key!r} should be a string, not {type(value).__name__}")
    return value


# ---- favabench: one JSON list -------------------------------------------------------------


def _load_favabench(path: Path, limit: int | None) -> list[FavaItem]:
    items = []
    for number, line, record in _json_list(path, limit):
        try:
            items.append(_fava_item(number, record))
        except ValueError as error:  # AnnotationError is one too
            raise DatasetError(f"{path}, item {number}: {error} (line {line})") from None
    return items


def _fava_item(number: int, record: Any) -> FavaItem:
    output = _text_field(record, "output")
    annotated = _text_field(record, "annotated")
    prompt = _text_field(record, "prompt", required=False)
    return FavaItem(
        id=_item_id("fava", number, prompt, output),
        prompt=prompt,
        output=output,
        # Which model wrote the output: the paper reports chatgpt and llama separately.
        model=_text_field(record, "model"),
        subject=_text_field(record, "subject", required=False),
        dataset=_text_field(record, "dataset", required=False),
        errors=_parse_annotated(annotated, output),
    )


def _json_list(path: Path, limit: int | None) -> Iterator[tuple[int, int, Any]]:
    """(item number from 1, line the item starts on, item) for the items of a top-level JSON list.
    Items are decoded one at a time so a problem is placed by item and line, and a --limit
    stops reading early."""
    text = _read_text(path)
    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if not text.startswith("[", position):
        raise DatasetError(f"{path}, line {_line_of(text, position)}: expected a JSON list of items ('[')")
    position = _skip_space(text, position + 1)
    number = 0
    while not text.startswith("]", position):
        if limit is not None and number >= limit:
            return
        number += 1
        try:
            record, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise DatasetError(
                f"{path}, item {number}: not JSON ({error.msg}) (line {error.lineno} column {error.colno})"
            ) from None
        yield number, _line_of(text, position), record
        position = _skip_space(text, end)
        if text.startswith(",", position):
            position = _skip_space(text, position + 1)
        elif not text.startswith("]", position):
            found = repr(text[position]) if position < len(text) else "the end of the file"
            raise DatasetError(
                f"{path}, line {_line_of(text, position)}: expected ',' or ']' after item {number}, found {found}"
            )
    after = _skip_space(text, position + 1)
    if after < len(text):
        raise DatasetError(f"{path}, line {_line_of(text, after)}: text after the end of the list")


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DatasetError(f"{path}, line {line}: not UTF-8 text (byte {error.start})") from None


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


# ---- claim-stance and segments: JSON lines --------------------------------------------------


def _json_lines(path: Path, limit: int | None) -> Iterator[tuple[int, int, Any]]:
    """(record number from 1, line number, decoded record) for each non-blank line."""
    number = 0
    with path.open("rb") as lines:
        for line_number, raw in enumerate(lines, start=1):
            if limit is not None and number >= limit:
                return
            try:
                line = raw.decode("utf-8-sig" if line_number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise DatasetError(f"{path}, line {line_number}: not UTF-8 text (byte {error.start})") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{path}, line {line_number}: not JSON ({error.msg})") from None
            number += 1
            yield number, line_number, record


def _load_stance(path: Path, limit: int | None) -> list[StanceItem]:
    items = []
    for number, line, record in _json_lines(path, limit):
        try:
            claim, evidence = _text_field(record, "claim"), _text_field(record, "evidence")
            stance = _text_field(record, "stance").strip().lower()
            if stance not in STANCES:
                raise ValueError(f"stance {record['stance']!r} is not one of {', '.join(STANCES)}")
        except ValueError as error:
            raise DatasetError(f"{path}, line {line}: {error}") from None
        items.append(StanceItem(_item_id("stance", number, claim, evidence), claim, evidence, stance))
    return items


def _load_segments(path: Path, limit: int | None) -> list[SegmentsItem]:
    items = []
    for number, line, record in _json_lines(path, limit):
        try:
            response = _text_field(record, "response")
            segments = record.get("segmented_response")
            if not isinstance(segments, list) or not all(isinstance(s, str) for s in segments):
                raise ValueError("'segmented_response' should be a list of strings")
        except ValueError as error:
            raise DatasetError(f"{path}, line {line}: {error}") from None
        items.append(SegmentsItem(_item_id("segments", number, response), response, tuple(segments)))
    return items
