"""The reference lists of an AI answer ("Sources:", "References:", "Citations:", markdown footnote
definitions, a numbered list of addresses at its end) and the one reading of a cited address.

Half of `citations`: the lists are found first, line by line, so that their lines are never read
as sentences nor searched for markers, and the markers of the text can be resolved against them.
Every pattern here has bounded repetitions and each line is read once: a 10,000-line list costs
what its length costs."""

import re
from collections.abc import Iterator
from dataclasses import dataclass

# Headings that open a reference list, compared once bold, '#' and the colon are stripped. "Notes"
# and "Links" are left out: under them an answer as often goes on with its own text.
HEADINGS = frozenset(
    {
        "source",
        "sources",
        "reference",
        "references",
        "reference list",
        "citation",
        "citations",
        "works cited",
        "bibliography",
        "footnotes",
        "sources and related content",
        # The same in the languages factsite checks answers in (docs/languages.md): an answer in
        # German ends with "Quellen:", one in Chinese with "参考资料：".
        *("quelle", "quellen", "literatur", "einzelnachweise", "referenzen", "belege"),
        *("fuente", "fuentes", "referencia", "referencias", "bibliografía"),
        *("références", "référence", "bibliographie"),
        *("fonte", "fonti", "riferimenti", "bibliografia", "fontes", "referências"),
        *("来源", "資料來源", "参考资料", "參考資料", "参考文献", "參考文獻", "出典", "出所", "引用"),
        *("المصادر", "المراجع", "مصادر", "مراجع"),
        *("स्रोत", "संदर्भ", "संदर्भ सूची"),
    }
)
# A heading that may also head a list of where money or goods come from: its list needs an address.
_NEED_ADDRESS = frozenset({"source", "sources", "quelle", "quellen", "fuente", "fuentes", "fonte", "fonti", "fontes"})
_DOI = r"10\.\d{4,9}/[^\s\"<>\[\]]{1,300}"
# A scheme is required: "example.com" alone is as often a word of the sentence as an address.
# One level of balanced parentheses, as in https://en.wikipedia.org/wiki/Tram_(disambiguation).
URL_PATTERN = r"https?://[^\s<>\[\]()\"'`]{1,4000}(?:\([^\s<>\[\]()\"'`]{0,200}\)[^\s<>\[\]()\"'`]{0,2000})?"
URL = re.compile(URL_PATTERN)
DOI_URL = re.compile(rf"https?://(?:dx\.)?doi\.org/({_DOI})", re.IGNORECASE)
# "doi:10.1038/…", "DOI 10.1038/…" and "DOI: 10.1038/…".
DOI = re.compile(rf"\bdoi:?[ \t]?({_DOI})", re.IGNORECASE)
MD_LINK = re.compile(rf"(?<!!)\[([^\[\]\n]{{1,500}})\]\(<?({URL_PATTERN})>?\)")
# Trailing characters that end the sentence around an address rather than belong to it.
_TRAILING = ".,;:!?'\"*_"

_LINE_LABEL = re.compile(
    r"""[ \t]{0,3}
    (?: \[\^(?P<foot>[^\]\s]{1,100})\]:             # [^1]: a markdown footnote definition
      | \[(?P<bracket>\w{1,20})\](?=[\s:]|$):?      # [1] as Perplexity copies, [1]: a link definition
      | (?P<number>\d{1,6})[.)](?=\s|$)             # 1.  or  1)
      | \((?P<paren>\d{1,6})\)(?=\s|$)               # (1) as Copilot copies
      | \^(?P<caret>\d{1,6})(?=\s|$)
      | (?P<sup>[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,6})(?=\s|$)
      | (?P<bullet>[-*•+])(?=\s)
    )[ \t]*""",
    re.VERBOSE,
)
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
_INLINE_HEADING = re.compile(
    r"[ \t]{0,3}(?:\*\*|__)?([^\W\d_](?:[^\W\d_]| ){0,30}?) ?(?:\*\*|__)?[:：](?:\*\*|__)?[ \t]*(?=\S)"
)
_INLINE_LABEL = re.compile(r"\[(\d{1,6})\]")
_FENCE = re.compile(r"[ \t]{0,3}(?:```|~~~)")


@dataclass(frozen=True)
class ReferenceEntry:
    # As written, without its brackets, caret or period ("1", "a", "note"); an unlabelled entry
    # (a bullet, a bare line) is given its position in the list, as markers count them.
    label: str
    title: str  # what the entry says besides its address: a title, an author and year, a site
    url: str | None  # `cited_url` of the address or DOI it gives, if any
    start: int  # the entry's lines in the original text
    end: int
    footnote: bool = False  # a markdown footnote definition, which only [^label] cites first


