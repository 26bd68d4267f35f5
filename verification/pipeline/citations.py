"""An AI-written text's citations → the text to check without them, where each one's badge goes,
and what each one points to (issue 34).

`read_citations(text)` finds the reference lists (`citation_lists`) and the markers
(`citation_markers`), removes both from the text whose sentences are checked (everything else is
kept byte for byte), and says where each removed marker stood: `Citation.at` in the cleaned text,
`CitedText.offsets` back to the original. Pure and bounded: every pattern has bounded repetitions
and is scanned once, so a megabyte of markers costs what its length costs.

What counts as a citation (the ambiguous cases):
- Always: markdown footnotes [^1], 【1】 and 【1†source】, GraphRAG's [Data: Reports (2, 7)], links
  in parentheses ([nytimes.com](https://…)), a link whose text is its own host or a number,
  reference-style links [Reuters][1], (Source: …), DOIs (a DOI is never what a sentence claims,
  only where it comes from), and a bare URL that ends its sentence or line, unless the sentence
  names it as a place ("Go to https://x.test to register", "The minutes are at https://x.test."
  keep it).
- A link [text](url) is a citation whose text stays in the sentence.
- Bracketed numbers [1], [1][3], [1, 3], [1-3], carets ^2 and superscripts ¹²: when the text has a
  reference list, wherever they are; without one, where they end a sentence ("…in 2024.[1]",
  "…in 2024 [1]."), or glued to a word mid-sentence ("Paris[1] and") once two sentences end so
  (the text cites with numbers). So "Section [3] of the code" stays a sentence without a list, and
  is read as citing entry 3 with one.
- Reference lists: under a heading (Sources, References, Citations, Works cited, Bibliography,
  Footnotes; "Sources" only when an entry gives an address, since "Sources:" also heads a list of
  where money comes from), markdown footnote definitions anywhere, and a list without a heading at
  the very end when every entry is labelled and gives an address (a numbered list of plain words
  there is the answer's own). Unlabelled entries are numbered by their position.
- Never: inside `code` or a fenced block; followed by an operator, a call or an attribute
  (array[1] = 5, x^2 + y^2, a[1].size); a number of four digits or more, or 0, that no entry is
  labelled with ([2024] is a year), or a range that runs backwards ([12-5]); a caret or
  superscript after a digit or a word of one or two letters (10³, m², x^2). Prose "…is array[1]."
  cannot be told from "…is blue[1]." and is read as a citation (unresolved when there is no list)."""

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from .citation_lists import ReferenceEntry, ReferenceList, code_mask, reference_lists
from .citation_markers import CONTEXTUAL, STOP_AFTER, Found, Pointer, Points, candidates

__all__ = [
    "Citation",
    "CitedText",
    "OffsetMap",
    "Points",
    "ReferenceEntry",
    "ReferenceList",
    "citations_by_sentence",
    "read_citations",
]

# Where a marker follows the end of a sentence ("2024.[1]", "2024. [1]", '"…here." [1]').
_STOP_BEFORE = re.compile(r"[.!?。][\"'”’)\]]?[ \t]?\Z")
# Code, not a citation: an operator, a call or an attribute after the bracket or the exponent.
_CODE_AFTER = re.compile(r"[ \t]{0,3}(?:[=*/<>^+]|-[ \t]{0,3}\d)|\(|\.[a-z_]")
# What may stand between the markers of one run: "[1][3]", "[1], [3]", "¹,²".
_GAP = re.compile(r"[ \t]{0,2}[,;]?[ \t]{0,2}")
_SENTENCE_MARKS = ".,;:!?)\"'”’]"


@dataclass(frozen=True)
class OffsetMap:
    """Positions in the cleaned text → positions in the original: the cleaned text is the original's
    kept pieces end to end, piece i starting at `clean_starts[i]` there and `original_starts[i]` here."""

    clean_starts: tuple[int, ...] = (0,)
    original_starts: tuple[int, ...] = (0,)

    def original(self, position: int) -> int:
        """A boundary between a removed piece and a kept one maps to the start of the kept one."""
        piece = max(bisect_right(self.clean_starts, position) - 1, 0)
        return self.original_starts[piece] + position - self.clean_starts[piece]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """A sentence's span: its end maps after its last character, not past what was removed."""
        if end <= start:
            return self.original(start), self.original(start)
        return self.original(start), self.original(end - 1) + 1


@dataclass(frozen=True)
class Citation:
    marker: str  # as written: "[1, 3]", "([nytimes.com](https://…))", "[Data: Reports (2, 7)]"
    start: int  # the marker in the original text
    end: int
    at: int  # where its badge goes in the cleaned text: see `citations_by_sentence`
    points_to: Points
    label: str = ""  # the reference entry's label, or the GraphRAG record's id
    record: str = ""  # GraphRAG: "reports", "entities", "relationships", "sources", "claims"
    url: str | None = None  # for a reference, its entry's address when it gives one
    title: str = ""  # link text, entry title, or the name in "(Source: Reuters)"
    entry: ReferenceEntry | None = None
    unresolved: str = ""  # why the marker points nowhere ("" when it resolves), for a person
    more: bool = False  # GraphRAG's "+more": the answer was written from more than it names

    @property
    def source(self) -> str:
        """What is cited, one key per source however often it is cited: the address, else the
        GraphRAG record, else the name; "" when it points nowhere."""
        if self.unresolved:
            return ""
        if self.url:
            return self.url
        if self.points_to is Points.GRAPHRAG:
            return f"{self.record}:{self.label}"
        if self.points_to is Points.NAME:
            return f"name:{self.title}"
        if self.entry:
            return f"entry:{self.entry.label}:{self.entry.title}"
        return ""


