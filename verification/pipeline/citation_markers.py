"""The citation markers of an AI answer, found form by form: where each one is and what it names.
`citations` then decides which of the ambiguous ones count and resolves them against the lists.

Each form has its own pattern with bounded repetitions, scanned once over the text; where two
forms overlap, the one that starts first (then the longer) is the marker: "(Source: https://…)"
is one marker, not a URL inside one."""

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from .citation_lists import DOI, DOI_URL, MD_LINK, URL_PATTERN, cited_url, doi_url, trimmed_end


class Points(StrEnum):
    """What a citation points to."""

    URL = "url"
    DOI = "doi"  # its url is https://doi.org/<doi>
    REFERENCE = "reference"  # an entry of a reference list, which may give an address
    GRAPHRAG = "graphrag"  # a GraphRAG record (report, entity, relationship, source, claim)
    NAME = "name"  # a source named without an address: "(Source: Reuters)"


# The forms that also occur as plain text (indexes, exponents, units) and count only in context.
CONTEXTUAL = frozenset({"number", "caret", "superscript"})
# A marker naming more sources than this ("[1-5000]", a GraphRAG list of thousands) is one
# unresolved citation, so the output stays proportional to the text.
MAX_POINTERS = 20
# Numbers a marker may cite without a reference list to say so; [2024] and [0] are not citations.
MAX_UNLISTED_NUMBER = 999


@dataclass(frozen=True)
class Pointer:
    """One source a marker names, before it is resolved against the reference lists."""

    points_to: Points
    label: str = ""
    url: str | None = None
    title: str = ""
    record: str = ""
    more: bool = False
    footnote: bool = False  # a [^label]: footnote definitions are looked at first
    unresolved: str = ""


@dataclass(frozen=True)
class Found:
    start: int
    end: int
    form: str
    pointers: tuple[Pointer, ...]
    keep: tuple[int, int] | None = None  # a link's text, which stays in the sentence


# Where a citation precedes the end of its sentence or line: "2024[1].", "2024 https://x.test".
STOP_AFTER = re.compile(r"[\"'”’)\]]{0,2}(?:[.!?。](?:\s|\Z)|[ \t]*(?:\r?\n|\Z))")
_SUPERSCRIPT_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_SUPERSCRIPTS = str.maketrans(_SUPERSCRIPT_DIGITS, "0123456789")
_NUMBER = re.compile(r"(?<![\[!\\])\[(\d{1,6}(?:[ \t]{0,2}[,–—-][ \t]{0,2}\d{1,6}){0,100})\]")
_CARET = re.compile(r"(?<!\[)\^(\d{1,4})\^?(?!\d|[.,]\d)")
_SUPERSCRIPT = re.compile(rf"[{_SUPERSCRIPT_DIGITS}]{{1,6}}(?:[,˒][ \t]?[{_SUPERSCRIPT_DIGITS}]{{1,6}}){{0,50}}")
_FOOTNOTE = re.compile(r"\[\^([^\]\s]{1,100})\]")
_LENTICULAR = re.compile(r"【([^【】\n]{1,100})】")
_DATA = re.compile(r"\[Data:[ \t]{0,3}([^\[\]\n]{1,2000})\]")
_RECORDS = re.compile(r"([A-Za-z][A-Za-z ]{0,40}?)[ \t]*\(([^()]{0,1000})\)")
# [[1]](https://…): a numbered link, as You.com and Phind copy them.
_NUMBERED_LINK = re.compile(rf"\[\[(\d{{1,6}})\]\]\(<?({URL_PATTERN})>?\)")
# [Reuters][1]: a reference-style markdown link ([1][3] is two numbers, not a link).
_REF_LINK = re.compile(r"(?<![!\]])\[(?!\d{1,7}\])([^\[\]\n]{1,300})\]\[(\w{1,20})\]")
_ANY_LINK = rf"(?:\[[^\[\]\n]{{1,300}}\]\(<?{URL_PATTERN}>?\)|\[(?!\d{{1,7}}\])[^\[\]\n]{{1,300}}\]\[\w{{1,20}}\])"
# ChatGPT search: "… in 2024. ([apnews.com](https://…?utm_source=chatgpt.com), [Reuters][2])".
_SPACE = r"[ \t]{0,3}"
_PAREN_LINKS = re.compile(rf"\({_SPACE}{_ANY_LINK}(?:{_SPACE}[,;]{_SPACE}{_ANY_LINK}){{0,20}}{_SPACE}\)")
_SOURCE = re.compile(
    r"\((?:sources?|via|refs?|references?)[ \t]?:[ \t]?([^()\n]{1,500})\)"
    r"|\[(?:sources?|via|refs?|references?)[ \t]?:[ \t]?([^\[\]\n]{1,500})\]",
    re.IGNORECASE,
)
# Not inside a word or an address, nor an image's or link's target ("](https://…").
_BARE_URL = re.compile(rf"(?<![\w@.\-/])(?<!\]\(){URL_PATTERN}")
_SOURCE_PREFIX = re.compile(r"\b(?:sources?|via)[ \t]?:[ \t]?\Z", re.IGNORECASE)
# "The report is at https://…." and "Register on https://…." say where something is: the address is
# what the sentence is about, not where it comes from.
_OBJECT_BEFORE = re.compile(r"\b(?:at|on|to|visit|is|are|under|here)[ \t]{1,3}\Z", re.IGNORECASE)
_NEXT_URL = re.compile(r"[ \t]{1,3}[,;]?[ \t]{0,3}https?://")
_WRAPPERS = {"(": ")", "<": ">", "[": "]"}


