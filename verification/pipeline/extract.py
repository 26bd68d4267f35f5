"""A fetched document → its title, main text (one block — paragraph, list item, heading, table
cell — a line) and publication date. Web pages by trafilatura and readability-lxml together
(extract_choice.py keeps the better reading), PDFs by pypdf (pdf.py)."""

import copy
import functools
import re
from datetime import date
from typing import NamedTuple

import lxml.etree
import lxml.html
import readability
import trafilatura
from charset_normalizer import from_bytes
from lxml.html import HtmlElement
from markdown_it import MarkdownIt

from . import extract_choice, html_meta, pdf
from .extract_choice import Choice, Line
from .extract_unseen import remove_unseen
from .types import FetchedDocument, Fetcher, Page, StepError

# Pages of PDFs read at most (PDF_MAX_PAGES): a 500-page report would hold a CPU process for
# many seconds, and the gist of a document comes early.
PDF_MAX_PAGES = 50
# Below this much body text, the page's description is read too: on a short page (a statement,
# a post of two lines) it is often the only other thing the page says.
SHORT_TEXT_CHARS = 80
# trafilatura's blocks (its own XML vocabulary); table cells keep a line each, as before.
BLOCK_TAGS = frozenset("head p item list quote code table row cell lb".split())
# The same blocks in the HTML that readability returns.
HTML_BLOCK_TAGS = frozenset(
    "p div li ul ol dl dt dd h1 h2 h3 h4 h5 h6 blockquote pre table tr td th caption figcaption section "
    "article header br hr".split()
)
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
    if document.content_type == "text/markdown":
        return _page(document, read_markdown(text))
    return _page(document, read_html(text))


def read_markdown(markdown: str) -> HtmlReading:
    """A Markdown document as the text a reader sees: one block (heading, paragraph, list item,
    quote, table row, code block) a line, its words kept and its markup gone — passages are
    shown and judged as text, and a `#` or `**` in them is noise to both. The first heading is
    its title."""
    title, lines = "", []
    tokens = _markdown_parser().parse(markdown)
    for index, token in enumerate(tokens):
        if token.type == "inline":
            line = _inline_text(token.children or [])
            if not title and index and tokens[index - 1].type == "heading_open":
                title = line
            # Table cells of a row share one line, as the HTML reader keeps them.
            cell = index and tokens[index - 1].type in ("th_open", "td_open")
            if cell and lines and not tokens[index - 2].type.startswith("tr_"):
                lines[-1] += " " + line
            else:
                lines.append(line)
        elif token.type in ("fence", "code_block"):
            lines.extend(token.content.splitlines())
        elif token.type == "html_block":
            lines.append(_html_fragment_text(token.content))
    return HtmlReading(title=title, text="\n".join(lines), published=None)


@functools.cache
def _markdown_parser():
    # CommonMark with GitHub's tables and strikethrough, the Markdown people write.
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _inline_text(children) -> str:
    parts = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "image":
            parts.append(_inline_text(child.children or []))  # its alt text
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
        elif child.type == "html_inline":
            continue  # a tag; the words around it are text tokens
    return "".join(parts)


def _html_fragment_text(html: str) -> str:
    try:
        return lxml.html.fragment_fromstring(html, create_parent="div").text_content()
    except (ValueError, lxml.etree.ParserError):
        return ""


def read_html(html: str) -> HtmlReading:
    if not html.strip():
        raise StepError("the page is empty", transient=False)
    tree = parse_html(html)
    # Title and date first: the extractors prune the tree they are given.
    title, published = html_meta.page_title(tree), html_meta.published_date(tree)
    summary = html_meta.description(tree)
    text = extract_main_text(tree, known=(title, summary))
    if len(_tidy(text)) < SHORT_TEXT_CHARS and summary and summary not in _tidy(text):
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