@dataclass(frozen=True)
class CitedText:
    original: str
    text: str  # the original without markers and reference lists: the sentences to check
    citations: tuple[Citation, ...]  # in the order of the text; a marker naming n sources gives n
    references: tuple[ReferenceList, ...]
    offsets: OffsetMap

    @property
    def sources(self) -> tuple[str, ...]:
        """Distinct cited sources in the order first cited: what a cap on sources per run counts."""
        return tuple(dict.fromkeys(c.source for c in self.citations if c.source))

    @property
    def unresolved(self) -> tuple[Citation, ...]:
        return tuple(c for c in self.citations if c.unresolved)


def read_citations(text: str) -> CitedText:
    """The text without its citations, and its citations; a text without any comes back as it is."""
    code = code_mask(text)
    lists = reference_lists(text, code)
    hidden = bytearray(code)
    for listed in lists:
        hidden[listed.start : listed.end] = b"\x01" * (listed.end - listed.start)
    labels = {entry.label for listed in lists for entry in listed.entries}
    found = _accepted(text, candidates(text, hidden, labels), numbered=bool(labels))
    removals, marker_removal = _removals(text, found, lists)
    clean_at = _clean_positions(removals)
    resolve = _Resolver(lists)
    citations = [
        citation
        for index, marker in enumerate(found)
        for citation in _resolved(text, marker, clean_at[marker_removal[index]], resolve)
    ]
    cleaned, offsets = _cleaned(text, removals)
    return CitedText(text, cleaned, tuple(citations), tuple(lists), offsets)


def citations_by_sentence(citations: Sequence[Citation], sentences: Sequence[tuple[int, int]]) -> list[list[Citation]]:
    """Each sentence's citations, sentences given as (start, end) in the cleaned text, in order. A
    badge goes with the sentence that ends at it (the marker followed it), else the one that
    contains it or starts at it (the marker opened its line), else the one before it."""
    starts = [start for start, _ in sentences]
    ends = [end for _, end in sentences]
    attached: list[list[Citation]] = [[] for _ in sentences]
    if not sentences:
        return attached
    for citation in citations:
        index = bisect_left(ends, citation.at)
        if index == len(sentences) or starts[index] > citation.at:
            index = max(index - 1, 0)
        attached[index].append(citation)
    return attached


def _accepted(text: str, found: list[Found], *, numbered: bool) -> list[Found]:
    """The markers that count: every one of an unambiguous form, and bracketed numbers, carets and
    superscripts by the rules in the module's docstring."""
    runs = _runs(text, found)
    ending = [_ends_sentence(text, run) for run in runs]
    cites_with_numbers = (
        numbered or sum(1 for run, ends in zip(runs, ending, strict=True) if ends and _contextual(run)) >= 2
    )
    accepted = []
    for run, ends in zip(runs, ending, strict=True):
        code = _CODE_AFTER.match(text, run[-1].end) is not None
        accepted += [
            marker
            for marker in run
            if marker.form not in CONTEXTUAL
            or (not code and _counts(text, run[0].start, marker, ends, numbered, cites_with_numbers))
        ]
    return accepted


def _counts(text: str, start: int, marker: Found, ends: bool, numbered: bool, cites_with_numbers: bool) -> bool:
    if marker.form != "number" and not _after_word_or_stop(text, start):
        return False
    if numbered or ends:
        return True
    glued = start > 0 and not text[start - 1].isspace() and text[start - 1] not in "([{"
    return cites_with_numbers and glued


def _after_word_or_stop(text: str, start: int) -> bool:
    """A caret or superscript cites after punctuation or a word of three letters or more; after a
    digit or a short word it is an exponent or a unit (10³, m², x^2)."""
    if start == 0:
        return False
    if text[start - 1] in _SENTENCE_MARKS:
        return True
    letters = 0
    while letters < 3 and start - letters > 0 and text[start - letters - 1].isalpha():
        letters += 1
    return letters == 3


def _contextual(run: list[Found]) -> bool:
    return any(marker.form in CONTEXTUAL for marker in run)


def _ends_sentence(text: str, run: list[Found]) -> bool:
    start, end = run[0].start, run[-1].end
    return bool(_STOP_BEFORE.search(text, max(start - 3, 0), start) or STOP_AFTER.match(text, end))


