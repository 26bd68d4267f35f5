"""Reference lists recognised in AI-written text, and the one reading of a cited address: a list
leaves the text to check and its entries resolve the markers that cite them."""

from pathlib import Path

import pytest

from verification.pipeline.citation_lists import cited_url
from verification.pipeline.citations import read_citations

FIXTURES = Path(__file__).parent / "fixtures" / "citations"


@pytest.mark.parametrize(
    ("url", "cited"),
    [
        ("https://a.test/x?utm_source=chatgpt.com", "https://a.test/x"),
        ("https://a.test/x?id=3&utm_medium=x&UTM_Campaign=y&page=2#top", "https://a.test/x?id=3&page=2#top"),
        ("https://a.test/x?id=3", "https://a.test/x?id=3"),
        ("https://a.test/x#utm_source=kept", "https://a.test/x#utm_source=kept"),
        ("http://dx.doi.org/10.1038/nature12373", "https://doi.org/10.1038/nature12373"),
        ("https://doi.org/10.1038/nature12373", "https://doi.org/10.1038/nature12373"),
    ],
)
def test_a_cited_address_loses_its_tracking_and_nothing_else(url, cited):
    assert cited_url(url) == cited


def test_a_gemini_sources_entry_gives_its_title_without_its_address():
    [listed] = read_citations((FIXTURES / "gemini.md").read_text(encoding="utf-8")).references

    assert listed.heading == "**Sources**"
    assert listed.entries[2].title == "Tram project FAQ | Riverton Transit, accessed March 20, 2025"
    assert listed.entries[2].url == "https://rivertontransit.org/projects/tram/faq"


@pytest.mark.parametrize(
    ("listing", "heading", "entries"),
    [
        ("Sources:\n1. https://a.test/1\n2. https://a.test/2\n", "Sources:", 2),
        ("Sources:\n- https://a.test/1\n- Riverton Tribune, 12 March 2024\n", "Sources:", 2),
        (
            "## References\n\n1. Smith, J. (2020). Trams. https://a.test/1\n\n2. Lee, K. (2021). Rails.\n",
            "## References",
            2,
        ),
        ("**Sources:**\n- [Tram FAQ](https://a.test/1)\n- [Budget](https://a.test/2)\n", "**Sources:**", 2),
        ("Sources: [1] https://a.test/1 [2] https://a.test/2\n", "Sources:", 2),
        ("Works cited\n1. Tram FAQ,\n   https://a.test/1\n", "Works cited", 1),
        ("1. https://a.test/1\n2. [Budget](https://a.test/2)\n", "", 2),
        ("[1]: https://a.test/1\n[2]: https://a.test/2\n", "", 2),
    ],
)
def test_a_reference_list_is_read_in_each_shape_and_leaves_the_text(listing, heading, entries):
    text = f"Trams are quiet.[1]\n\n{listing}"

    result = read_citations(text)

    [listed] = result.references
    assert (listed.heading, len(listed.entries)) == (heading, entries)
    assert listed.entries[0].url == "https://a.test/1"
    assert result.citations[0].url == "https://a.test/1"
    assert result.text == "Trams are quiet.\n\n"


def test_a_reference_list_ends_where_the_text_goes_on():
    text = "Trams are quiet.[1]\n\nSources:\n1. https://a.test/1\nBuses are loud, the council says.\n"

    result = read_citations(text)

    assert result.text == "Trams are quiet.\n\nBuses are loud, the council says.\n"


def test_a_list_of_words_at_the_end_is_the_answers_own_list():
    text = "Ride a tram.[1]\n\n1. Buy a ticket\n2. Board at the front\n"

    result = read_citations(text)

    assert result.references == ()
    assert result.text == "Ride a tram.\n\n1. Buy a ticket\n2. Board at the front\n"


def test_windows_line_endings_are_kept_and_the_list_still_read():
    text = (
        "Trams are quiet.[1]\r\nBuses are loud [2].\r\n\r\nSources:\r\n1. https://a.test/1\r\n2. https://a.test/2\r\n"
    )

    result = read_citations(text)

    assert result.text == "Trams are quiet.\r\nBuses are loud.\r\n\r\n"
    assert [c.url for c in result.citations] == ["https://a.test/1", "https://a.test/2"]


def test_a_copilot_answer_is_read_with_its_conversation_heading():
    text = (
        "Riverton approved a tram line in March 2024[^1^][^2^]. It will open in 2027[^3^].\n\n"
        "Source: Conversation with Copilot, 20/03/2025\n"
        "(1) Council approves Riverton tram line. https://www.riverton.gov/news/tram.\n"
        "(2) Tram vote 2024 - Riverton Tribune. https://www.rivertontribune.com/local/tram-vote-2024.\n"
        "(3) Tram project FAQ. https://rivertontransit.org/projects/tram/faq.\n"
    )

    result = read_citations(text)

    assert result.text == "Riverton approved a tram line in March 2024. It will open in 2027.\n\n"
    assert [(c.label, c.title) for c in result.citations] == [
        ("1", "Council approves Riverton tram line."),
        ("2", "Tram vote 2024 - Riverton Tribune."),
        ("3", "Tram project FAQ."),
    ]
    assert result.citations[2].url == "https://rivertontransit.org/projects/tram/faq"


def test_a_sentence_that_begins_with_source_is_no_heading():
    text = "Source: the council said the line opens in 2027.\n1. Buy a ticket\n2. Board at the front\n"

    assert read_citations(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        "Die Mauer fiel 1989 [1].\n\nQuellen:\n[1] Mauer https://a.example/x",
        "La tour est à Paris [1].\n\nRéférences :\n[1] Tour https://a.example/x",
        "La torre está en París [1].\n\n**Fuentes:**\n[1] Torre https://a.example/x",
        "埃菲尔铁塔在巴黎[1]。\n\n参考资料：\n[1] 铁塔 https://a.example/x",
        "برج إيفل في باريس [1].\n\nالمصادر:\n[1] برج https://a.example/x",
        "एफिल टॉवर पेरिस में है [1]।\n\nस्रोत:\n[1] टॉवर https://a.example/x",
        "La tour est à Paris [1].\nRéférences : [1] https://a.example/x",
    ],
)
def test_a_reference_list_under_a_heading_in_the_answers_language_is_read_as_one(text):
    cited = read_citations(text)

    assert [(c.marker, c.url) for c in cited.citations] == [("[1]", "https://a.example/x")]
    assert "https" not in cited.text and cited.text.split("\n")[0].endswith(
        ("1989.", "Paris.", "París.", "巴黎。", "باريس.", "है।")
    )
