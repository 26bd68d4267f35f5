"""A trail's final text and its own citations (issue 34): split without its markers, spans kept in
the text as given; the nodes each sentence cites, first among its claims' candidates."""

import pytest

from tests.trail_fixtures import GRAPHRAG, ISENBY, MARLOW, QUENBY, load
from tests.trail_model import TrailTestModel
from verification.pipeline import segment
from verification.pipeline.trail_citations import (
    GraphragCited,
    cited_first,
    cited_nodes,
    final_segments,
    graphrag_cited,
)
from verification.pipeline.trail_loop import check_claim, next_step
from verification.pipeline.trail_verdict import TrailVerdict

ANSWER = (
    "Riverton approved a tram line in 2024 [Data: Reports (2, 0)]. "
    "The line runs to the harbour [Data: Sources (15); Entities (5, +more)].\n\n"
    "Its fares are not set yet."
)


def test_the_final_texts_markers_never_reach_a_sentence_and_its_spans_stay_in_the_text_as_given():
    sentences = final_segments(ANSWER)

    assert [s.text for s in sentences] == [
        "Riverton approved a tram line in 2024.",
        "The line runs to the harbour.",
        "Its fares are not set yet.",
    ]
    assert not any("Data" in part for s in sentences for part in s.context)
    first, second, third = sentences
    assert ANSWER[first.start : first.end] == "Riverton approved a tram line in 2024 [Data: Reports (2, 0)]."
    assert ANSWER[second.start : second.end].startswith("The line runs to the harbour")
    assert ANSWER[third.start : third.end] == "Its fares are not set yet."


def test_a_final_text_without_citations_is_split_as_before():
    text = "The mill ground barley. The river froze in [2024] and Section [3] stayed shut."
    assert final_segments(text) == segment.segment(text)


def test_what_a_graphrag_answer_cites_record_by_record():
    cited = graphrag_cited(
        "Owner [Data: Sources (15, 16), Reports (1), Entities (5); Relationships (23); Claims (2, +more)]. "
        "Again [Data: Reports (1, 7)]. In code `[Data: Reports (99)]` it is no citation."
    )
    assert cited.reports == ("1", "7")
    assert cited.sources == ("15", "16")
    assert cited.entities == ("5",)
    assert cited.relationships == ("23",)
    assert cited.more == frozenset({"claims"})
    assert graphrag_cited("No markers at all [1].") == GraphragCited()


def trail_of(answer: str):
    nodes = [
        {"id": "text-unit-15", "text": "Unit fifteen."},
        {"id": "report-0", "text": "Report zero.", "from": ["text-unit-15"]},
        {"id": "report-2", "text": "Report two.", "from": ["text-unit-15"]},
        {"id": "answer", "text": answer, "from": ["report-0", "report-2", "text-unit-15"]},
    ]
    return load({"nodes": nodes})


def test_each_sentence_cites_the_nodes_its_markers_name_in_the_order_cited():
    trail = trail_of(ANSWER)
    spans = [(s.index, s.start, s.end) for s in final_segments(ANSWER)]

    # Entity 5 is no node; the third sentence cites nothing.
    assert cited_nodes(trail.ids, ANSWER, spans) == {0: ("report-2", "report-0"), 1: ("text-unit-15",)}


def test_a_marker_naming_a_report_the_trail_lacks_or_a_web_page_names_no_node():
    answer = "Trams run at night [Data: Reports (9)]. Buses too ([bbc.com](https://bbc.com/x))."
    spans = [(s.index, s.start, s.end) for s in final_segments(answer)]
    assert cited_nodes(trail_of(answer).ids, answer, spans) == {}


@pytest.mark.parametrize(
    ("candidates", "cited", "expected"),
    [
        (("report-1", "report-2", "report-3"), ("report-3",), ("report-3", "report-1", "report-2")),
        (("report-1", "report-2", "report-3"), ("report-3", "report-2"), ("report-3", "report-2", "report-1")),
        (("report-1", "report-2"), ("report-9",), ("report-1", "report-2")),
        (("report-1", "report-2"), (), ("report-1", "report-2")),
    ],
    ids=["one-cited", "cited-order", "not-a-candidate", "none"],
)
def test_cited_candidates_go_first(candidates, cited, expected):
    assert cited_first(candidates, cited) == expected


def test_the_loop_looks_at_the_cited_report_first_and_still_reaches_the_same_verdict():
    trail = load(GRAPHRAG)
    candidates, stop = next_step(trail, [], q=3, cited=("report-2",))
    assert stop is None
    assert candidates == ("report-2", "report-1", "report-3")

    model = TrailTestModel()
    result = check_claim(model, trail, MARLOW, q=3, cited=("report-2",))
    assert result.rounds[0].candidates[0] == "report-2"
    assert result.rounds[0].selections[0].node_id == "report-2"
    # The first text the model is asked about is the cited report's, the one that says it.
    assert MARLOW in node_text(model.calls_for("evidence_selection")[0]["user"])
    assert MARLOW not in node_text(check_model_first_call(trail))
    assert result.verdict is check_claim(TrailTestModel(), trail, MARLOW, q=3).verdict
    assert (
        check_claim(TrailTestModel(), trail, ISENBY, q=3, cited=("report-3",)).verdict is TrailVerdict.FULLY_SUPPORTED
    )
    assert check_claim(TrailTestModel(), trail, QUENBY, q=3, cited=("report-3",)).verdict.not_fully_supported


def check_model_first_call(trail) -> str:
    """Without the citation the loop reads the reports in the trail's order: report-1 first."""
    model = TrailTestModel()
    check_claim(model, trail, MARLOW, q=3)
    return model.calls_for("evidence_selection")[0]["user"]


def node_text(prompt: str) -> str:
    return prompt.partition("\nText:\n")[2]
