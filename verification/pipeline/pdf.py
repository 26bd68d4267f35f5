"""A PDF → its title, text (one paragraph a line) and creation date, by pypdf. Scientific and
medical sources are often PDFs; what a PDF gives is lines as printed, so they are joined back
into paragraphs here."""

import io
import re
import zlib
from collections import Counter
from datetime import date
from typing import TYPE_CHECKING

from . import lazy
from .types import FetchedDocument, Page, StepError

if TYPE_CHECKING:
    from pypdf import PdfReader

# Decompressed drawing instructions read per page and per document (see _printed_pages).
MAX_PAGE_CONTENT_BYTES = 2_000_000
MAX_DOCUMENT_CONTENT_BYTES = 8_000_000
# Reading a form costs more than its instructions: pypdf sets up its fonts and text state each
# time it is drawn, about 1 ms (as long as ~500 bytes of instructions take to read), and as much
# again for each font in its resources. A form without resources holds no text to set up; each
# drawing of it still counts for a little, which also bounds how many forms the count visits.
_FORM_SETUP_BYTES = 500
_BARE_FORM_BYTES = 16
# A name in a content stream, up to the delimiters pypdf ends names at.
_NAME = re.compile(rb"/([^\s()<>\[\]{}/%]*)")
# The PDF header may follow a little junk (the specification allows it in the first 1024 bytes).
_HEADER_WITHIN = 1024
_SENTENCE_END = re.compile(r"[.!?:;…)\]\"'”’]$")
_HYPHENATED = re.compile(r"[^\W\d_]-$")
# Titles some producers write in place of a real one: the file's name, or a placeholder.
_NOT_A_TITLE = re.compile(r"^(untitled|microsoft word - .*|.*\.(docx?|pdf|tex|odt|rtf|indd))$", re.IGNORECASE)


def is_pdf(document: FetchedDocument) -> bool:
    """By its bytes as much as its label: servers send PDFs as application/octet-stream, or
    even text/html, and uploads carry whatever type the browser guessed."""
    return document.content_type == "application/pdf" or b"%PDF-" in document.body[:_HEADER_WITHIN]


def read_pdf(document: FetchedDocument, *, max_pages: int) -> Page:
    """The first `max_pages` pages (like a long web page's first bytes: the gist comes early)."""
    reader = _open(document.body)
    try:
        printed, oversized = _printed_pages(reader, max_pages)
    except Exception as error:  # pypdf raises many kinds of errors on damaged streams
        raise StepError(f"the PDF could not be read ({_describe(error)})", transient=False) from error
    text = "\n".join(paragraph for page in printed for paragraph in paragraphs(page))
    if not any(character.isalnum() for character in text):
        if oversized:
            raise StepError(
                f"the PDF's pages are too large to read ({oversized} of them hold over "
                f"{MAX_PAGE_CONTENT_BYTES // 1_000_000} MB of drawing instructions each, or the document over "
                f"{MAX_DOCUMENT_CONTENT_BYTES // 1_000_000} MB in all)",
                transient=False,
            )
        raise StepError("the PDF has no text (a scanned document?)", transient=False)
    return Page(
        url=document.url,
        final_url=document.final_url,
        title=_title(reader, first_line=next(line for page in printed for line in page.splitlines() if line.strip())),
        text=text,
        published=_created(reader),
    )


def _printed_pages(reader: "PdfReader", max_pages: int) -> tuple[list[str], int]:
    """The text of each page read, and how many pages were too large to read. A page's text
    costs about 2 s of CPU per MB of the drawing instructions it reads (see _drawing_bytes), and
    a small file can inflate to hundreds of MB of them: pages over MAX_PAGE_CONTENT_BYTES are
    skipped (text pages hold far less; a huge one is a drawing, or a trap), and so are the pages
    that would take the document over MAX_DOCUMENT_CONTENT_BYTES."""
    printed, oversized, total = [], 0, 0
    for page in reader.pages[:max_pages]:
        room = min(MAX_PAGE_CONTENT_BYTES, MAX_DOCUMENT_CONTENT_BYTES - total)
        size = _drawing_bytes(page, room)
        if size > room:
            oversized += 1
            continue
        total += size
        printed.append(page.extract_text() or "")
    return printed, oversized


