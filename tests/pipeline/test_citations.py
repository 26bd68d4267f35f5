"""Citations recognised in AI-written text (issue 34, its first step): the markers and reference
lists leave the text to check, each citation knows its sentence and what it points to."""

import re
from pathlib import Path

import pytest

from verification.pipeline.citations import Points, citations_by_sentence, read_citations
from verification.pipeline.segment import segment

FIXTURES = Path(__file__).parent / "fixtures" / "citations"
# Anything left of a marker in a cleaned text.
LEFTOVER = re.compile(r"\[\d|\[\^|【|\[Data:|\]\(|https?://|utm_|doi:|[¹²³⁴⁵⁶⁷⁸⁹]")


def fixture(name: str) -> str:
    return (FIXTURES / f"{name}.md").read_text(encoding="utf-8")


def by_sentence(text: str) -> dict[str, list]:
    """Each sentence of the cleaned text (its first words) → its citations."""
    result = read_citations(text)
    sentences = segment(result.text)
    attached = citations_by_sentence(result.citations, [(s.start, s.end) for s in sentences])
    return {s.text: cited for s, cited in zip(sentences, attached, strict=True)}


def sentence_of(sentences: dict[str, list], opening: str) -> list:
    [cited] = [cited for text, cited in sentences.items() if text.lstrip("-* ").startswith(opening)]
    return cited


@pytest.mark.parametrize("name", ["perplexity", "chatgpt_search", "gemini", "footnotes", "graphrag"])
def test_the_cleaned_text_of_each_style_has_no_marker_left(name):
    result = read_citations(fixture(name))

    assert result.citations
    assert not LEFTOVER.search(result.text.replace("m²", "")), result.text


@pytest.mark.parametrize("name", ["perplexity", "chatgpt_search", "gemini", "footnotes", "graphrag"])
def test_every_kept_character_maps_back_to_the_same_character_of_the_original(name):
    result = read_citations(fixture(name))

    for position, character in enumerate(result.text):
        assert result.original[result.offsets.original(position)] == character
    for sentence in segment(result.text):
        start, end = result.offsets.original_span(sentence.start, sentence.end)
        assert result.original[start:end].startswith(sentence.text[:20])
        assert result.original[start:end].endswith(sentence.text[-1])


@pytest.mark.parametrize("name", ["perplexity", "chatgpt_search", "gemini", "footnotes", "graphrag"])
def test_each_marker_was_where_its_citation_says(name):
    result = read_citations(fixture(name))

    for citation in result.citations:
        assert result.original[citation.start : citation.end] == citation.marker


def test_a_perplexity_answer_cites_its_numbered_list_sentence_by_sentence():
    sentences = by_sentence(fixture("perplexity"))

    assert [c.label for c in sentence_of(sentences, "Riverton's city council")] == ["1", "2"]
    assert [c.url for c in sentence_of(sentences, "Construction is budgeted")] == [
        "https://www.transit.dot.gov/funding/grants/riverton-tram"
    ]
    assert [c.label for c in sentence_of(sentences, "The first section")] == ["2", "4"]
    assert [c.label for c in sentence_of(sentences, "The line runs")] == ["1"]
    assert [c.label for c in sentence_of(sentences, "Trams will run")] == ["4"]
    assert sentence_of(sentences, "Route and stops") == []


def test_a_perplexity_answer_lists_its_sources_with_their_titles():
    result = read_citations(fixture("perplexity"))

    [listed] = result.references
    assert listed.heading == "Citations:"
    assert [(e.label, e.title) for e in listed.entries][:2] == [
        ("1", "Council approves Riverton tram line - City of Riverton"),
        ("2", ""),
    ]
    assert "Citations:" not in result.text
    assert len(result.sources) == 4


def test_a_marker_past_the_end_of_the_list_is_kept_as_an_unresolved_citation():
    sentences = by_sentence(fixture("perplexity"))

    [citation] = sentence_of(sentences, "Critics argue")
    assert (citation.marker, citation.url) == ("[5]", None)
    assert citation.unresolved == "no entry 5 in the reference list (4 entries)"


