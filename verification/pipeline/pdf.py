"""A PDF → its title, text (one paragraph a line) and creation date, by pypdf. Scientific and
medical sources are often PDFs; what a PDF gives is lines as printed, so they are joined back
into paragraphs here."""

import io
import re
from datetime import date
from typing import TYPE_CHECKING

from . import lazy
from .types import FetchedDocument, Page, StepError

if TYPE_CHECKING:
    from pypdf import PdfReader

# Decompressed drawing instructions read per page and per document (see _printed_pages).
MAX_PAGE_CONTENT_BYTES = 2_000_000
MAX_DOCUMENT_CONTENT_BYTES = 8_000_000
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
    costs about 2 s of CPU per MB of its drawing instructions (its decompressed content stream),
    and a small file can inflate to hundreds of MB of them: pages over MAX_PAGE_CONTENT_BYTES
    are skipped (text pages hold far less; a huge one is a drawing, or a trap), and so are the
    pages that would take the document over MAX_DOCUMENT_CONTENT_BYTES."""
    printed, oversized, total = [], 0, 0
    for page in reader.pages[:max_pages]:
        size = _content_bytes(page)
        if size > MAX_PAGE_CONTENT_BYTES or total + size > MAX_DOCUMENT_CONTENT_BYTES:
            oversized += 1
            continue
        total += size
        printed.append(page.extract_text() or "")
    return printed, oversized


def _content_bytes(page) -> int:
    contents = page.get_contents()  # decompressed once here (milliseconds); pypdf caps each stream
    return len(contents.get_data()) if contents is not None else 0


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
