import pytest

from tests.pipeline.fake_model import FakeModel
from tests.trail_model import TrailTestModel
from verification.pipeline.trail_graph import parse_trail
from verification.pipeline.trail_select import NodeSelection
from verification.pipeline.trail_verdict import (
    NO_EVIDENCE,
    SCHEMA,
    SYSTEM_PROMPT,
    RoundVerdict,
    TrailVerdict,
    build_prompt,
    judge_round,
    parse_trail_verdict,
    parse_verdict,
)
from verification.pipeline.types import MalformedAnswer

TRAIL = parse_trail(
    {
        "nodes": [
            {"id": "src", "text": "Source."},
            {"id": "sum", "text": "Summary.", "from": ["src"]},
            {"id": "final", "text": "Final.", "from": ["sum", "src"]},
        ]
    },
    max_nodes=10,
    max_chars=1000,
)
CLAIM = "The tower was built in 1889."
SOURCE = NodeSelection(
    node_id="src",
    sentence_ids=("S3", "S7"),
    sentences={
        "S2": "Paris grew.",
        "S3": "The tower was built in 1889.",
        "S4": "It is tall.",
        "S6": "Rain fell.",
        "S7": "Its builder was Eiffel.",
    },
    summary="The source gives the year.",
    prompts=1,
)
SUMMARY = NodeSelection("sum", ("S1",), {"S1": "Built 1889."}, "The summary says it was built in 1889.", 1)
NOTHING = NodeSelection("sum", (), {}, "", 1)


def test_no_selected_sentence_is_not_fully_supported_without_a_call():
    model = FakeModel({"reasoning": "x", "verdict": "fully_supported"})

    assert judge_round(model, TRAIL, CLAIM, [NOTHING, NodeSelection("src", (), {}, "", 2)]) == RoundVerdict(
        TrailVerdict.NOT_FULLY_SUPPORTED, NO_EVIDENCE, called=False
    )
    assert model.calls == []


def test_it_asks_with_the_schema_and_returns_the_verdict_and_reasoning():
    model = FakeModel({"reasoning": "The source  gives\nthe year.", "verdict": "fully_supported"})

    verdict = judge_round(model, TRAIL, CLAIM, [NOTHING, SOURCE])

    assert verdict == RoundVerdict(TrailVerdict.FULLY_SUPPORTED, "The source gives the year.", called=True)
    assert model.calls == [
        {
            "system": SYSTEM_PROMPT,
            "user": build_prompt(TRAIL, CLAIM, [NOTHING, SOURCE]),
            "schema_name": "trail_verdict",
            "schema": SCHEMA,
        }
    ]


def test_the_prompt_shows_a_sources_sentences_in_context_and_an_intermediate_texts_summary():
    assert build_prompt(TRAIL, CLAIM, [SUMMARY, NOTHING, SOURCE]) == (
        "Claim: The tower was built in 1889.\n\n"
        "Evidence:\n"
        "Intermediate text 1, what it says about the claim:\n"
        "The summary says it was built in 1889.\n\n"
        "Source 2, its evidence:\n"
        "   Paris grew.\n"
        ">> The tower was built in 1889.\n"
        "   It is tall.\n"
        "…\n"
        "   Rain fell.\n"
        ">> Its builder was Eiffel."
    )


def test_an_intermediate_text_without_a_summary_shows_its_sentences():
    bare = NodeSelection("sum", ("S1",), {"S1": "Built 1889.", "S2": "Tall."}, "", 1)

    assert build_prompt(TRAIL, CLAIM, [bare]).endswith("Intermediate text 1, its evidence:\n>> Built 1889.\n   Tall.")


def test_the_sentences_are_ordered_by_number_not_as_text():
    selection = NodeSelection("src", ("S10",), {"S10": "Ten.", "S9": "Nine.", "S11": "Eleven."}, "", 1)

    assert build_prompt(TRAIL, CLAIM, [selection]).endswith("   Nine.\n>> Ten.\n   Eleven.")


