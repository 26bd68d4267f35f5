"""The sentences Punkt gives a line, mended where it cuts wrongly (pipeline/segment.py): a list
marker split off from its item, a stray "!" split off from its sentence, an initialism or a German
ordinal taken for a sentence end, a list number glued to the sentence before its item."""

import re

from .types import Span

# "R.N.", "B.C.E.", "A. D.": letters each followed by a period, at the end of a span.
_INITIALISM_END = re.compile(r"(?<![\w.])(?:[A-Za-z]\. ?){1,}[A-Za-z]\.$")
_CONTINUES = re.compile(r"[a-z0-9(\[,;:]")
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,3}[.)]|[a-zA-Z][.)]|[-*•+]|#{1,6})\s*$")

# A list number glued to the end of the sentence before it ("…Apple Inc.2." before "Microsoft…",
# "include:1." before "Steve…"): after a sentence end or a colon that follows a letter or a
# closing bracket or quote, so a decimal ("3.2.") or a year ("in 1999.") is never taken for one.
_GLUED_MARKER = re.compile(r"(?<=[A-Za-z)\]\"'”’][.!?:;])\s?(\d{1,3}[.)])$")
# "am 3. Oktober", "im 19. Jahrhundert": in German a number with a period is an ordinal when what
# follows is a month, a century, or a lowercase word; Punkt, untrained, cuts after it.
_GERMAN_ORDINAL = re.compile(r"(?<![\w.])\d{1,2}\.$")
_GERMAN_AFTER_ORDINAL = re.compile(
    r"(?:Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember"
    r"|Jahrhunderts?|Jh\.)\b|[a-zäöüß]"
)


def repaired(spans: list[Span], text: str, offset: int, language: str = "en") -> list[Span]:
    """The spans Punkt and the cuts before it gave (offsets into `text` from `offset`), its wrong cuts mended."""
    spans = _attach_stray_punctuation(_merge_list_markers(spans, text, offset), text, offset)
    if language == "de":
        spans = _rejoin_german_ordinals(spans, text, offset)
    return _move_glued_markers(_rejoin_initialisms(spans, text, offset), text, offset)


def _merge_list_markers(spans: list[Span], text: str, offset: int) -> list[Span]:
    """'1.' split off by Punkt belongs to the sentence after it on the same line."""
    merged: list[Span] = []
    pending: Span | None = None
    for span in spans:
        if pending is not None and "\n" not in text[pending.end - offset : span.start - offset]:
            span = Span(text[pending.start - offset : span.end - offset], pending.start, span.end)
        elif pending is not None:
            merged.append(pending)
        pending = None
        if _LIST_MARKER.match(span.text):
            pending = span
        else:
            merged.append(span)
    if pending is not None:
        merged.append(pending)
    return [s for s in merged if s.text]


def _attach_stray_punctuation(spans: list[Span], text: str, offset: int) -> list[Span]:
    """ "Wow!!!" can come back as "Wow!!" + "!": the stray mark belongs to the sentence before."""
    attached: list[Span] = []
    for span in spans:
        if attached and not has_words(span.text) and "\n" not in text[attached[-1].end - offset : span.start - offset]:
            previous = attached[-1]
            span = Span(text[previous.start - offset : span.end - offset], previous.start, span.end)
            attached[-1] = span
        else:
            attached.append(span)
    return attached


def _rejoin_initialisms(spans: list[Span], text: str, offset: int) -> list[Span]:
    """Initialisms the list does not know ("R.N.", "A. D.") end no sentence when what follows
    cannot start one (a lowercase word, a number, a bracket): Punkt, untrained, cuts after
    any of them. Before a capital it stays cut, as the text gives no other sign."""
    return _rejoin(spans, text, offset, ends=_INITIALISM_END, continues=_CONTINUES)


def _rejoin_german_ordinals(spans: list[Span], text: str, offset: int) -> list[Span]:
    """German "am 3. Oktober", "im 19. Jahrhundert", "der 2. größte": the ordinal's period ends no
    sentence (see _GERMAN_AFTER_ORDINAL)."""
    return _rejoin(spans, text, offset, ends=_GERMAN_ORDINAL, continues=_GERMAN_AFTER_ORDINAL)


def _rejoin(spans: list[Span], text: str, offset: int, *, ends: re.Pattern, continues: re.Pattern) -> list[Span]:
    """A span joined to the one before it when that one ends as `ends` finds and this one starts as
    `continues` matches, on the same line."""
    joined: list[Span] = []
    for span in spans:
        if (
            joined
            and ends.search(joined[-1].text)
            and continues.match(span.text)
            and "\n" not in text[joined[-1].end - offset : span.start - offset]
        ):
            previous = joined[-1]
            span = Span(text[previous.start - offset : span.end - offset], previous.start, span.end)
            joined[-1] = span
        else:
            joined.append(span)
    return joined


def _move_glued_markers(spans: list[Span], text: str, offset: int) -> list[Span]:
    """A list number at the end of a sentence, glued to it ("Apple Inc.2."), numbers the sentence
    after it on the same line: it moves there ("2. Microsoft Corp."), as a marker split off on its
    own does (_merge_list_markers)."""
    moved: list[Span] = []
    for span in spans:
        if moved and "\n" not in text[moved[-1].end - offset : span.start - offset]:
            marker = _GLUED_MARKER.search(moved[-1].text)
            if marker:
                previous = moved[-1]
                cut = previous.start + marker.start(1)
                before = text[previous.start - offset : cut - offset].rstrip()
                moved[-1] = Span(before, previous.start, previous.start + len(before))
                span = Span(text[cut - offset : span.end - offset], cut, span.end)
        moved.append(span)
    return moved


def has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)
