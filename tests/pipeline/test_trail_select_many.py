"""Evidence selection for several claims against one text in one call (trail_select_many): each
claim gets what it would get asked alone, with one call instead of one per claim."""

import pytest

from tests.trail_fixtures import ASHBY, CORVIN, HARLOW, text
from tests.trail_model import TrailTestModel
from verification.pipeline.trail_select import SelectionOptions, select_evidence
from verification.pipeline.trail_select_many import parse_selections, select_evidence_many

NODE = text(HARLOW, CORVIN, seed=5, filler_count=12)
ASKED = {f"S{n}": n - 1 for n in range(1, 9)}


def test_each_claim_gets_what_it_gets_alone_in_one_call():
    claims = [HARLOW, CORVIN, ASHBY]
    together = TrailTestModel()
    many = select_evidence_many(together, claims=claims, node_id="n", text=NODE)

    alone = [select_evidence(TrailTestModel(), claim=claim, node_id="n", text=NODE) for claim in claims]
    assert [(s.sentence_ids, s.summary) for s in many] == [(s.sentence_ids, s.summary) for s in alone]
    assert [s.sentence_ids != () for s in many] == [True, True, False]
    assert len(together.calls) == 1 and together.calls[0]["schema_name"] == "evidence_selections"


def test_one_claim_is_asked_as_trail_select_asks_it():
    model = TrailTestModel()
    select_evidence_many(model, claims=[HARLOW], node_id="n", text=NODE)
    assert [call["schema_name"] for call in model.calls] == ["evidence_selection"]


def test_a_large_text_is_split_over_prompts_holding_what_any_claim_kept():
    book = text(HARLOW, CORVIN, seed=9, filler_count=400)
    options = SelectionOptions(rank_top_k=5, rank_above_sentences=10, max_sentences_per_prompt=2)
    model = TrailTestModel()
    many = select_evidence_many(model, claims=[HARLOW, CORVIN], node_id="book", text=book, options=options)

    assert all(s.sentence_ids for s in many)
    assert len(model.calls) == many[0].prompts > 1
    assert all(call["user"].count("\nS") <= 2 for call in model.calls)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(
            {"selections": [{"claim": "C2", "sentence_ids": ["S3", "S99"], "summary": "It says so."}]},
            {"C1": ([], ""), "C2": (["S3"], "It says so.")},
            id="json-invented-id-dropped-and-a-claim-left-out",
        ),
        pytest.param(
            [{"claim": "c1", "sentence_ids": ["S2-S4"], "summary": ""}, {"claim": "C9", "sentence_ids": ["S1"]}],
            {"C1": (["S2", "S3", "S4"], ""), "C2": ([], "")},
            id="bare-list-range-and-an-unknown-label",
        ),
        pytest.param(
            "C1\nSentences: S1, S5\nSummary: It names the mill.\nC2: Sentences: none",
            {"C1": (["S1", "S5"], "It names the mill."), "C2": ([], "")},
            id="plain-blocks",
        ),
    ],
)
def test_it_parses_each_claims_ids_and_summary(answer, expected):
    assert parse_selections(answer, ASKED, ["C1", "C2"]) == expected


def test_it_refuses_an_answer_of_another_shape():
    from verification.pipeline.types import MalformedAnswer

    with pytest.raises(MalformedAnswer):
        parse_selections("I cannot help with that.", ASKED, ["C1", "C2"])
