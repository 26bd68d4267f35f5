"""A fetched document → its title, main text (one block — paragraph, list item, heading — a
line) and publication date. Web pages by trafilatura, PDFs by pypdf (pdf.py)."""

import re
from datetime import date
from typing import NamedTuple

import trafilatura
from charset_normalizer import from_bytes
from lxml.html import HtmlElement

from . import html_meta, pdf
from .types import FetchedDocument, Fetcher, Page, StepError

# Pages of PDFs read at most (PDF_MAX_PAGES): a 500-page report would hold a CPU process for
# many seconds, and the gist of a document comes early.
PDF_MAX_PAGES = 50
# Below this much body text, the page's description is read too: on a short page (a statement,
# a post of two lines) it is often the only other thing the page says.
SHORT_TEXT_CHARS = 80
# trafilatura's blocks (its own XML vocabulary); table cells keep a line each, as before.
BLOCK_TAGS = frozenset("head p item list quote code table row cell lb".split())
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class HtmlReading(NamedTuple):
    title: str
    text: str
    published: date | None


def fetch_page(fetcher: Fetcher, url: str) -> Page:
    return read_document(fetcher.fetch(url))


def read_document(document: FetchedDocument, *, pdf_max_pages: int = PDF_MAX_PAGES) -> Page:
    """The CPU half of `fetch_page` (decoding and parsing), apart so that it can run in
    another process than the download. Uploaded documents come through here too."""
    if pdf.is_pdf(document):
        return pdf.read_pdf(document, max_pages=pdf_max_pages)
    text = decode(document.body, document.charset)
    if document.content_type == "text/plain":
        return _page(document, HtmlReading(title="", text=text, published=None))
    return _page(document, read_html(text))


def read_html(html: str) -> HtmlReading:
    if not html.strip():
        raise StepError("the page is empty", transient=False)
    tree = _parse(html)
    # Title and date first: the extractor prunes the tree it is given.
    title, published = html_meta.page_title(tree), html_meta.published_date(tree)
    text = extract_main_text(tree)
    if len(_tidy(text)) < SHORT_TEXT_CHARS:
        summary = html_meta.description(tree)
        if summary and summary not in _tidy(text):
            text = f"{text}\n{summary}"
    return HtmlReading(title=title, text=text, published=published)


def _page(document: FetchedDocument, reading: HtmlReading) -> Page:
    """A page is kept however short its text, as long as it has some: a one-paragraph statement
    is evidence too."""
    text = _tidy(reading.text)
    if not any(character.isalnum() for character in text):
        raise StepError("the page has no readable text", transient=False)
    return Page(
        url=document.url,
        final_url=document.final_url,
        title=" ".join(reading.title.split()),
        text=text,
        published=reading.published,
    )


def _tidy(text: str) -> str:
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def decode(body: bytes, charset: str | None) -> str:
    """Bytes → text: the header's charset, else the page's <meta>, else UTF-8, else a guess."""
    for candidate in (charset, _meta_charset(body), "utf-8"):
        if not candidate:
            continue
        try:
            return body.decode(candidate)
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode(_guess_encoding(body[:200_000]), errors="replace")


def _guess_encoding(sample: bytes) -> str:
    """charset_normalizer's guess, except that windows-1252 wins a tie: undeclared pages are
    mostly Western European, and cp1250 (which it often ties with) turns "très" into "trčs"."""
    matches = from_bytes(sample)
    best = matches.best()
    if best is None:
        return "cp1252"
    cp1252 = next((m for m in matches if m.encoding == "cp1252"), None)
    if cp1252 is not None and cp1252.chaos <= best.chaos:
        return "cp1252"
    return best.encoding


def _meta_charset(body: bytes) -> str | None:
    match = _META_CHARSET.search(body[:4096])
    return match.group(1).decode("ascii") if match else None


def _parse(html: str) -> HtmlElement:
    try:
        tree = trafilatura.load_html(html)
    except Exception as error:  # lxml raises on some broken markup
        raise StepError(f"the page could not be parsed ({type(error).__name__})", transient=False) from error
    if tree is None:
        raise StepError("the page could not be parsed", transient=False)
    return tree


def extract_main_text(tree: HtmlElement) -> str:
    """The main text by trafilatura (measured against readability-lxml in bench/extraction.py:
    as good or better, twice as fast), with its own fallbacks (readability, jusText) for pages
    where its result looks too short. Recall first: a passage missed is evidence lost, while a
    stray line of chrome only has to lose the ranking."""
    try:
        extracted = trafilatura.bare_extraction(
            tree, include_comments=False, include_tables=True, favor_recall=True, with_metadata=False
        )
    except Exception as error:  # the extractor trips on some broken markup
        raise StepError(f"the page could not be parsed ({type(error).__name__})", transient=False) from error
    if extracted is None or extracted.body is None:
        return ""
    return _block_text(extracted.body)


def _block_text(body: HtmlElement) -> str:
    """One block a line: a newline in a block's text is just a space (except in code), and
    block boundaries end lines."""
    for element in body.iter():
        if element.tag != "code":
            element.text = element.text and element.text.replace("\n", " ")
        element.tail = element.tail and element.tail.replace("\n", " ")
        if element.tag in BLOCK_TAGS:
            element.tail = "\n" + (element.tail or "")
            element.text = "\n" + (element.text or "")
    return "".join(body.itertext())