def test_a_chatgpt_search_answer_cites_its_inline_links_without_tracking():
    sentences = by_sentence(fixture("chatgpt_search"))

    [vote] = sentence_of(sentences, "Riverton approved its tram line")
    assert (vote.points_to, vote.url) == (Points.URL, "https://www.rivertontribune.com/local/tram-vote-2024")
    assert vote.title == "rivertontribune.com"
    [budget] = sentence_of(sentences, "The project is expected")
    assert budget.url == "https://www.riverton.gov/budget/tram"
    [grant] = sentence_of(sentences, "Funding:")
    assert grant.url == "https://www.transit.dot.gov/funding/grants/riverton-tram?ref=grants#award"


def test_the_same_address_cited_twice_is_one_source_and_two_citations():
    result = read_citations(fixture("chatgpt_search"))

    vote = "https://www.rivertontribune.com/local/tram-vote-2024"
    assert [c.url for c in result.citations].count(vote) == 2
    assert result.sources.count(vote) == 1
    assert len(result.sources) == 5


def test_a_link_in_a_sentence_keeps_its_words_and_cites_its_address():
    sentences = by_sentence(fixture("chatgpt_search"))

    [archive] = sentence_of(sentences, "For the full minutes, see the city's meeting archive.")
    assert archive.url == "https://www.riverton.gov/council/minutes/2024-03-12"
    assert archive.title == "city's meeting archive"


def test_a_gemini_answer_cites_its_sources_block_with_superscripts():
    sentences = by_sentence(fixture("gemini"))

    assert [c.label for c in sentence_of(sentences, "Riverton's tram line")] == ["1"]
    assert [c.label for c in sentence_of(sentences, "The line is planned")] == ["2"]
    assert [c.label for c in sentence_of(sentences, "The first trams")] == ["2", "3"]
    [depot] = sentence_of(sentences, "The estimated cost")
    assert depot.url == "https://rivertontransit.org/projects/tram/faq"


def test_a_unit_written_in_superscript_stays_in_the_sentence():
    result = read_citations(fixture("gemini"))

    assert "a maintenance depot of 40,000 m² will be built near the port." in result.text


def test_markdown_footnotes_resolve_to_their_definitions():
    sentences = by_sentence(fixture("footnotes"))

    [vote] = sentence_of(sentences, "The Riverton tram line was approved")
    assert (vote.label, vote.url) == ("vote", "https://www.rivertontribune.com/local/tram-vote-2024")
    faq, budget = sentence_of(sentences, "It will be 14 km long")
    assert (faq.url, faq.title) == ("https://rivertontransit.org/projects/tram/faq", "Tram project FAQ")
    assert (budget.url, budget.unresolved) == (None, "")
    assert budget.title.startswith("City of Riverton, budget office")


def test_a_footnote_continued_on_an_indented_line_gives_the_doi_there():
    sentences = by_sentence(fixture("footnotes"))

    [study] = sentence_of(sentences, "A study of comparable lines")
    assert study.url == "https://doi.org/10.5555/jts.2021.0123"
    assert study.title.startswith("Hale, M. and Ortiz, J. (2021).")


def test_an_undefined_footnote_is_flagged():
    sentences = by_sentence(fixture("footnotes"))

    [missing] = sentence_of(sentences, "Opponents expect")
    assert missing.unresolved == "no footnote [^missing] is defined"


def test_a_graphrag_answer_cites_its_reports_entities_and_sources():
    sentences = by_sentence(fixture("graphrag"))

    plan = sentence_of(sentences, "Riverton approved a tram line")
    assert [(c.points_to, c.record, c.label, c.more) for c in plan] == [
        (Points.GRAPHRAG, "reports", "0", False),
        (Points.GRAPHRAG, "reports", "3", False),
    ]
    funded = sentence_of(sentences, "The line is funded")
    assert [c.label for c in funded] == ["3", "5", "12", "17", "21"]
    assert all(c.more for c in funded)
    parking = sentence_of(sentences, "Local business groups")
    assert [(c.record, c.label) for c in parking] == [
        ("entities", "14"),
        ("entities", "22"),
        ("relationships", "31"),
        ("relationships", "40"),
    ]
    [hearings] = sentence_of(sentences, "The council's 7–2 vote")
    assert (hearings.record, hearings.label, hearings.source) == ("sources", "4", "sources:4")


