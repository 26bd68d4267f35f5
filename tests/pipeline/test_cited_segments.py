"""A text's sentences split without its own citations (issue 34): no marker reaches a sentence, no
reference list is a sentence, each sentence keeps its span in the text as written, and a text
without citations is split exactly as before."""

import pytest

from verification.pipeline import segment
from verification.pipeline.citations import read_citations
from verification.pipeline.cited_segments import segment_cited, sentence_of_citations

ANSWER = (
    "Riverton approved a tram line in 2024 [1]. The line will cost 40 million dollars [2][3].\n"
    "It opens in 2027.[4]\n\n"
    "Sources:\n"
    "[1] Riverton council minutes https://a.test/minutes\n"
    "[2] City paper https://b.test/cost\n"
    "[3] https://c.test/missing\n"
    "[4] https://dead.test/x\n"
)


@pytest.mark.parametrize(
    "text",
    [
        "The Eiffel Tower is in Paris, France. It was completed in 1889.",
        "Section [3] of the code applies. The fee is 10 dollars.\n\n- A list item.\n- Another one.",
        "Prices rose in 2024. x^2 + y^2 is a sum.",
    ],
)
def test_a_text_without_citations_is_split_as_before(text):
    assert segment_cited(read_citations(text)) == segment.segment(text)


def test_no_marker_reaches_a_sentence_and_the_reference_list_is_no_sentence():
    sentences = segment_cited(read_citations(ANSWER))

    assert [s.text for s in sentences] == [
        "Riverton approved a tram line in 2024.",
        "The line will cost 40 million dollars.",
        "It opens in 2027.",
    ]
    assert all("[" not in line for s in sentences for line in s.context)


def test_each_sentence_keeps_its_span_in_the_text_as_written():
    sentences = segment_cited(read_citations(ANSWER))

    assert [ANSWER[s.start : s.end] for s in sentences] == [
        "Riverton approved a tram line in 2024 [1].",
        "The line will cost 40 million dollars [2][3].",
        "It opens in 2027.",
    ]


def test_each_citation_goes_with_the_sentence_it_follows():
    cited = read_citations(ANSWER)

    assert sentence_of_citations(cited, segment_cited(cited)) == [0, 1, 1, 2]
    assert [c.url for c in cited.citations] == [
        "https://a.test/minutes",
        "https://b.test/cost",
        "https://c.test/missing",
        "https://dead.test/x",
    ]


def test_a_citation_in_a_text_without_sentences_has_none():
    cited = read_citations("[1]\n\nSources:\n[1] https://a.test/x\n")

    assert sentence_of_citations(cited, segment_cited(cited)) == [None] * len(cited.citations)
