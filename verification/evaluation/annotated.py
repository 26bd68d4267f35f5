"""FavaBench's `annotated` text → error spans with offsets into the plain `output`.

`annotated` is the output with each error wrapped in a type tag (`<entity>…</entity>`); inside,
the original words are in `<delete>…</delete>` and a correction may follow in `<mark>…</mark>`,
which the model never wrote. Dropping the marks and all tags should give the output back, but
annotators' copies differ from it in whitespace (and may escape `&`), so the kept text is aligned
to the output on its non-whitespace characters instead of being trusted position by position."""

import difflib
import html
import re
from dataclasses import dataclass

ERROR_TYPES = ("entity", "relation", "contradictory", "unverifiable", "invented", "subjective")
# Tags that only say which words are original (delete) or suggested (mark), not an error type.
EDIT_TAGS = ("delete", "mark")

# Tags as annotators typed them, with stray spaces ("</entity >"), in any case.
_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z]+)\s*>")
# Alignment falls back on a diff when the copies differ in more than whitespace; beyond this share
# of differing characters the annotation is of another text, and its offsets would be wrong.
MAX_DIFFERING_SHARE = 0.02


class AnnotationError(ValueError):
    """The annotation cannot be read or aligned; the caller adds the file and item."""


@dataclass(frozen=True)
class ErrorSpan:
    """An error of one type at output[start:end]. An insertion (a span with only a <mark>) has no
    words in the output: start == end, at the first character after it (or the text's end)."""

    start: int
    end: int
    type: str


@dataclass(frozen=True)
class _KeptSpan:
    type: str
    start: int  # into the kept text
    end: int


def parse_annotated(annotated: str, output: str) -> tuple[ErrorSpan, ...]:
    """Error spans of `annotated`, in the order they open, as offsets into `output`."""
    kept, spans = _strip(annotated, unescape=False)
    mapping = _align(kept, output)
    if mapping is None and "&" in annotated:
        kept, spans = _strip(annotated, unescape=True)
        mapping = _align(kept, output)
    if mapping is None:
        raise AnnotationError(
            f"the annotated text without its tags and marks is not the output ({_first_difference(kept, output)})"
        )
    return tuple(_to_output(span, kept, mapping, len(output)) for span in spans)


def _strip(annotated: str, *, unescape: bool) -> tuple[str, list[_KeptSpan]]:
    """The text the model wrote (marks and tags dropped) and each error span's place in it."""
    kept: list[str] = []
    length = 0
    open_tags: list[tuple[str, int, int]] = []  # (tag, kept position, character in annotated)
    spans: list[_KeptSpan] = []
    marks_open = 0
    position = 0
    for match in _TAG.finditer(annotated):
        text = annotated[position : match.start()]
        if marks_open == 0 and text:
            text = html.unescape(text) if unescape else text
            kept.append(text)
            length += len(text)
        position = match.end()
        closing, name = match.group(1) == "/", match.group(2).lower()
        if name not in ERROR_TYPES and name not in EDIT_TAGS:
            raise AnnotationError(f"unknown tag <{match.group(1)}{match.group(2)}> at character {match.start()}")
        if not closing:
            open_tags.append((name, length, match.start()))
            marks_open += name == "mark"
            continue
        if not open_tags or open_tags[-1][0] != name:
            opened = f"<{open_tags[-1][0]}> is open" if open_tags else "nothing is open"
            raise AnnotationError(f"</{name}> at character {match.start()} closes nothing ({opened})")
        _, start, _ = open_tags.pop()
        marks_open -= name == "mark"
        if name in ERROR_TYPES:
            spans.append(_KeptSpan(name, start, length))
    if open_tags:
        name, _, at = open_tags[-1]
        raise AnnotationError(f"<{name}> at character {at} is never closed")
    tail = annotated[position:]
    kept.append(html.unescape(tail) if unescape else tail)
    # Spans close inner-first; the reader expects them in the order they appear.
    spans.sort(key=lambda span: (span.start, -span.end))
    return "".join(kept), spans


def _non_space(text: str) -> list[int]:
    return [i for i, char in enumerate(text) if not char.isspace()]


def _align(kept: str, output: str) -> dict[int, int] | None:
    """Kept-text position → output position, for the non-whitespace characters both share;
    None when the two differ in more than whitespace and a few characters."""
    kept_at, output_at = _non_space(kept), _non_space(output)
    kept_chars = "".join(kept[i] for i in kept_at)
    output_chars = "".join(output[i] for i in output_at)
    if kept_chars == output_chars:
        return dict(zip(kept_at, output_at, strict=True))
    allowed = MAX_DIFFERING_SHARE * len(output_chars)
    if abs(len(kept_chars) - len(output_chars)) > allowed:
        return None  # a diff could not bring them close enough; do not pay for one
    matcher = difflib.SequenceMatcher(None, kept_chars, output_chars, autojunk=False)
    blocks = matcher.get_matching_blocks()
    matched = sum(block.size for block in blocks)
    if max(len(kept_chars), len(output_chars)) - matched > allowed:
        return None
    return {kept_at[b.a + k]: output_at[b.b + k] for b in blocks for k in range(b.size)}


def _to_output(span: _KeptSpan, kept: str, mapping: dict[int, int], output_length: int) -> ErrorSpan:
    inside = [mapping[i] for i in range(span.start, span.end) if i in mapping]
    if inside:
        return ErrorSpan(inside[0], inside[-1] + 1, span.type)
    if kept[span.start : span.end].strip():
        words = " ".join(kept[span.start : span.end].split())[:60]
        raise AnnotationError(f"the <{span.type}> span {words!r} is not in the output")
    following = (mapping[i] for i in range(span.end, len(kept)) if i in mapping)
    point = next(following, output_length)
    return ErrorSpan(point, point, span.type)


def _first_difference(kept: str, output: str) -> str:
    a, b = " ".join(kept.split()), " ".join(output.split())
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"from word-normalised character {at}: {a[at : at + 30]!r} against {b[at : at + 30]!r}"