def test_a_graphrag_sentence_reaches_the_claims_without_its_marker():
    result = read_citations(fixture("graphrag"))

    assert "the central project of the city's transit plan. The line" in result.text


ORDINARY_TEXTS = [
    "The mayor said the plan was [sic] unaffordable. Details are given in the budget (see above).",
    "The archive is dated [2024]. It lists every vote.",
    "Section [3] of the code explains the rule.",
    "Set array[1] = 5 before the loop.",
    "The value `array[1]` is read first. Then `x[2]` follows.",
    "Solve x^2 + y^2 = 25 for y.",
    "The flat has 40 m² of floor space and costs 10³ euros.",
    "Go to https://www.riverton.gov/tram to register for updates.",
    "The minutes are at https://www.riverton.gov/minutes. Register on https://www.riverton.gov/tram",
    "The final list:\n1. Eat vegetables\n2. Sleep eight hours\n3. Walk daily\n",
    "```python\nvalues = [1, 2]\nprint(values[1])  # see [3].\n```\n",
    "Sources of funding vary by city. The grant is one of them.",
    "References:\nThe council cited no studies in its decision.",
    "Sources:\n- Federal grants (40%)\n- Local taxes (60%)\n",
    "He scored 3 [+1] points in the second half (a record).",
    "The final score was [12-5].",
    "",
]


@pytest.mark.parametrize("text", ORDINARY_TEXTS)
def test_a_text_without_citations_comes_back_unchanged(text):
    result = read_citations(text)

    assert result.text == text
    assert result.citations == ()
    assert result.references == ()
    assert result.offsets.original(3) == 3


@pytest.mark.parametrize(
    ("text", "cleaned", "labels"),
    [
        ("Trams are quiet.[1] Buses are not.[2]", "Trams are quiet. Buses are not.", ["1", "2"]),
        ("Trams are quiet [1]. Buses are not [2].", "Trams are quiet. Buses are not.", ["1", "2"]),
        ("Trams are quiet. [1] Buses are not. [2]", "Trams are quiet. Buses are not.", ["1", "2"]),
        ("Trams are quiet[1][3].", "Trams are quiet.", ["1", "3"]),
        ("Trams are quiet [1, 3].", "Trams are quiet.", ["1", "3"]),
        ("Trams are quiet [1], [3].", "Trams are quiet.", ["1", "3"]),
        ("Trams are quiet [1-3].", "Trams are quiet.", ["1", "2", "3"]),
        ("Trams are quiet [2–4].", "Trams are quiet.", ["2", "3", "4"]),
        ("Trams are quiet.^2", "Trams are quiet.", ["2"]),
        ("Trams are quiet^2.", "Trams are quiet.", ["2"]),
        ("Trams are quiet.¹²", "Trams are quiet.", ["12"]),
        ("Trams are quiet.【1】", "Trams are quiet.", ["1"]),
        ("Trams are quiet.【3†source】", "Trams are quiet.", ["3"]),
        ("Trams are quiet.【4:0†report.pdf】", "Trams are quiet.", ["4:0"]),
        ("Trams are quiet.[^1]", "Trams are quiet.", ["1"]),
        ("Trams are quiet[^1^][^2^].", "Trams are quiet.", ["1", "2"]),
        ("Trams are quiet [^note].", "Trams are quiet.", ["note"]),
        ("Trams are quiet.[1](https://a.test/1)", "Trams are quiet.", [""]),
        ("Trams are quiet (Sources: [1], [3]).", "Trams are quiet.", ["1", "3"]),
        ("Trams are quiet ([1][3]).", "Trams are quiet.", ["1", "3"]),
    ],
)
def test_every_numbered_form_leaves_the_sentence_whole(text, cleaned, labels):
    result = read_citations(text)

    assert result.text == cleaned
    assert [c.label for c in result.citations] == labels
    # The badge goes where the marker was: before the full stop or after it.
    assert result.citations[0].at in (len("Trams are quiet"), len("Trams are quiet."))


