"""The user's own documents as evidence: URLs they list and files they upload, checked before a
run starts (how many, how large, and what a file really is) for the form, the API and the CLI.

A file's type is sniffed from its bytes, never taken from its name or the browser's claim: a
".pdf" that holds HTML is read as HTML, and a binary that is none of the four is refused."""

import hashlib
import re
import secrets
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.core.validators import URLValidator

from verification.clients import providers
from verification.pipeline import lazy
from verification.pipeline.urls import UnsafeAddress, parse_web_address

PDF, HTML, TEXT, MARKDOWN = "application/pdf", "text/html", "text/plain", "text/markdown"
EVIDENCE_MODES = [
    ("web", "The web: search for evidence"),
    ("documents", "Only my documents: no web search"),
    ("both", "Both: the web and my documents"),
]
# In a run's settings: the mode asked for, when documents given with it made the run "both".
EVIDENCE_SWITCHED_FROM = "evidence_switched_from"
# An upload's Source URL: a random id that no web page can have. Random, not the file's hash:
# the URL is in the result JSON, and a hash would tell anyone holding a candidate file whether
# this run read it. (So each upload has its own page-cache entry, even of the same bytes.)
UPLOAD_SCHEME = "upload:"

# After leading whitespace, markup that only HTML starts with (WHATWG MIME Sniffing, "rules for
# identifying an unknown MIME type", widened to the sectioning tags hand-saved pages start with).
_HTML_START = re.compile(
    rb"\s*<(?:!doctype\s+html|html|head|body|script|iframe|h[1-6]|div|font|table|a|style|title|b|br|p|"
    rb"article|section|main|header|nav|ul|ol|meta|link|span|!--)[\s>/]",
    re.IGNORECASE,
)
_XML_DECLARATION = re.compile(rb"\s*<\?xml[^>]*\?>", re.IGNORECASE)
_MARKDOWN = re.compile(
    r"^(?:#{1,6} \S|[-*+] \S|\d+\. \S|> \S|```)|\[[^\]\n]+\]\([^)\s]+\)|\*\*[^*\n]+\*\*", re.MULTILINE
)
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


@dataclass(frozen=True)
class DocumentDraft:
    """A document a run will read: a web address, or an upload (its name, sniffed type and bytes)."""

    url: str
    host: str = ""
    name: str = ""
    content_type: str = ""
    body: bytes = b""

    @property
    def is_upload(self) -> bool:
        return is_upload(self.url)

    @property
    def identity(self) -> str:
        """What makes two drafts the same document: the address, or the bytes of a file."""
        return "sha256:" + hashlib.sha256(self.body).hexdigest() if self.is_upload else self.url


def looks_binary(text: str) -> bool:
    """NUL bytes or lone surrogates (which no encoding can store), or more than 5% control or
    undecodable characters: not text a person wrote."""
    if "\x00" in text or any("\ud800" <= ch <= "\udfff" for ch in text):
        return True
    odd = sum(
        1 for ch in text if ch == "\ufffd" or (unicodedata.category(ch) in ("Cc", "Cs", "Co") and ch not in "\t\n\r")
    )
    return odd > 0.05 * len(text)


def is_upload(url: str) -> bool:
    return url.startswith(UPLOAD_SCHEME)


def sniff(body: bytes) -> str | None:
    """application/pdf, text/html, text/markdown or text/plain from the bytes alone; None for
    anything else."""
    # Readers accept the header anywhere in the first kilobyte, after junk some writers put first.
    if b"%PDF-" in body[:1024]:
        return PDF
    start = body[:4096].removeprefix(_BOMS[0])
    if _HTML_START.match(_XML_DECLARATION.sub(b"", start, count=1)):
        return HTML
    if b"\x00" in body and not body.startswith(_BOMS[1:]):  # UTF-16 text carries a byte-order mark
        return None
    # The page reader (trafilatura, lxml) is imported by the first upload, not by every process.
    text = lazy.load("verification.pipeline.extract").decode(body, None)
    if not text.strip() or looks_binary(text):
        return None
    return MARKDOWN if _MARKDOWN.search(text[:20_000]) else TEXT


def url_document(url: str) -> DocumentDraft:
    url = url.strip()
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        raise ValidationError(f"{url[:200]} is not a web address (http:// or https://).", code="url") from None
    try:
        parse_web_address(url)  # as the fetcher will read it: refused now rather than when fetched
    except UnsafeAddress as error:
        raise ValidationError(f"{url[:200]}: {error}.", code="url") from None
    return DocumentDraft(url=url, host=providers.host_of(url))


def uploaded_document(upload: UploadedFile) -> DocumentDraft:
    name = (upload.name or "upload")[:255]
    limit = settings.MAX_UPLOAD_BYTES
    if limit and upload.size > limit:
        raise ValidationError(
            f"{name} is {_megabytes(upload.size)}; a file may be at most {_megabytes(limit)} (MAX_UPLOAD_BYTES).",
            code="too_large",
        )
    body = b"".join(upload.chunks())
    content_type = sniff(body)
    if content_type is None:
        raise ValidationError(f"{name} is not a PDF, HTML, Markdown or text file.", code="file_type")
    return DocumentDraft(url=UPLOAD_SCHEME + secrets.token_hex(16), name=name, content_type=content_type, body=body)


def url_lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def checked(drafts: list[DocumentDraft], mode: str) -> list[DocumentDraft]:
    """The run's documents, each once (the same URL or the same bytes twice count once),
    within MAX_DOCUMENTS, and at least one when the mode reads documents only."""
    unique = list({draft.identity: draft for draft in drafts}.values())
    limit = settings.MAX_DOCUMENTS
    if limit and len(unique) > limit:
        raise ValidationError(
            f"{len(unique)} documents were given; a run reads at most {limit} (MAX_DOCUMENTS).", code="too_many"
        )
    if mode == "documents" and not unique:
        raise ValidationError(
            "The evidence mode “documents” checks the text against your documents only: give at least one URL or file.",
            code="no_documents",
        )
    return unique


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB"
