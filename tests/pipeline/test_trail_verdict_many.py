"""Round verdicts for several claims in one call (trail_verdict_many): each claim gets the verdict
it gets asked alone, with one call instead of one per claim."""

import pytest

from tests.trail_model import TrailTestModel
from verification.pipeline.trail_graph import parse_trail
from verification.pipeline.trail_select import NodeSelection
from verification.pipeline.trail_verdict import NO_EVIDENCE, RoundVerdict, TrailVerdict, build_prompt, judge_round
from verification.pipeline.trail_verdict_many import SCHEMA, build_prompt_many, judge_rounds, parse_verdicts
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


def source(*sentences: str) -> NodeSelection:
    ids = tuple(f"S{n}" for n in range(1, len(sentences) + 1))
    return NodeSelection("src", ids, dict(zip(ids, sentences, strict=True)), "", 1)


def summary(text: str) -> NodeSelection:
    return NodeSelection("sum", ("S1",), {"S1": text}, text, 1)


NOTHING = NodeSelection("sum", (), {}, "", 1)
# Claims whose rounds get each verdict there is, and one with no evidence (no call for it).
ROUNDS = [
    ("The tower was built in 1889.", [NOTHING, source("Paris grew.", "The tower was built in 1889.")]),
    ("The bridge opened in 1901.", [source("The bridge never opened in 1901.")]),
    ("The mill burned in 1920.", [NOTHING]),
    ("The canal froze in 1950.", [summary("The canal froze in 1950"), source("The canal never froze in 1950.")]),
    ("The chapel was rebuilt in stone.", [summary("The chapel was rebuilt")]),
]


class Scripted:
    """Answers each kind of call with its own fixed answer."""

    def __init__(self, answers: dict) -> None:
        self.answers, self.calls = answers, []

    def complete(self, *, system, user, schema_name, schema, parse, max_tokens=0, done=None):
        self.calls.append({"schema_name": schema_name, "user": user})
        return parse(self.answers[schema_name])


@pytest.mark.parametrize("plain", [False, True], ids=["json", "plain"])
def test_each_claim_gets_the_verdict_it_gets_alone_in_one_call(plain):
    together = TrailTestModel(plain=plain)
    verdicts = judge_rounds(together, TRAIL, ROUNDS)

    alone = [judge_round(TrailTestModel(plain=plain), TRAIL, claim, selections) for claim, selections in ROUNDS]
    assert verdicts == alone
    assert [v.verdict for v in verdicts] == [
        TrailVerdict.FULLY_SUPPORTED,
        TrailVerdict.CONTRADICTED,
        TrailVerdict.NOT_FULLY_SUPPORTED,
        TrailVerdict.INCONCLUSIVE,
        TrailVerdict.NOT_FULLY_SUPPORTED,
    ]
    assert verdicts[2] == RoundVerdict(TrailVerdict.NOT_FULLY_SUPPORTED, NO_EVIDENCE, called=False)
    assert [call["schema_name"] for call in together.calls] == ["trail_verdicts"]


def test_the_prompt_holds_each_claims_round_as_it_is_shown_alone_after_its_label():
    prompt = build_prompt_many(TRAIL, [ROUNDS[0], ROUNDS[3]])

    assert prompt == (f"[C1] {build_prompt(TRAIL, *ROUNDS[0])}\n\n[C2] {build_prompt(TRAIL, *ROUNDS[3])}")


def test_one_round_to_ask_is_asked_as_trail_verdict_asks_it():
    model = TrailTestModel()
    verdicts = judge_rounds(model, TRAIL, [ROUNDS[0], ROUNDS[2]])

    assert [call["schema_name"] for call in model.calls] == ["trail_verdict"]
    assert [v.called for v in verdicts] == [True, False]


def test_no_round_with_evidence_makes_no_call():
    model = TrailTestModel()
    assert [v.called for v in judge_rounds(model, TRAIL, [ROUNDS[2], ROUNDS[2]])] == [False, False]
    assert model.calls == []


def test_a_claim_the_answer_leaves_out_is_asked_alone():
    model = Scripted(
        {
            "trail_verdicts": {"verdicts": [{"claim": "C2", "reasoning": "It says never.", "verdict": "contradicted"}]},
            "trail_verdict": {"reasoning": "It says so.", "verdict": "fully_supported"},
        }
    )
    verdicts = judge_rounds(model, TRAIL, [ROUNDS[0], ROUNDS[1]])

    assert verdicts == [
        RoundVerdict(TrailVerdict.FULLY_SUPPORTED, "It says so.", called=True),
        RoundVerdict(TrailVerdict.CONTRADICTED, "It says never.", called=True),
    ]
    assert [call["schema_name"] for call in model.calls] == ["trail_verdicts", "trail_verdict"]
    assert model.calls[1]["user"] == build_prompt(TRAIL, *ROUNDS[0])


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(
            {"verdicts": [{"claim": "C2", "reasoning": "It  says\nso.", "verdict": "fully_supported"}]},
            {"C2": (TrailVerdict.FULLY_SUPPORTED, "It says so.")},
            id="json-a-claim-left-out",
        ),
        pytest.param(
            [
                {"claim": "[c1]", "verdict": "refuted"},
                {"claim": "C1", "verdict": "fully_supported"},
                {"claim": "C9", "verdict": "fully_supported"},
                {"claim": "C2", "verdict": "maybe"},
            ],
            {"C1": (TrailVerdict.CONTRADICTED, "")},
            id="bare-list-first-answer-kept-unknown-label-and-unreadable-verdict-dropped",
        ),
        pytest.param(
            "C1\nReasoning: The year differs.\nVerdict: contradicted\n\n**C2:** Verdict: supported",
            {"C1": (TrailVerdict.CONTRADICTED, "The year differs."), "C2": (TrailVerdict.FULLY_SUPPORTED, "")},
            id="plain-blocks",
        ),
    ],
)
def test_it_parses_each_claims_verdict_and_reasoning(answer, expected):
    assert parse_verdicts(answer, ["C1", "C2"]) == expected


@pytest.mark.parametrize("answer", [None, "I cannot help with that.", {"verdict": "fully_supported"}])
def test_it_refuses_an_answer_of_another_shape(answer):
    with pytest.raises(MalformedAnswer):
        parse_verdicts(answer, ["C1", "C2"])


def test_the_schema_offers_every_verdict():
    assert SCHEMA["properties"]["verdicts"]["items"]["properties"]["verdict"]["enum"] == [v.value for v in TrailVerdict]