@pytest.mark.parametrize(
    ("text", "cleaned", "points_to", "cites"),
    [
        (
            "Trams are quiet. ([a.test](https://www.a.test/x?utm_source=chatgpt.com&utm_medium=x))",
            "Trams are quiet.",
            Points.URL,
            "https://www.a.test/x",
        ),
        (
            "Trams are quiet ([AP News](https://apnews.com/x), [Reuters](https://reuters.com/y)).",
            "Trams are quiet.",
            Points.URL,
            "https://apnews.com/x",
        ),
        (
            "Trams are quiet https://a.test/x?id=3&utm_campaign=z.",
            "Trams are quiet.",
            Points.URL,
            "https://a.test/x?id=3",
        ),
        ("Trams are quiet (https://a.test/x).", "Trams are quiet.", Points.URL, "https://a.test/x"),
        ("Trams are quiet. <https://a.test/x>", "Trams are quiet.", Points.URL, "https://a.test/x"),
        ("Trams are quiet. Source: https://a.test/x", "Trams are quiet.", Points.URL, "https://a.test/x"),
        (
            "Trams are quiet (https://en.wikipedia.org/wiki/Tram_(vehicle)).",
            "Trams are quiet.",
            Points.URL,
            "https://en.wikipedia.org/wiki/Tram_(vehicle)",
        ),
        ("Trams are quiet (Source: Riverton Tribune).", "Trams are quiet.", Points.NAME, "Riverton Tribune"),
        ("Trams are quiet (Source: 2024).", "Trams are quiet.", Points.NAME, "2024"),
        ("Trams are quiet (source: https://a.test/x).", "Trams are quiet.", Points.URL, "https://a.test/x"),
        ("Trams are quiet (doi:10.1038/nature12373).", "Trams are quiet.", Points.DOI, None),
        ("Trams are quiet, DOI: 10.1038/nature12373.", "Trams are quiet.", Points.DOI, None),
        ("Trams are quiet https://doi.org/10.1038/nature12373.", "Trams are quiet.", Points.DOI, None),
        ("Trams are quiet [1](http://dx.doi.org/10.1038/nature12373).", "Trams are quiet.", Points.DOI, None),
        ("Trams are quiet [[1]](https://a.test/x).", "Trams are quiet.", Points.URL, "https://a.test/x"),
    ],
)
def test_every_address_form_is_cited_and_removed(text, cleaned, points_to, cites):
    result = read_citations(text)

    assert result.text == cleaned
    citation = result.citations[0]
    assert citation.points_to is points_to
    if points_to is Points.NAME:
        assert (citation.url, citation.title) == (None, cites)
    else:
        assert citation.url == (cites or "https://doi.org/10.1038/nature12373")


def test_an_address_in_the_middle_of_a_sentence_is_part_of_it():
    text = "Register at https://www.riverton.gov/tram before May. Trams are quiet https://a.test/q."

    result = read_citations(text)

    assert result.text == "Register at https://www.riverton.gov/tram before May. Trams are quiet."
    assert [c.url for c in result.citations] == ["https://a.test/q"]


def test_an_image_is_not_a_citation():
    text = "The route map:\n\n![Map of the line](https://a.test/map.png)\n"

    assert read_citations(text).text == text


def test_reference_style_links_resolve_to_their_definitions():
    text = (
        "The vote was 7–2. ([Riverton Tribune][1]) It cost [the city][2] $1.9 billion.\n\n"
        '[1]: https://www.rivertontribune.com/vote?utm_source=chatgpt.com "Council backs tram"\n'
        "[2]: https://www.riverton.gov/budget\n"
    )

    result = read_citations(text)

    assert result.text == "The vote was 7–2. It cost the city $1.9 billion.\n\n"
    assert [(c.label, c.url, c.title) for c in result.citations] == [
        ("1", "https://www.rivertontribune.com/vote", "Council backs tram"),
        ("2", "https://www.riverton.gov/budget", ""),
    ]