def _drawing_bytes(page, at_most: int) -> int:
    """The drawing instructions reading `page` walks through: its content streams, and each form
    XObject they draw (any XObject but an image), every time it is drawn; forms drawing forms
    multiply. A page of 44 bytes that draws a 1 MB form 400 times reads 400 MB. Counted up to
    `at_most` (more is at_most + 1), inflating no stream further than that."""
    contents = _entry(page, "/Contents")
    parts, size = [], 0
    for stream in contents if isinstance(contents, list) else [contents]:
        stream = stream.get_object() if stream is not None else None
        if hasattr(stream, "get_data"):
            part = _inflated(stream, at_most - size)
            if part is None:
                return at_most + 1
            parts.append(part)
            size += len(part)
    # Joined as the parser joins them: a name cannot run on into the next stream.
    resources = _resources(page)
    return _Forms(resources).walked(b"\n".join(parts), page, resources, at_most)


class _Forms:
    """The forms drawn on one page, counted as the parser will read them. Each form is inflated,
    and the forms it draws in turn are found, once however often it is drawn."""

    def __init__(self, page_resources: dict) -> None:
        self._page_resources = page_resources
        self._inflated: dict[int, tuple[object, bytes]] = {}  # id(form) → (form, its data)
        self._drawn: dict[int, list[tuple[object, int]]] = {}  # id(page or form) → [(form, times)]
        self._drawing: set[int] = set()  # the forms being read around the one being read

    def walked(self, data: bytes, owner, resources: dict, at_most: int) -> int:
        """`data`'s bytes (`owner`'s instructions) and those of the forms it draws, up to `at_most`."""
        spent = len(data)
        for form, times in self._draws(data, owner, resources):
            if spent > at_most:
                break
            if id(form) not in self._drawing:  # the parser draws no form inside itself
                spent += times * self._form_bytes(form, (at_most - spent) // times)
        return min(spent, at_most + 1)

    def _form_bytes(self, form, at_most: int) -> int:
        """What one drawing of `form` reads, up to `at_most`."""
        own = _resources(form)
        if own:
            fonts = _entry(own, "/Font")
            setup = _FORM_SETUP_BYTES * (1 + (len(fonts) if isinstance(fonts, dict) else 0))
        else:
            setup = _BARE_FORM_BYTES
        if setup > at_most:
            return at_most + 1
        if id(form) not in self._inflated:
            data = _inflated(form, at_most - setup)
            if data is None:
                return at_most + 1
            self._inflated[id(form)] = (form, data)
        self._drawing.add(id(form))
        try:
            # An old form without resources may use the page's (PDF 1.7, 7.8.3).
            resources = own or self._page_resources
            return setup + self.walked(self._inflated[id(form)][1], form, resources, at_most - setup)
        finally:
            self._drawing.discard(id(form))

    def _draws(self, data: bytes, owner, resources: dict) -> list[tuple[object, int]]:
        """Each form `data` draws, and how often. Every name counts as a drawing of the form it
        names, wherever it stands: the parser draws the first operand before a Do, so `/Fm0 1 2
        Do` draws /Fm0 too; a name in a string or a comment only overcounts."""
        if id(owner) not in self._drawn:
            forms = _forms(resources)
            drawn = _names(data, forms).items() if forms else ()
            self._drawn[id(owner)] = [(forms[name], times) for name, times in drawn]
        return self._drawn[id(owner)]


def _inflated(stream, at_most: int) -> bytes | None:
    """The stream's data, or None when it holds over `at_most` bytes. A stream deflated alone
    (nearly every content stream) is inflated no further than that: a bomb is measured without
    going off. Other filters are pypdf's, within its own limits."""
    if _entry(stream, "/Filter") in ("/FlateDecode", ["/FlateDecode"]) and "/DecodeParms" not in stream:
        try:
            # pypdf keeps a stream's bytes as read, still encoded, in `_data`.
            data = zlib.decompressobj().decompress(stream._data, at_most + 1)
        except zlib.error:
            pass  # damaged: pypdf recovers what it can
        else:
            return data if len(data) <= at_most else None
    data = stream.get_data()
    return data if len(data) <= at_most else None


def _resources(owner) -> dict:
    """A page's or a form's resources, its own or inherited from its /Parent, as the parser finds
    them; {} when there are none."""
    seen = set()
    while isinstance(owner, dict) and id(owner) not in seen:
        seen.add(id(owner))
        if "/Resources" in owner:
            resources = _entry(owner, "/Resources")
            return resources if isinstance(resources, dict) else {}
        owner = _entry(owner, "/Parent")
    return {}


def _forms(resources: dict) -> dict:
    """The XObjects the parser reads as forms, by name: all but images."""
    xobjects = _entry(resources, "/XObject")
    if not isinstance(xobjects, dict):
        return {}
    found = {name: _entry(xobjects, name) for name in xobjects}
    return {name: x for name, x in found.items() if hasattr(x, "get_data") and _entry(x, "/Subtype") != "/Image"}


def _entry(dictionary, key: str):
    """`dictionary[key]`, resolved (pypdf resolves on [] but not on get); None when missing."""
    value = dictionary.get(key) if isinstance(dictionary, dict) else None
    return value.get_object() if value is not None else None


def _names(data: bytes, wanted: dict) -> Counter:
    """How often `data` names each of the `wanted` names, however it spells them (`/F#6Dm0` is
    /Fm0)."""
    pdf_name = lazy.load("pypdf").generic.NameObject
    counted = Counter()
    for raw, times in Counter(_NAME.findall(data)).items():
        if raw.isascii() and b"#" not in raw:
            name = "/" + raw.decode()
        else:  # as pypdf reads it
            name = _spelt(pdf_name, pdf_name.unnumber(b"/" + raw))
        if name in wanted:
            counted[name] += times
    return counted


def _spelt(pdf_name, name: bytes) -> str:
    for charset in pdf_name.CHARSETS:
        try:
            return name.decode(charset)
        except UnicodeDecodeError:
            continue
    return name.decode("charmap")  # as pypdf does, when it is not strict


def _open(body: bytes) -> "PdfReader":
    try:
        # pypdf is imported by the first PDF: the processes that only check for one (is_pdf) and
        # the pool's processes, most of which never read one, start without it.
        reader = lazy.load("pypdf").PdfReader(io.BytesIO(body))
        # Many PDFs are encrypted with an empty user password only to forbid copying or printing:
        # they open for reading, as in any viewer.
        if reader.is_encrypted and not reader.decrypt(""):
            raise StepError("the PDF is protected by a password", transient=False)
        len(reader.pages)  # the page tree is read lazily; a broken one fails here, not later
    except StepError:
        raise
    except Exception as error:  # truncated files, bad cross-references, unsupported encryption
        raise StepError(f"the PDF could not be read ({_describe(error)})", transient=False) from error
    return reader


def _describe(error: Exception) -> str:
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message[:120]}" if message else type(error).__name__