def candidates(text: str, hidden: bytearray, labels: set[str]) -> list[Found]:
    """Every marker of every form, outside the `hidden` parts (code, reference lists), in order,
    none overlapping another."""
    found = [
        marker
        for finder in _FINDERS
        for marker in finder(text, labels)
        if marker.pointers and not hidden[marker.start] and not hidden[marker.end - 1]
    ]
    found.sort(key=lambda marker: (marker.start, -marker.end))
    kept: list[Found] = []
    for marker in found:
        if not kept or marker.start >= kept[-1].end:
            kept.append(marker)
    return kept


def _numbers(text: str, labels: set[str]) -> Iterator[Found]:
    for match in _NUMBER.finditer(text):
        if (pointers := _listed(match.group(1), labels)) is not None:
            yield Found(match.start(), match.end(), "number", pointers)


def _carets(text: str, labels: set[str]) -> Iterator[Found]:
    for match in _CARET.finditer(text):
        if (pointers := _listed(match.group(1), labels)) is not None:
            yield Found(match.start(), match.end(), "caret", pointers)


def _superscripts(text: str, labels: set[str]) -> Iterator[Found]:
    """¹² is the 12th source, unless the reference list has no 12th entry: then the 1st and 2nd."""
    for match in _SUPERSCRIPT.finditer(text):
        written = match.group().translate(_SUPERSCRIPTS).replace("˒", ",")
        numbers = [number.strip() for number in written.split(",")]
        if labels and any(number not in labels for number in numbers):
            numbers = [digit for number in numbers for digit in (number if number not in labels else [number])]
        if (pointers := _listed(",".join(numbers), labels)) is not None:
            yield Found(match.start(), match.end(), "superscript", pointers)


def _listed(written: str, labels: set[str]) -> tuple[Pointer, ...] | None:
    """The references "1, 3" or "1-3" names; None when one of its numbers is no citation (a year,
    0, a leading zero) unless the reference list labels an entry so."""
    numbers: list[str] = []
    for item in written.split(","):
        ends = [end.strip() for end in re.split("[–—-]", item)]
        if not all(_citable(end, labels) for end in ends):
            return None
        if len(ends) == 1:
            numbers.append(ends[0])
            continue
        first, last = int(ends[0]), int(ends[-1])
        if last < first:
            return None  # "[12-5]" is a score or a date, not a range of sources
        if last - first >= MAX_POINTERS:
            return (_too_many(written, last - first + 1),)
        numbers.extend(str(number) for number in range(first, last + 1))
    if len(numbers) > MAX_POINTERS:
        return (_too_many(written, len(numbers)),)
    return tuple(Pointer(Points.REFERENCE, label=number) for number in numbers)


