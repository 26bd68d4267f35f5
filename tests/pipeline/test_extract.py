import pickle
from datetime import date

import pytest

from verification.pipeline.extract import decode, fetch_page, read_html
from verification.pipeline.types import FetchedDocument, Page, PageSentences, StepError

ARTICLE = """<!doctype html><html><head><title>Eiffel Tower facts</title></head><body>
<nav><a href='/'>Home</a> | <a href='/about'>About us</a></nav>
<article><h1>The Eiffel Tower</h1>
<p>The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.</p>
<h2>History</h2><p>It was completed in 1889 as the entrance arch to the World's Fair and is \
named after Gustave Eiffel.</p>
<ul><li>Height: 330 metres</li><li>Material: wrought iron</li></ul></article>
<footer>Copyright the site. All rights reserved.</footer></body></html>"""


class FakeFetcher:
    def __init__(self, document: FetchedDocument):
        self.document = document
        self.urls: list[str] = []

    def fetch(self, url: str) -> FetchedDocument:
        self.urls.append(url)
        return self.document


def document(body: bytes, content_type: str = "text/html", charset: str | None = "utf-8"):
    return FetchedDocument(
        url="https://a.example/x",
        final_url="https://a.example/final",
        content_type=content_type,
        charset=charset,
        body=body,
    )


@pytest.mark.parametrize(
    ("body", "charset", "expected"),
    [
        ("Café crème".encode("latin-1"), "iso-8859-1", "Café crème"),
        ("Привет мир".encode("koi8-r"), "koi8-r", "Привет мир"),
        ("Café".encode(), None, "Café"),
        ("Café".encode(), "utf-8", "Café"),
        ("Café".encode(), "no-such-charset", "Café"),
        (b"", None, ""),
    ],
    ids=[
        "header-latin1",
        "header-koi8r",
        "utf8-undeclared",
        "utf8-declared",
        "unknown-header",
        "empty",
    ],
)
def test_decode_uses_the_header_charset_else_utf8(body, charset, expected):
    assert decode(body, charset) == expected


def test_decode_trusts_the_header_over_the_meta_tag():
    body = b'<meta charset="koi8-r">' + "Café".encode("latin-1")

    assert decode(body, "iso-8859-1").endswith("Café")


@pytest.mark.parametrize(
    "meta",
    [
        b'<meta charset="windows-1252">',
        b"<meta charset='windows-1252'>",
        b"<META CHARSET=windows-1252>",
        b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">',
    ],
)
def test_decode_reads_the_meta_charset_when_the_header_has_none(meta):
    body = b"<html><head>" + meta + b"</head><body>" + "café – “ok”".encode("cp1252")

    assert decode(body, None).endswith("café – “ok”")


def test_decode_falls_back_to_the_meta_charset_when_the_header_one_fails():
    body = b'<meta charset="windows-1252">' + "café – ok".encode("cp1252")

    assert decode(body, "utf-8").endswith("café – ok")


def test_decode_guesses_an_undeclared_legacy_charset():
    text = "Привет, как дела? Это тест кодировки для страницы без объявления."

    assert decode(text.encode("cp1251"), None) == text


def test_read_html_puts_headings_paragraphs_and_items_on_their_own_lines():
    title, text, _ = read_html(ARTICLE)

    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    assert title == "Eiffel Tower facts"
    assert lines == [
        "The Eiffel Tower",
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
        "History",
        "It was completed in 1889 as the entrance arch to the World's Fair and is named after Gustave Eiffel.",
        "Height: 330 metres",
        "Material: wrought iron",
    ]


@pytest.mark.parametrize("html", ["", "   \n\t "])
def test_read_html_rejects_an_empty_page(html):
    with pytest.raises(StepError, match="empty"):
        read_html(html)


def test_fetch_page_fetches_the_url_and_keeps_both_urls():
    fetcher = FakeFetcher(document(ARTICLE.encode()))

    page = fetch_page(fetcher, "https://a.example/x")

    assert fetcher.urls == ["https://a.example/x"]
    assert page.url == "https://a.example/x"
    assert page.final_url == "https://a.example/final"
    assert page.title == "Eiffel Tower facts"


