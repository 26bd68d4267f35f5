import io
import zlib
from datetime import date, datetime

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ArrayObject, DictionaryObject, NameObject, NumberObject, StreamObject

from tests.pdfs import inflate_page, make_pdf
from verification.pipeline import pdf
from verification.pipeline.extract import read_document
from verification.pipeline.pdf import paragraphs
from verification.pipeline.types import FetchedDocument, StepError
from verification.worker.cpu_child import call_with_time_limit

PAPER = [
    "Vitamin D and bone health in adults",
    "A. Lindqvist, R. Okafor",
    "Abstract",
    "The body makes vitamin D when the skin is exposed to sunlight, and a lack of it softens",
    "the bones in children and adults alike. Most adults need about ten micrograms a day,",
    "more in winter and in old age, when the skin makes less of it.",
]


def pdf_document(body: bytes, content_type: str = "application/pdf") -> FetchedDocument:
    return FetchedDocument(
        url="https://journal.example/paper.pdf",
        final_url="https://journal.example/files/paper.pdf",
        content_type=content_type,
        charset=None,
        body=body,
    )


def test_it_reads_the_text_of_a_pdf_a_paragraph_a_line():
    page = read_document(pdf_document(make_pdf([PAPER, ["Second page: the trial ran for ten years."]])))

    assert page.url == "https://journal.example/paper.pdf"
    assert page.final_url == "https://journal.example/files/paper.pdf"
    assert page.text.split("\n") == [
        "Vitamin D and bone health in adults",
        "A. Lindqvist, R. Okafor",
        "Abstract",
        "The body makes vitamin D when the skin is exposed to sunlight, and a lack of it softens the bones in "
        "children and adults alike. Most adults need about ten micrograms a day, more in winter and in old "
        "age, when the skin makes less of it.",
        "Second page: the trial ran for ten years.",
    ]


@pytest.mark.parametrize("content_type", ["application/octet-stream", "text/html", "text/plain", "binary/octet-stream"])
def test_it_knows_a_pdf_by_its_bytes_whatever_its_label(content_type):
    page = read_document(pdf_document(make_pdf([PAPER]), content_type=content_type))

    assert page.text.startswith("Vitamin D and bone health in adults\n")


def test_the_title_is_the_one_the_pdf_declares():
    page = read_document(pdf_document(make_pdf([PAPER], title="  Vitamin D:\n a review ")))

    assert page.title == "Vitamin D: a review"


@pytest.mark.parametrize("declared", [None, "", "Microsoft Word - draft3.docx", "paper_final.pdf", "untitled"])
def test_without_a_real_declared_title_the_first_line_is_the_title(declared):
    page = read_document(pdf_document(make_pdf([PAPER], title=declared)))

    assert page.title == "Vitamin D and bone health in adults"


def test_the_publication_date_is_the_pdfs_creation_date():
    page = read_document(pdf_document(make_pdf([PAPER], created=datetime(2014, 3, 2, 9, 30))))

    assert page.published == date(2014, 3, 2)


def test_a_pdf_without_a_creation_date_has_no_date():
    assert read_document(pdf_document(make_pdf([PAPER]))).published is None


def test_a_pdf_without_text_says_it_may_be_scanned():
    with pytest.raises(StepError) as error:
        read_document(pdf_document(make_pdf([[], []])))

    assert str(error.value) == "the PDF has no text (a scanned document?)"


def test_a_page_that_inflates_to_megabytes_of_drawing_is_skipped_and_the_others_read():
    # A few KB on disk, 5 MB of drawing instructions once decompressed: minutes of CPU to read.
    bomb = inflate_page(make_pdf([PAPER, ["Second page: it is read."]]), 0, megabytes=5)
    assert len(bomb) < 50_000

    page = read_document(pdf_document(bomb))

    assert page.text == "Second page: it is read."


def test_a_pdf_whose_pages_all_inflate_past_the_limit_says_so():
    bomb = make_pdf([["one"], ["two"]])
    for index in (0, 1):
        bomb = inflate_page(bomb, index, megabytes=3)

    with pytest.raises(StepError) as error:
        read_document(pdf_document(bomb))

    assert str(error.value).startswith("the PDF's pages are too large to read (2 of them")