def test_a_marker_that_opens_its_line_goes_with_the_sentence_after_it():
    text = "Trams are quiet.\n[1] Buses are loud.\n\nSources:\n1. https://a.test/1\n"
    result = read_citations(text)
    sentences = segment(result.text)

    attached = citations_by_sentence(result.citations, [(s.start, s.end) for s in sentences])

    assert result.text == "Trams are quiet.\nBuses are loud.\n\n"
    assert [s.text for s in sentences] == ["Trams are quiet.", "Buses are loud."]
    assert [[c.label for c in cited] for cited in attached] == [[], ["1"]]


def test_without_a_list_a_marker_ending_a_sentence_is_a_citation_pointing_nowhere():
    result = read_citations("Trams are quiet.[1] Buses are loud.")

    [citation] = result.citations
    assert citation.unresolved == "the text has no reference list"
    assert result.text == "Trams are quiet. Buses are loud."


def test_without_a_list_a_marker_inside_a_sentence_counts_once_the_text_cites_with_numbers():
    once = "Paris[1] and Rome have trams."
    twice = "Paris[1] and Rome[2] have trams.[3] Lyon has more.[4]"

    assert read_citations(once).text == once
    assert read_citations(twice).text == "Paris and Rome have trams. Lyon has more."


def test_with_a_list_a_marker_inside_a_sentence_counts():
    text = "Section [3] of the plan covers the depot.\n\nReferences:\n1. https://a.test/1\n"

    [citation] = read_citations(text).citations

    assert citation.unresolved == "no entry 3 in the reference list (1 entries)"


def test_with_a_list_a_year_in_brackets_stays_a_year():
    text = "The plan [2024] was approved.[1]\n\nSources:\n1. https://a.test/1\n"

    result = read_citations(text)

    assert result.text.startswith("The plan [2024] was approved.\n")
    assert [c.label for c in result.citations] == ["1"]


def test_superscript_digits_are_one_number_unless_the_list_says_otherwise():
    listed = "Trams are quiet.¹² Buses are not.\n\nSources:\n1. https://a.test/1\n2. https://a.test/2\n"

    assert [c.label for c in read_citations(listed).citations] == ["1", "2"]
    assert [c.label for c in read_citations("Trams are quiet.¹²").citations] == ["12"]


def test_a_huge_range_is_one_unresolved_citation():
    [citation] = read_citations("Trams are quiet [1-500].").citations

    assert citation.unresolved == "the marker names 500 sources; one marker is read for at most 20"


def test_a_marker_inside_code_is_code():
    text = "Index it.[1]\n\n```\nrows[1] = rows[2]  # see [3]\n```\n\nSources:\n1. https://a.test/1\n"

    result = read_citations(text)

    assert [c.label for c in result.citations] == ["1"]
    assert "rows[1] = rows[2]  # see [3]" in result.text


def test_a_hostile_text_stays_bounded():
    sentence = "Riverton approved a tram line in 2024.[1][2] "
    markers = 100_000
    body = sentence * (markers // 2)
    listing = "\n".join(f"[{n}] https://site{n % 50}.test/page/{n}?utm_source=x" for n in range(1, 10_001))
    text = body[: 1_000_000 - len(listing)] + "\n\nSources:\n" + listing + "\n"

    result = read_citations(text)

    sentences = len(body[: 1_000_000 - len(listing)]) // len(sentence)
    assert len(result.citations) >= 2 * sentences
    assert len(result.references[0].entries) == 10_000
    assert len(result.sources) == 2
    assert len(result.text) < len(text)
    assert not LEFTOVER.search(result.text)


def test_unbalanced_brackets_by_the_hundred_thousand_are_read_once():
    text = "[1, 2, 3" * 50_000 + "[Data: Reports (" * 20_000 + "([a](https://a.test/" * 10_000

    result = read_citations(text)

    assert result.text == text


def test_an_unresolved_citation_is_no_source():
    result = read_citations("Trams are quiet.[1] Buses are loud.[2] Lyon has more (Source: Lyon Transit).")

    assert len(result.unresolved) == 2
    assert result.sources == ("name:Lyon Transit",)