def test_fetch_page_gives_one_tidy_line_per_block():
    page = fetch_page(FakeFetcher(document(ARTICLE.encode())), "https://a.example/x")

    assert page.text == (
        "The Eiffel Tower\n"
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.\n"
        "History\n"
        "It was completed in 1889 as the entrance arch to the World's Fair and is named after "
        "Gustave Eiffel.\n"
        "Height: 330 metres\n"
        "Material: wrought iron"
    )


def test_fetch_page_collapses_whitespace_in_the_title():
    html = ARTICLE.replace("<title>Eiffel Tower facts</title>", "<title>\n  Eiffel   Tower\tfacts </title>")

    page = fetch_page(FakeFetcher(document(html.encode())), "https://a.example/x")

    assert page.title == "Eiffel Tower facts"


def test_fetch_page_decodes_with_the_documents_charset():
    html = ARTICLE.replace("Champ de Mars", "Champ de Mars, près du café")

    page = fetch_page(FakeFetcher(document(html.encode("latin-1"), charset="iso-8859-1")), "https://a.example/x")

    assert "Champ de Mars, près du café in Paris" in page.text


MARKDOWN_NOTES = b"""# The **Eiffel** Tower

It is *made* of [wrought iron](https://example.org/iron), not __steel__.
It opened in 1889 \xe2\x80\x94 see `docs`.

- **Height**: 330 m
* Built by _Gustave Eiffel_'s company

> Quoted: ![the tower at night](tower.png)

| Year | Visitors |
|------|----------|
| 2023 | 6.3 million |

```
plain code line
```

1. First ~~crossed~~ item

***
"""


def test_a_markdown_document_is_read_as_its_text_with_no_markup():
    page = fetch_page(FakeFetcher(document(MARKDOWN_NOTES, content_type="text/markdown")), "u")

    assert page.title == "The Eiffel Tower"
    assert page.text.splitlines() == [
        "The Eiffel Tower",
        "It is made of wrought iron, not steel. It opened in 1889 \u2014 see docs.",
        "Height: 330 m",
        "Built by Gustave Eiffel's company",
        "Quoted: the tower at night",
        "Year Visitors",
        "2023 6.3 million",
        "plain code line",
        "First crossed item",
    ]
    assert not set("#*_`[]|>~") & set(page.text)


def test_fetch_page_reads_plain_text_as_it_is():
    body = (
        b"  The Eiffel Tower is in Paris.   It is <b>not</b> markup here.  \n\n\n"
        b"   Line two   has   spaces and more words to pass the minimum length.\n"
    )

    page = fetch_page(FakeFetcher(document(body, content_type="text/plain", charset=None)), "u")

    assert page == Page(
        url="https://a.example/x",
        final_url="https://a.example/final",
        title="",
        text="The Eiffel Tower is in Paris. It is <b>not</b> markup here.\n"
        "Line two has spaces and more words to pass the minimum length.",
    )


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<html><head><title>A long title that is not text</title></head></html>", "text/html"),
        (b"<html><body><div><img src='a.png'></div><p> \xe2\x80\x94 </p></body></html>", "text/html"),
        (b"   \n\n  ", "text/plain"),
        (b"-- ... --", "text/plain"),
    ],
)
def test_fetch_page_rejects_a_page_with_no_readable_text(body, content_type):
    with pytest.raises(StepError, match="no readable text"):
        fetch_page(FakeFetcher(document(body, content_type=content_type)), "u")


def test_fetch_page_rejects_an_empty_html_body():
    with pytest.raises(StepError, match="the page is empty"):
        fetch_page(FakeFetcher(document(b"")), "u")


def test_a_newline_inside_a_paragraph_is_a_space_not_a_line_break():
    html = (
        "<html><head><title>T</title></head><body><article><h1>Heading</h1>"
        "<p>The Eiffel Tower is a wrought-iron lattice tower on the\nChamp de Mars in Paris,"
        "\nFrance, and it was completed in 1889.</p></article></body></html>"
    )

    lines = [line.strip() for line in read_html(html).text.splitlines() if line.strip()]

    expected = (
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France, "
        "and it was completed in 1889."
    )
    assert expected in lines


