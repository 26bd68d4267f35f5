"""Real PDFs for tests, written by pypdf here (no third-party documents in the repository)."""

import io
import zlib
from datetime import datetime

from pypdf import PdfWriter
from pypdf.generic import ContentStream, DictionaryObject, NameObject, NumberObject, StreamObject


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    pages: list[list[str]],
    *,
    title: str | None = None,
    created: datetime | None = None,
    password: str | None = None,
    owner_password: str = "owner",
) -> bytes:
    """One page per list of printed lines (Helvetica 11 pt, top to bottom); an empty list is a
    page with no text layer, as a scanned page is."""
    writer = PdfWriter()
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
                NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
            }
        )
    )
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        shown = "".join(f"({_escape(line)}) Tj 0 -14 Td " for line in lines)
        stream = ContentStream(None, writer)
        stream.set_data(f"BT /F1 11 Tf 72 740 Td {shown}ET".encode("latin-1") if lines else b"")
        page[NameObject("/Contents")] = writer._add_object(stream)
    metadata = {}
    if title is not None:
        metadata["/Title"] = title
    if created is not None:
        metadata["/CreationDate"] = created.strftime("D:%Y%m%d%H%M%S")
    if metadata:
        writer.add_metadata(metadata)
    if password is not None:
        # RC4 needs no cryptography package; what the reader meets is the same either way.
        writer.encrypt(user_password=password, owner_password=owner_password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def inflate_page(pdf: bytes, page_index: int, *, megabytes: float) -> bytes:
    """The PDF with one page's content replaced by a decompression bomb: `megabytes` of text
    drawing instructions (one character each) that compress to a few KB, as a hostile file
    would hold."""
    from pypdf import PdfReader

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    drawn = b"(x) Tj 1 0 Td " * int(megabytes * 1_000_000 / 14)
    stream = StreamObject()
    stream._data = zlib.compress(b"BT /F1 11 Tf 72 740 Td " + drawn + b"ET", 9)
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    stream[NameObject("/Length")] = NumberObject(len(stream._data))
    writer.pages[page_index][NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