def _citable(number: str, labels: set[str]) -> bool:
    return number in labels or (not number.startswith("0") and 0 < int(number or 0) <= MAX_UNLISTED_NUMBER)


def _too_many(written: str, count: int) -> Pointer:
    return Pointer(
        Points.REFERENCE,
        label=written[:40],
        unresolved=f"the marker names {count} sources; one marker is read for at most {MAX_POINTERS}",
    )


def _footnotes(text: str, labels: set[str]) -> Iterator[Found]:
    for match in _FOOTNOTE.finditer(text):
        # Copilot writes [^1^].
        label = match.group(1).removesuffix("^")
        yield Found(match.start(), match.end(), "footnote", (Pointer(Points.REFERENCE, label, footnote=True),))


def _lenticular(text: str, labels: set[str]) -> Iterator[Found]:
    """【1】, 【1†source】 (ChatGPT's browsing), 【4:0†report.pdf】 (OpenAI's file search)."""
    for match in _LENTICULAR.finditer(text):
        label, _, title = match.group(1).partition("†")
        yield Found(match.start(), match.end(), "lenticular", (Pointer(Points.REFERENCE, label.strip(), title=title),))


def _graphrag(text: str, labels: set[str]) -> Iterator[Found]:
    """[Data: Reports (2, 7, +more)], [Data: Entities (1, 3); Relationships (5)], [Data: Sources (4)]."""
    for match in _DATA.finditer(text):
        pointers = []
        for record in _RECORDS.finditer(match.group(1)):
            ids = [item.strip() for item in record.group(2).split(",")]
            more = any(item.lower().startswith("+more") for item in ids)
            name = record.group(1).strip().lower()
            pointers += [
                Pointer(Points.GRAPHRAG, label=item, record=name, more=more)
                for item in ids
                if item and not item.lower().startswith("+more")
            ]
        if not pointers:
            pointers = [Pointer(Points.GRAPHRAG, unresolved="the marker names no report, entity or source")]
        yield Found(match.start(), match.end(), "graphrag", _capped(pointers, match.group(1)))


def _capped(pointers: list[Pointer], written: str) -> tuple[Pointer, ...]:
    return tuple(pointers) if len(pointers) <= MAX_POINTERS else (_too_many(written, len(pointers)),)


def _paren_links(text: str, labels: set[str]) -> Iterator[Found]:
    """Links alone in parentheses cite, whatever their text says."""
    for match in _PAREN_LINKS.finditer(text):
        written = match.group()
        inline = [(link.start(), _link_pointer(link.group(1), link.group(2))) for link in MD_LINK.finditer(written)]
        referenced = [
            (link.start(), Pointer(Points.REFERENCE, label=link.group(2), title=link.group(1)))
            for link in _REF_LINK.finditer(written)
        ]
        pointers = [pointer for _, pointer in sorted(inline + referenced, key=lambda pair: pair[0])]
        yield Found(match.start(), match.end(), "links", _capped(pointers, written))


def _links(text: str, labels: set[str]) -> Iterator[Found]:
    """[text](url) cites url and keeps "text" in the sentence, unless the text only names the
    address (its host, the address itself, a number): then the whole link is the marker."""
    for match in MD_LINK.finditer(text):
        words, url = match.group(1), match.group(2)
        pointer = _link_pointer(words, url)
        keep = None if _names_address(words, url) else (match.start(1), match.end(1))
        yield Found(match.start(), match.end(), "link", (pointer,), keep)
    for match in _NUMBERED_LINK.finditer(text):
        yield Found(match.start(), match.end(), "link", (_link_pointer(match.group(1), match.group(2)),))
    for match in _REF_LINK.finditer(text):
        pointer = Pointer(Points.REFERENCE, label=match.group(2), title=match.group(1))
        keep = None if match.group(1).strip().isdigit() else (match.start(1), match.end(1))
        yield Found(match.start(), match.end(), "link", (pointer,), keep)