def test_pages_that_would_take_the_document_past_its_limit_are_not_read(monkeypatch):
    # Smaller limits, so that the pages read cost a fraction of a second.
    monkeypatch.setattr(pdf, "MAX_PAGE_CONTENT_BYTES", 300_000)
    monkeypatch.setattr(pdf, "MAX_DOCUMENT_CONTENT_BYTES", 700_000)
    document = make_pdf([["first"], ["second"], ["third"], ["fourth: small, within the limit"]])
    for index in range(3):
        document = inflate_page(document, index, megabytes=0.25)

    page = read_document(pdf_document(document))

    drawn = 250_000 // 14  # characters drawn by each inflated page
    assert page.text.count("x") == 2 * drawn  # the first two pages: 0.5 MB; the third would make 0.75
    assert page.text.endswith("fourth: small, within the limit")


# --- form XObjects: drawing instructions a page draws by name, as often as it likes

# What "refused at once" means here: milliseconds of work, against minutes to read the pages.
QUICKLY_S = 5.0


def with_forms(document: bytes, page_index: int, *, page: bytes, forms: dict[str, bytes]) -> bytes:
    """`document` with one page's drawing instructions replaced by `page`, which may draw the form
    XObjects of `forms` (name → its drawing instructions) by their names. Every stream is deflated,
    as a hostile file's would be; the page and its forms share one set of resources (the page's
    font and every form), so that a form may draw any form, itself included."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(document)))
    target = writer.pages[page_index]
    xobjects = DictionaryObject()
    resources = DictionaryObject({NameObject("/Font"): target["/Resources"]["/Font"], NameObject("/XObject"): xobjects})
    shared = writer._add_object(resources)
    for name, content in forms.items():
        form = _deflated(content)
        form[NameObject("/Type")] = NameObject("/XObject")
        form[NameObject("/Subtype")] = NameObject("/Form")
        form[NameObject("/BBox")] = ArrayObject([NumberObject(n) for n in (0, 0, 612, 792)])
        form[NameObject("/Resources")] = shared
        xobjects[NameObject(f"/{name}")] = writer._add_object(form)
    target[NameObject("/Resources")] = shared
    target[NameObject("/Contents")] = writer._add_object(_deflated(page))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _deflated(data: bytes) -> StreamObject:
    stream = StreamObject()
    stream._data = zlib.compress(data, 9)
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    stream[NameObject("/Length")] = NumberObject(len(stream._data))
    return stream


def drawing(size: int, character: str = "x") -> bytes:
    """About `size` bytes of instructions that draw `character` once per 14 bytes."""
    return b"BT /F1 11 Tf 72 740 Td " + f"({character}) Tj 1 0 Td ".encode() * (size // 14) + b"ET "


def line(text: str) -> bytes:
    return f"BT /F1 11 Tf 72 700 Td ({text}) Tj ET ".encode()


def read_quickly(body: bytes):
    """read_document, stopped by the CPU pool's own time limit (TookTooLong) when it takes long."""
    return call_with_time_limit(QUICKLY_S, read_document, pdf_document(body))


def test_a_page_that_draws_a_large_form_hundreds_of_times_is_refused_at_once():
    # Each page: a few KB of file, 3 KB of its own instructions, and 400 MB to read through its form.
    bomb = make_pdf([["one"], ["two"]])
    for index in (0, 1):
        bomb = with_forms(bomb, index, page=b"/Big Do " * 400, forms={"Big": drawing(1_000_000)})
    assert len(bomb) < 20_000

    with pytest.raises(StepError) as error:
        read_quickly(bomb)

    assert str(error.value).startswith("the PDF's pages are too large to read (2 of them hold over 2 MB")
    assert not error.value.transient


def test_a_form_drawn_a_few_times_is_read_beside_a_page_that_draws_one_past_the_limit():
    document = make_pdf([["one"], ["two"]])
    document = with_forms(document, 0, page=b"/Big Do " * 400, forms={"Big": drawing(1_000_000)})
    document = with_forms(document, 1, page=b"/Note Do " * 3, forms={"Note": line("Built in 1854.")})

    page = read_quickly(document)

    assert page.text.split("\n") == ["Built in 1854."] * 3


def test_a_page_that_draws_a_small_form_thousands_of_times_is_not_read():
    # A one-letter line drawn 5,000 times: each drawing sets the form up afresh (its font, its text).
    tiny = make_pdf([["one"], ["Second page: it is read."]])
    tiny = with_forms(tiny, 0, page=b"/Dot Do " * 5000, forms={"Dot": line("x")})

    page = read_quickly(tiny)

    assert page.text == "Second page: it is read."