def parse_html(html: str) -> HtmlElement:
    try:
        tree = trafilatura.load_html(html)
    except Exception as error:  # lxml raises on some broken markup
        raise StepError(f"the page could not be parsed ({type(error).__name__})", transient=False) from error
    if tree is None:
        raise StepError("the page could not be parsed", transient=False)
    return tree


def extract_main_text(tree: HtmlElement, *, known: tuple[str, ...] = ()) -> str:
    """The main text, read by trafilatura and by readability-lxml, keeping the better reading
    (extract_choice.py; measured on a public benchmark in bench/extraction.py). `known` are
    texts the page gives apart (title, description). The tree is pruned in the process."""
    return read_main_text(tree, known=known)[0]


def read_main_text(tree: HtmlElement, *, known: tuple[str, ...] = ()) -> tuple[str, Choice]:
    """`extract_main_text` and which reading it kept."""
    remove_unseen(tree)
    by_readability = read_with_readability(tree)
    try:
        by_trafilatura = read_with_trafilatura(tree)
    except StepError:
        if not by_readability:
            raise
        by_trafilatura = []
    choice = extract_choice.choose(by_trafilatura, by_readability, known=known)
    kept = by_readability if choice.readability else by_trafilatura
    return "\n".join(line.text for line in kept), choice


def read_with_trafilatura(tree: HtmlElement) -> list[Line]:
    """trafilatura without its own fallbacks (its copy of readability, jusText): readability-lxml
    reads every page beside it. Recall first: a passage missed is evidence lost, while a stray
    line of chrome only has to lose the ranking."""
    try:
        extracted = trafilatura.bare_extraction(
            tree,
            include_comments=False,
            include_tables=True,
            favor_recall=True,
            with_metadata=False,
            fast=True,
        )
    except Exception as error:  # the extractor trips on some broken markup
        raise StepError(f"the page could not be parsed ({type(error).__name__})", transient=False) from error
    if extracted is None or extracted.body is None:
        return []
    body = extracted.body
    quoted = _texts_of(body.iter("cell", "quote"))
    return _lines(_block_text(body), quoted)


class _Readability(readability.Document):
    """readability-lxml on the tree already parsed and cleaned by `remove_unseen`: its own
    parsing would read the page again and run lxml's Cleaner, whose rewriting of javascript:
    links is half of readability's time and changes nothing it reads."""

    def _parse(self, input):
        self.encoding = "utf-8"
        return copy.deepcopy(input)


def read_with_readability(tree: HtmlElement) -> list[Line]:
    """readability-lxml's reading; the tree is left as it was (readability reads copies)."""
    try:
        summary = _Readability(tree).summary(html_partial=True)
        root = lxml.html.fragment_fromstring(summary, create_parent="div")
    except Exception:  # readability gives up on some pages; trafilatura's reading remains
        return []
    quoted = _texts_of(root.iter("td", "th", "blockquote"))
    return _lines(_html_block_text(root), quoted)


def _texts_of(elements) -> set[str]:
    """The lines of these elements' text (a quotation of several paragraphs is several lines)."""
    texts = set()
    for element in elements:
        whole = " ".join("".join(element.itertext()).split())
        texts.add(whole)
        texts.update(" ".join("".join(child.itertext()).split()) for child in element.iterdescendants())
    return texts


def _lines(text: str, quoted: set[str]) -> list[Line]:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return [Line(line, quoted=line in quoted) for line in lines if line]


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


def _html_block_text(root: HtmlElement) -> str:
    """`_block_text` for HTML: a line per block element, and a newline inside a block (except
    in <pre>) is a space."""
    for element in root.iter(lxml.etree.Element):
        if element.tag != "pre":
            element.text = element.text and element.text.replace("\n", " ")
        element.tail = element.tail and element.tail.replace("\n", " ")
        if element.tag in HTML_BLOCK_TAGS:
            element.tail = "\n" + (element.tail or "")
            element.text = "\n" + (element.text or "")
    return root.text_content()