def _link_pointer(words: str, url: str) -> Pointer:
    address = cited_url(url)
    kind = Points.DOI if DOI_URL.fullmatch(url) else Points.URL
    return Pointer(kind, url=address, title=words.strip())


def _names_address(words: str, url: str) -> bool:
    words = words.strip().lower()
    try:
        host = (urlsplit(url).hostname or "").removeprefix("www.")
    except ValueError:
        host = ""
    if words.isdigit() or words == url.lower():
        return True
    words = words.removeprefix("www.")
    return bool(host) and (words == host or host.endswith("." + words))


def _sources(text: str, labels: set[str]) -> Iterator[Found]:
    """(Source: …): the addresses, DOIs or reference numbers it gives, else the name it gives."""
    for match in _SOURCE.finditer(text):
        content = match.group(1) or match.group(2)
        yield Found(match.start(), match.end(), "source", _capped(_named_in(content, labels), content))


def _named_in(content: str, labels: set[str]) -> list[Pointer]:
    if links := [_link_pointer(link.group(1), link.group(2)) for link in MD_LINK.finditer(content)]:
        return links
    addresses = []
    for address in _BARE_URL.finditer(content):
        addresses.append(_link_pointer("", _trimmed(address.group())))
    for doi in DOI.finditer(content):
        addresses.append(Pointer(Points.DOI, url=doi_url(_trimmed(doi.group(1)))))
    if addresses:
        return addresses
    if re.fullmatch(r"[\[\]\d,;\s–—-]{1,200}", content) and any(c.isdigit() for c in content):
        numbers = ",".join(re.findall(r"\d+(?:[ \t]*[–—-][ \t]*\d+)?", content))
        if listed := _listed(numbers, labels):
            return list(listed)
    return [Pointer(Points.NAME, title=" ".join(content.split()))]


def _trimmed(address: str) -> str:
    return address[: trimmed_end(address, 0, len(address))]


def _dois(text: str, labels: set[str]) -> Iterator[Found]:
    """doi:10.… wherever it is: a DOI only ever says where a sentence comes from."""
    for match in DOI.finditer(text):
        end = trimmed_end(text, match.start(1), match.end())
        doi = text[match.start(1) : end]
        start, end = _wrapped(text, match.start(), end)
        yield Found(start, end, "doi", (Pointer(Points.DOI, url=doi_url(doi)),))


def _bare_urls(text: str, labels: set[str]) -> Iterator[Found]:
    """An address cites when it ends its sentence or line ("…in 2024 https://x.test/a." or
    "(https://x.test/a)" there) or comes before another address, unless the sentence names it as
    a place ("…is at https://x.test."); a doi.org address cites anywhere."""
    for match in _BARE_URL.finditer(text):
        end = trimmed_end(text, match.start(), match.end())
        url = text[match.start() : end]
        pointer = _link_pointer("", url)
        start, end = _wrapped(text, match.start(), end)
        if prefix := _SOURCE_PREFIX.search(text, max(start - 12, 0), start):
            start = prefix.start()
        ends = STOP_AFTER.match(text, end) or _NEXT_URL.match(text, end)
        named = _OBJECT_BEFORE.search(text, max(start - 12, 0), start)
        if pointer.points_to is Points.DOI or (ends and not named):
            yield Found(start, end, "url", (pointer,))


def _wrapped(text: str, start: int, end: int) -> tuple[int, int]:
    """(https://…) and <https://…> are removed with their brackets."""
    if start > 0 and end < len(text) and _WRAPPERS.get(text[start - 1]) == text[end]:
        return start - 1, end + 1
    return start, end


_FINDERS: tuple[Callable[[str, set[str]], Iterator[Found]], ...] = (
    _numbers,
    _carets,
    _superscripts,
    _footnotes,
    _lenticular,
    _graphrag,
    _paren_links,
    _links,
    _sources,
    _dois,
    _bare_urls,
)