@dataclass(frozen=True)
class ReferenceList:
    heading: str  # the heading line as written; "" for footnote definitions or a list without one
    start: int  # from the heading (or first entry) to the end of the last entry's line
    end: int
    entries: tuple[ReferenceEntry, ...]


def cited_url(url: str) -> str:
    """An address as it is cited: tracking parameters (utm_*) dropped, everything else kept as
    written; a doi.org address in the one form https://doi.org/<doi>."""
    if doi := DOI_URL.fullmatch(url):
        return doi_url(doi.group(1))
    base, hash_sign, fragment = url.partition("#")
    path, question, query = base.partition("?")
    if question:
        kept = [part for part in query.split("&") if part and not part.lower().startswith("utm_")]
        base = path + ("?" + "&".join(kept) if kept else "")
    return base + hash_sign + fragment


def doi_url(doi: str) -> str:
    return "https://doi.org/" + doi


def trimmed_end(text: str, start: int, end: int) -> int:
    """Where an address found greedily in text[start:end] really ends: a full stop, a comma, a
    closing quote or an unbalanced parenthesis after it belongs to the sentence, not the address."""
    while end > start:
        last = text[end - 1]
        if last in _TRAILING or (last == ")" and text.count("(", start, end) < text.count(")", start, end)):
            end -= 1
        else:
            return end
    return end


def code_mask(text: str) -> bytearray:
    """1 for every character inside a fenced code block or an inline `code` span, where brackets
    and carets are code (array[1], x^2), never citations."""
    mask = bytearray(len(text))
    fence_start = None
    for start, end, _ in lines(text):
        if _FENCE.match(text, start, end):
            if fence_start is None:
                fence_start = start
            else:
                mask[fence_start:end] = b"\x01" * (end - fence_start)
                fence_start = None
    if fence_start is not None:
        mask[fence_start:] = b"\x01" * (len(text) - fence_start)
    for span in re.finditer(r"`[^`\n]{1,2000}`", text):
        mask[span.start() : span.end()] = b"\x01" * (span.end() - span.start())
    return mask


def lines(text: str) -> Iterator[tuple[int, int, int]]:
    """(start, end without the line break, start of the next line) of every line."""
    start = 0
    while start < len(text):
        newline = text.find("\n", start)
        if newline < 0:
            yield start, len(text), len(text)
            return
        end = newline - 1 if newline > start and text[newline - 1] == "\r" else newline
        yield start, end, newline + 1
        start = newline + 1


def reference_lists(text: str, code: bytearray) -> list[ReferenceList]:
    """Every reference list of the text, in order: under a heading (the heading and the entry lines
    that follow it, blank lines between them allowed, up to the first line that is not an entry),
    markdown footnote definitions wherever they are, and a list without a heading at the very end
    whose every entry is labelled and gives an address."""
    rows = list(lines(text))
    found: list[ReferenceList] = []
    index = 0
    while index < len(rows):
        if code[rows[index][0]]:
            index += 1
            continue
        listed, index = _list_at(text, rows, index)
        if listed:
            found.append(listed)
    last = found[-1].end if found else 0
    if trailing := _trailing_list(text, rows, last, code):
        found.append(trailing)
    return found


def _list_at(text: str, rows: list[tuple[int, int, int]], index: int) -> tuple[ReferenceList | None, int]:
    """The list that starts on line `index`, if one does, and the line after it."""
    start, end, _ = rows[index]
    line = text[start:end]
    if (label := _LINE_LABEL.match(line)) and label.group("foot"):
        entries, after = _entries(text, rows, index, headed=False, footnotes_only=True)
        return ReferenceList("", start, entries[-1].end, tuple(entries)), after
    if inline := _inline_list(text, start, end):
        return inline, index + 1
    heading = _heading(line)
    # Copilot heads its list "Source: Conversation with Copilot, 5/20/2024".
    worded = not heading and _worded_heading(text, start, end)
    if heading or worded:
        entries, after = _entries(text, rows, index + 1, headed=True)
        # "Sources:" over "- Federal grants (40%)" lists where money comes from: a list of sources
        # is one when an entry gives an address. A bibliography may give none.
        needs_address = worded or heading in _NEED_ADDRESS
        if entries and (not needs_address or any(entry.url for entry in entries)):
            return ReferenceList(line.strip(), start, entries[-1].end, tuple(entries)), after
    return None, index + 1


def _heading(line: str) -> str:
    """The heading's words ("sources") when the line is one, else ""."""
    words = line.strip().strip("#*_ \t").rstrip(":：").strip("*_ \t").lower()
    return words if len(line) < 80 and words in HEADINGS else ""


def _worded_heading(text: str, start: int, end: int) -> bool:
    heading = _INLINE_HEADING.match(text, start, end)
    return bool(heading) and heading.group(1).strip().lower() in HEADINGS