def _runs(text: str, found: list[Found]) -> list[list[Found]]:
    """Markers next to each other ("[1][3]", "[1], [3]") as one run: a run ends or starts a
    sentence as a whole. A link whose text stays is a run of its own."""
    runs: list[list[Found]] = []
    for marker in found:
        previous = runs[-1][-1] if runs else None
        if (
            previous
            and previous.keep is None
            and marker.keep is None
            and _GAP.fullmatch(text, previous.end, marker.start)
        ):
            runs[-1].append(marker)
        else:
            runs.append([marker])
    return runs


def _removals(text: str, found: list[Found], lists: list[ReferenceList]) -> tuple[list[tuple[int, int]], list[int]]:
    """What is cut from the text, in order, and for each marker the index of the cut that holds its
    badge. A run is cut with the spaces before it ("blue [1]." → "blue."), or after it when it
    opens its line; a link whose text stays loses "[" and "](url)" only."""
    cuts: list[tuple[int, int]] = [(listed.start, _line_end(text, listed.end)) for listed in lists]
    badge_cuts: list[tuple[int, int]] = []
    for run in _runs(text, found):
        if run[0].keep is not None:
            marker = run[0]
            cuts.append((marker.start, marker.keep[0]))
            badge_cuts.append((marker.keep[1], marker.end))
        else:
            badge_cuts.extend([_widened(text, run[0].start, run[-1].end)] * len(run))
    cuts = _merged(cuts + badge_cuts)
    # A badge's cut may have merged with its neighbours: the badge goes where the merged cut starts.
    cut_starts = [start for start, _ in cuts]
    return cuts, [bisect_right(cut_starts, start) - 1 for start, _ in badge_cuts]


def _widened(text: str, start: int, end: int) -> tuple[int, int]:
    """A run's cut: with the parentheses around it when it is alone in them ("quiet ([1][3])."),
    and the spaces before it, and a comma before it when the sentence ends after it ("quiet,
    doi:10.1/x." → "quiet."); when it opens its line, with the spaces after it instead."""
    if start > 0 and text[start - 1] == "(" and text.startswith(")", end):
        start, end = start - 1, end + 1
    before = start
    while before > 0 and text[before - 1] in " \t":
        before -= 1
    if before == 0 or text[before - 1] == "\n":
        while end < len(text) and text[end] in " \t":
            end += 1
        return start, end
    if text[before - 1] in ",;" and STOP_AFTER.match(text, end):
        before -= 1
    return before, end


def _line_end(text: str, end: int) -> int:
    if text.startswith("\r\n", end):
        return end + 2
    return end + 1 if text.startswith("\n", end) else end


def _merged(cuts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(cuts):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _clean_positions(cuts: list[tuple[int, int]]) -> list[int]:
    """Where each cut's start lands in the cleaned text."""
    positions, removed = [], 0
    for start, end in cuts:
        positions.append(start - removed)
        removed += end - start
    return positions


def _cleaned(text: str, cuts: list[tuple[int, int]]) -> tuple[str, OffsetMap]:
    if not cuts:
        return text, OffsetMap()
    pieces, clean_starts, original_starts = [], [], []
    kept_from, length = 0, 0
    for start, end in [*cuts, (len(text), len(text))]:
        if start > kept_from or not clean_starts:
            pieces.append(text[kept_from:start])
            clean_starts.append(length)
            original_starts.append(kept_from)
            length += start - kept_from
        kept_from = end
    return "".join(pieces), OffsetMap(tuple(clean_starts), tuple(original_starts))


def _resolved(text: str, marker: Found, at: int, resolve: "_Resolver") -> list[Citation]:
    written = text[marker.start : marker.end]
    citations = []
    for pointer in marker.pointers:
        fields = {
            "label": pointer.label,
            "record": pointer.record,
            "url": pointer.url,
            "title": pointer.title,
            "unresolved": pointer.unresolved,
            "more": pointer.more,
        }
        fields.update(resolve(pointer))
        citations.append(Citation(written, marker.start, marker.end, at, pointer.points_to, **fields))
    return citations


class _Resolver:
    """A reference marker → its entry, address and title, or why it has none. Footnote markers
    look among footnote definitions first, numbers among numbered entries first; the first list
    that labels an entry so wins."""

    def __init__(self, lists: list[ReferenceList]) -> None:
        self.footnotes: dict[str, ReferenceEntry] = {}
        self.numbered: dict[str, ReferenceEntry] = {}
        for listed in lists:
            for entry in listed.entries:
                (self.footnotes if entry.footnote else self.numbered).setdefault(entry.label, entry)
        self.entries = sum(len(listed.entries) for listed in lists)

    def __call__(self, pointer: Pointer) -> dict:
        if pointer.points_to is not Points.REFERENCE or pointer.unresolved:
            return {}
        first, second = (self.footnotes, self.numbered) if pointer.footnote else (self.numbered, self.footnotes)
        entry = first.get(pointer.label) or second.get(pointer.label)
        if entry:
            return {"entry": entry, "url": entry.url, "title": entry.title}
        if not self.entries:
            return {"unresolved": "the text has no reference list"}
        if pointer.footnote:
            return {"unresolved": f"no footnote [^{pointer.label}] is defined"}
        return {"unresolved": f"no entry {pointer.label} in the reference list ({self.entries} entries)"}
