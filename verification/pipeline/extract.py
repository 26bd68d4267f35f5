"""A fetched document → its title and main text, one block (paragraph, list item, heading) a line."""

import re

import lxml.html
from charset_normalizer import from_bytes
from readability import Document

from .types import FetchedDocument, Fetcher, Page, StepError

MIN_TEXT_CHARS = 80
BLOCK_TAGS = frozenset(
    "p div li ul ol h1 h2 h3 h4 h5 h6 blockquote pre tr td th dt dd section article br figcaption".split()
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def fetch_page(fetcher: Fetcher, url: str) -> Page:
    return read_document(fetcher.fetch(url))


def read_document(document: FetchedDocument) -> Page:
    """The CPU half of `fetch_page` (decoding and parsing), apart so that it can run in
    another process than the download."""
    text = decode(document.body, document.charset)
    if document.content_type == "text/plain":
        return _page(document, title="", text=text)
    title, main_text = extract_main_text(text)
    return _page(document, title, main_text)


def _page(document: FetchedDocument, title: str, text: str) -> Page:
    lines = [" ".join(line.split()) for line in text.splitlines()]
    text = "\n".join(line for line in lines if line)
    if len(text) < MIN_TEXT_CHARS:
        raise StepError("the page has no readable text")
    return Page(url=document.url, final_url=document.final_url, title=" ".join(title.split()), text=text)


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


def extract_main_text(html: str) -> tuple[str, str]:
    """(title, main text) by readability. Blocks get a line each, since `text_content()` glues
    a heading to the paragraph after it."""
    if not html.strip():
        raise StepError("the page is empty")
    try:
        document = Document(html)
        summary = document.summary(html_partial=True)
        title = document.short_title() or ""
    except Exception as error:  # readability raises bare Exceptions on broken markup
        raise StepError(f"the page could not be parsed ({type(error).__name__})") from error
    return title, _block_text(summary)


def _block_text(fragment: str) -> str:
    root = lxml.html.fromstring(fragment)
    preformatted = {id(e) for pre in root.iter("pre") for e in pre.iter()}
    for element in root.iter():
        # A newline in the HTML source is just a space; only block boundaries end a line.
        if id(element) not in preformatted:
            element.text = element.text and element.text.replace("\n", " ")
            element.tail = element.tail and element.tail.replace("\n", " ")
        if isinstance(element.tag, str) and element.tag.lower() in BLOCK_TAGS:
            element.tail = "\n" + (element.tail or "")
            element.text = "\n" + (element.text or "")
    return root.text_content()