def _inline_list(text: str, start: int, end: int) -> ReferenceList | None:
    """'Sources: [1] https://… [2] https://…' on one line: a list only when what follows the
    heading gives addresses, DOIs or [n] labels (else 'Source: the ministry said…' is a sentence)."""
    heading = _INLINE_HEADING.match(text, start, end)
    if not heading or heading.group(1).strip().lower() not in HEADINGS:
        return None
    body_start = heading.end()
    labels = list(_INLINE_LABEL.finditer(text, body_start, end))
    if labels:
        ends = [label.start() for label in labels[1:]] + [end]
        cuts = [(label.group(1), label.end(), cut) for label, cut in zip(labels, ends, strict=True)]
    else:
        cuts = [(str(i), m.start(), m.end()) for i, m in enumerate(_addresses(text, body_start, end), start=1)]
    entries = [_entry(text, label, s, e, s, e) for label, s, e in cuts]
    if not any(entry.url for entry in entries):
        return None
    return ReferenceList(text[start : heading.end()].strip(), start, end, tuple(entries))


def _addresses(text: str, start: int, end: int) -> list[re.Match]:
    return list(URL.finditer(text, start, end)) or list(DOI.finditer(text, start, end))


def _entries(
    text: str, rows: list[tuple[int, int, int]], index: int, *, headed: bool, footnotes_only: bool = False
) -> tuple[list[ReferenceEntry], int]:
    """The entries from line `index` on, and the index of the first line after them. An indented
    line after an entry goes on with that entry (a long title wrapped, its address below it)."""
    # [label, start, body start, end, footnote] of each entry, read once its last line is known.
    drafts: list[list] = []
    after = index
    while index < len(rows):
        start, end, _ = rows[index]
        line = text[start:end]
        if not line.strip():
            index += 1
            continue
        label = _LINE_LABEL.match(line)
        if drafts and line[:1] in " \t" and not label:
            drafts[-1][3] = end
        elif footnotes_only and not (label and label.group("foot")):
            break
        else:
            has_address = bool(MD_LINK.search(line) or _addresses(text, start, end))
            if not (label or (headed and has_address)) or not (headed or footnotes_only or has_address):
                break
            written = (_label_of(label) if label else "") or str(len(drafts) + 1)
            body = start + label.end() if label else start
            drafts.append([written, start, body, end, bool(label and label.group("foot"))])
        index += 1
        after = index
    entries = [_entry(text, label, start, end, body, end, footnote) for label, start, body, end, footnote in drafts]
    return entries, after


def _label_of(label: re.Match) -> str:
    for name in ("foot", "bracket", "number", "paren", "caret"):
        if label.group(name):
            return label.group(name)
    if label.group("sup"):
        return label.group("sup").translate(_SUPERSCRIPTS)
    return ""  # a bullet: numbered by its position


def _entry(
    text: str, label: str, start: int, end: int, body_start: int, body_end: int, footnote: bool = False
) -> ReferenceEntry:
    """An entry's address (a markdown link's, else the first address, else its DOI) and its title
    (the link's text, else what the line says besides the address)."""
    body = text[body_start:body_end]
    url, title = None, body
    if link := MD_LINK.search(body):
        url, title = link.group(2), link.group(1)
    elif address := URL.search(body):
        cut = trimmed_end(body, address.start(), address.end())
        url, title = body[address.start() : cut], _without(body, address.start(), cut)
    elif doi := DOI.search(body):
        cut = trimmed_end(body, doi.start(1), doi.end())
        url, title = doi_url(body[doi.start(1) : cut]), _without(body, doi.start(), cut)
    title = " ".join(title.split()).strip(" -–—:|,;\"'*_()<>")
    return ReferenceEntry(label, title, cited_url(url) if url else None, start, end, footnote)


def _without(body: str, start: int, end: int) -> str:
    """The entry's words around its address; the full stop that closed the address goes with it."""
    return body[:start] + body[end:].lstrip(".,;:")


def _trailing_list(text: str, rows: list[tuple[int, int, int]], after: int, code: bytearray) -> ReferenceList | None:
    """A list without a heading at the very end: its entries labelled, one a line, each giving an
    address. A numbered list of plain words at the end is the answer's own list, and is left alone."""
    first = len(rows)
    for index in range(len(rows) - 1, -1, -1):
        start, end, _ = rows[index]
        if start < after:
            break
        line = text[start:end]
        if not line.strip():
            continue
        label = _LINE_LABEL.match(line)
        if code[start] or not label or label.group("foot"):
            break
        if not (MD_LINK.search(line) or _addresses(text, start, end)):
            break
        first = index
    if first == len(rows):
        return None
    entries, _ = _entries(text, rows, first, headed=False)
    return ReferenceList("", entries[0].start, entries[-1].end, tuple(entries)) if entries else None