@pytest.mark.parametrize(
    "sentence", ["Le café est très bon – c’est vrai, dit-il à l’été.", "Señor Muñoz visitó la región en otoño."]
)
def test_it_reads_undeclared_windows_1252_as_western_european(sentence):
    assert decode((sentence * 3).encode("cp1252"), None) == sentence * 3


# --- short pages: kept when they have any readable text


def test_a_one_paragraph_statement_is_read():
    html = b"<html><head><title>Statement</title></head><body><p>We closed the office on 3 May.</p></body></html>"

    page = fetch_page(FakeFetcher(document(html)), "u")

    assert page.title == "Statement"
    assert page.text == "We closed the office on 3 May."


def test_a_short_plain_text_document_is_read():
    page = fetch_page(FakeFetcher(document(b"  Open daily.  ", content_type="text/plain", charset=None)), "u")

    assert page.text == "Open daily."


def test_a_tiny_body_is_read_with_the_pages_description():
    html = (
        b'<html><head><title>Notice</title><meta name="description" content="The museum is closed on Mondays '
        b'until further notice."></head><body><p>Closed Mondays.</p></body></html>'
    )

    page = fetch_page(FakeFetcher(document(html)), "u")

    assert page.text == "Closed Mondays.\nThe museum is closed on Mondays until further notice."


def test_a_page_with_only_a_description_is_read_by_it():
    html = b'<html><head><meta property="og:description" content="A post about the tower."></head><body></body></html>'

    assert fetch_page(FakeFetcher(document(html)), "u").text == "A post about the tower."


def test_a_description_the_body_already_says_is_not_repeated():
    html = b'<html><head><meta name="description" content="Closed Mondays."></head><body><p>Closed Mondays.</p>'

    assert fetch_page(FakeFetcher(document(html)), "u").text == "Closed Mondays."


def test_a_long_page_is_read_without_its_description():
    html = ARTICLE.replace("<title>", '<meta name="description" content="A summary for sharing."><title>')

    assert "A summary for sharing." not in fetch_page(FakeFetcher(document(html.encode())), "u").text


# --- titles and dates of web pages


def test_a_page_is_titled_by_its_og_title():
    html = ARTICLE.replace("<title>", '<meta property="og:title" content="The Eiffel Tower, explained"><title>')

    assert fetch_page(FakeFetcher(document(html.encode())), "u").title == "The Eiffel Tower, explained"


def test_a_page_carries_the_date_it_states():
    html = ARTICLE.replace("<title>", '<meta property="article:published_time" content="2016-05-04"><title>')

    assert fetch_page(FakeFetcher(document(html.encode())), "u").published == date(2016, 5, 4)


def test_plain_text_and_undated_pages_have_no_date():
    plain = document(b"The Eiffel Tower is in Paris.", content_type="text/plain", charset=None)

    assert fetch_page(FakeFetcher(plain), "u").published is None
    assert fetch_page(FakeFetcher(document(ARTICLE.encode())), "u").published is None


def test_page_sentences_cached_before_dates_were_read_load_with_no_date():
    # What a cache written by the previous version holds: the pickled fields without `published`.
    old = PageSentences.__new__(PageSentences)
    object.__setattr__(old, "__dict__", {"url": "u", "final_url": "u", "title": "T", "sentences": ("S.",)})

    restored = pickle.loads(pickle.dumps(old))

    assert restored.published is None
    assert restored.sentences == ("S.",)


def test_text_inside_the_article_keeps_its_order_and_leaves_out_the_chrome():
    html = (
        "<html><head><title>T</title></head><body><header><nav><a href='/'>Home</a> <a href='/a'>About</a></nav>"
        "</header><div class='cookie-banner'>We use cookies. Accept all?</div><main><article><h1>Heading</h1>"
        "<p>First paragraph of the article, which is long enough to be the main text of the page.</p>"
        "<p>Second paragraph of the article, which says more about the subject of the page.</p>"
        "</article></main><footer>Copyright the site. All rights reserved.</footer></body></html>"
    )

    expected = (
        "Heading\nFirst paragraph of the article, which is long enough to be the main text of the page.\n"
        "Second paragraph of the article, which says more about the subject of the page."
    )
    assert fetch_page(FakeFetcher(document(html.encode())), "u").text == expected