@pytest.mark.parametrize(
    ("answer", "verdict", "reasoning"),
    [
        ({"reasoning": "It says so.", "verdict": "fully_supported"}, TrailVerdict.FULLY_SUPPORTED, "It says so."),
        ({"verdict": "Contradicted"}, TrailVerdict.CONTRADICTED, ""),
        ("Reasoning: The year differs.\nVerdict: contradicted", TrailVerdict.CONTRADICTED, "The year differs."),
        (
            "**Reasoning:** Part is missing.\n**Verdict:** Not fully supported.",
            TrailVerdict.NOT_FULLY_SUPPORTED,
            "Part is missing.",
        ),
        ("The sources disagree. | inconclusive", TrailVerdict.INCONCLUSIVE, "The sources disagree."),
        ("It is stated plainly.\nfully supported", TrailVerdict.FULLY_SUPPORTED, "It is stated plainly."),
        ("Verdict: refuted\nReasoning: it says 1887", TrailVerdict.CONTRADICTED, "it says 1887"),
    ],
    ids=["json", "json-without-reasoning", "plain", "markdown", "pipe", "bare-verdict-line", "verdict-first"],
)
def test_it_parses_json_and_plain_answers(answer, verdict, reasoning):
    assert parse_trail_verdict(answer) == (verdict, reasoning)


@pytest.mark.parametrize(
    "answer",
    [None, ["fully_supported"], {"verdict": "maybe"}, {"reasoning": "x"}, "I am not sure.", "Verdict: probably"],
)
def test_it_rejects_an_answer_without_a_verdict(answer):
    with pytest.raises(MalformedAnswer):
        parse_trail_verdict(answer)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("fully_supported", TrailVerdict.FULLY_SUPPORTED),
        ("Supported", TrailVerdict.FULLY_SUPPORTED),
        ("not fully supported", TrailVerdict.NOT_FULLY_SUPPORTED),
        ("NOT-SUPPORTED", TrailVerdict.NOT_FULLY_SUPPORTED),
        ("partially supported", TrailVerdict.NOT_FULLY_SUPPORTED),
        ("refuted", TrailVerdict.CONTRADICTED),
        ("ambiguous", TrailVerdict.INCONCLUSIVE),
        ("supported?", TrailVerdict.FULLY_SUPPORTED),
        ("maybe", None),
        (None, None),
    ],
)
def test_parse_verdict_reads_synonyms_but_not_parts_of_phrases(value, expected):
    assert parse_verdict(value) is expected


@pytest.mark.parametrize(
    ("verdict", "counts"),
    [
        (TrailVerdict.FULLY_SUPPORTED, False),
        (TrailVerdict.INCONCLUSIVE, False),
        (TrailVerdict.NOT_FULLY_SUPPORTED, True),
        (TrailVerdict.CONTRADICTED, True),
    ],
)
def test_contradicted_counts_as_not_fully_supported_for_the_loop(verdict, counts):
    assert verdict.not_fully_supported is counts


def test_the_schema_offers_every_verdict():
    assert SCHEMA["properties"]["verdict"]["enum"] == [v.value for v in TrailVerdict]


@pytest.mark.parametrize(
    ("sentences", "verdict"),
    [
        (["The tower was built in 1889."], TrailVerdict.FULLY_SUPPORTED),
        (["The tower was not built in 1889."], TrailVerdict.CONTRADICTED),
        (["The tower was built in 1889.", "The tower was never built in 1889."], TrailVerdict.INCONCLUSIVE),
        (["The tower was built."], TrailVerdict.NOT_FULLY_SUPPORTED),
    ],
    ids=["supports", "negates", "both", "part"],
)
def test_the_test_model_judges_by_what_the_prompt_shows(sentences, verdict):
    selection = NodeSelection(
        "src",
        tuple(f"S{n}" for n in range(1, len(sentences) + 1)),
        {f"S{n}": s for n, s in enumerate(sentences, 1)},
        "",
        1,
    )

    for plain in (False, True):
        assert judge_round(TrailTestModel(plain=plain), TRAIL, CLAIM, [selection]).verdict is verdict