def paragraphs(printed: str) -> list[str]:
    """Printed lines → paragraphs. A line that ends a sentence, or stops well short of the
    page's usual line length (a heading, a paragraph's last line), ends its paragraph; a word
    hyphenated across lines is joined."""
    lines = [" ".join(line.split()) for line in printed.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return []
    # The upper quartile: a page of headings and short lines would drag a median down.
    lengths = sorted(len(line) for line in lines)
    full_width = lengths[len(lengths) * 3 // 4]
    found, current = [], ""
    for line in lines:
        if current and _HYPHENATED.search(current) and line[0].islower():
            current = current[:-1] + line
        else:
            current = f"{current} {line}" if current else line
        ends_paragraph = _SENTENCE_END.search(line) or len(line) < 0.6 * full_width
        if ends_paragraph and not _HYPHENATED.search(line):
            found.append(current)
            current = ""
    if current:
        found.append(current)
    return found


def _title(reader: "PdfReader", *, first_line: str) -> str:
    """The title the document declares, unless it is a file name or a placeholder; else its
    first printed line, which on papers and reports is the title."""
    try:
        declared = " ".join(str((reader.metadata or {}).get("/Title") or "").split())
    except Exception:  # a malformed info dictionary: the first line will do
        declared = ""
    if declared and not _NOT_A_TITLE.match(declared):
        return declared
    return " ".join(first_line.split())[:200]


def _created(reader: "PdfReader") -> date | None:
    try:
        created = reader.metadata.creation_date if reader.metadata else None
    except Exception:  # an unparseable date string is no date, not a broken document
        return None
    return created.date() if created else None