def test_every_drawing_of_a_form_counts_towards_the_page_limit(monkeypatch):
    monkeypatch.setattr(pdf, "MAX_PAGE_CONTENT_BYTES", 100_000)
    document = make_pdf([["one"], ["two"]])
    document = with_forms(document, 0, page=b"/A Do " * 3, forms={"A": drawing(25_000, "a")})
    document = with_forms(document, 1, page=b"/B Do " * 4, forms={"B": drawing(25_000, "b")})

    page = read_document(pdf_document(document))

    assert page.text.count("a") == 3 * (25_000 // 14)  # 3 drawings of 25 KB: read
    assert "b" not in page.text  # 4: not


@pytest.mark.parametrize(
    "draws",
    [b"/Big Do\n", b"/B#69g Do\n", b"/Big 0 (Do) Do\n", b"/Big % a comment\nDo\n"],
    ids=["by-name", "escaped-name", "extra-operands", "comment-between"],
)
def test_a_form_counts_however_the_page_names_it(monkeypatch, draws):
    monkeypatch.setattr(pdf, "MAX_PAGE_CONTENT_BYTES", 100_000)
    document = with_forms(make_pdf([["one"]]), 0, page=draws * 20, forms={"Big": drawing(10_000)})

    with pytest.raises(StepError) as error:
        read_document(pdf_document(document))

    assert str(error.value).startswith("the PDF's pages are too large to read (1 of them")


def test_forms_drawn_by_forms_multiply(monkeypatch):
    # Each form alone is small, and so is the page; the page draws 400 of the inner one.
    monkeypatch.setattr(pdf, "MAX_PAGE_CONTENT_BYTES", 100_000)
    forms = {"Outer": b"/Inner Do " * 20 + line("Outer."), "Inner": drawing(1_000)}
    document = make_pdf([["one"], ["Second page: it is read."]])
    document = with_forms(document, 0, page=b"/Outer Do " * 20, forms=forms)

    page = read_document(pdf_document(document))

    assert page.text == "Second page: it is read."


def test_forms_that_draw_each_other_are_counted_once_per_loop_and_what_they_draw_counts(monkeypatch):
    # The parser reads a form drawn inside itself no deeper (pypdf skips it); so does the count.
    monkeypatch.setattr(pdf, "MAX_PAGE_CONTENT_BYTES", 100_000)
    loop = {"A": b"/B Do " + line("There."), "B": b"/A Do /B Do " + line("And back.")}
    document = make_pdf([["one"], ["two"]])
    document = with_forms(
        document, 0, page=b"/A Do ", forms={**loop, "B": loop["B"] + b"/Big Do " * 20, "Big": drawing(10_000)}
    )
    document = with_forms(document, 1, page=b"/A Do ", forms=loop)

    page = read_document(pdf_document(document))

    assert page.text.split("\n") == ["And back.", "There."]  # the second page only


def test_a_pdf_locked_by_a_password_says_so():
    with pytest.raises(StepError) as error:
        read_document(pdf_document(make_pdf([PAPER], password="secret")))

    assert str(error.value) == "the PDF is protected by a password"


def test_a_pdf_encrypted_only_against_copying_is_read():
    page = read_document(pdf_document(make_pdf([PAPER], password="")))

    assert "ten micrograms a day" in page.text


@pytest.mark.parametrize(
    "body",
    [b"%PDF-1.7\nnot really a PDF", make_pdf([PAPER])[:600], b"%PDF-1.4\n" + b"\x00" * 2000],
    ids=["garbage", "truncated", "zeros"],
)
def test_a_broken_pdf_fails_with_a_readable_reason(body):
    with pytest.raises(StepError) as error:
        read_document(pdf_document(body))

    assert str(error.value).startswith("the PDF could not be read (")


def test_only_the_first_pages_are_read():
    pages = [[f"Page {n} says the tower is {n} metres tall."] for n in range(1, 6)]

    page = read_document(pdf_document(make_pdf(pages)), pdf_max_pages=3)

    assert page.text.split("\n") == [
        "Page 1 says the tower is 1 metres tall.",
        "Page 2 says the tower is 2 metres tall.",
        "Page 3 says the tower is 3 metres tall.",
    ]


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("One line only", ["One line only"]),
        ("", []),
        ("  \n \n", []),
        (
            "A heading\nA paragraph that runs over the whole width of the page and\ngoes on here.",
            ["A heading", "A paragraph that runs over the whole width of the page and goes on here."],
        ),
        (
            "The word recom-\nmendation was split over two lines of the printed page.\nNext.",
            ["The word recommendation was split over two lines of the printed page.", "Next."],
        ),
        (
            "A well-known fact is stated on this line of the printed page, and then a\nNew line starts.",
            ["A well-known fact is stated on this line of the printed page, and then a New line starts."],
        ),
    ],
    ids=["single", "empty", "blank", "heading", "hyphenated", "not-a-hyphen-break"],
)
def test_printed_lines_are_joined_into_paragraphs(printed, expected):
    assert paragraphs(printed) == expected
