import pytest

from tests.pipeline.fake_model import FakeModel
from verification.pipeline.judge import (
    MAX_PASSAGE_CHARS,
    NO_VERDICT,
    SYSTEM_PROMPT,
    batches,
    build_prompt,
    judge_claim,
    judge_claims,
    pack,
    parse_judgements,
    parse_verdict,
)
from verification.pipeline.types import ClaimToJudge, EvidenceToJudge, Judgement, MalformedAnswer, Verdict

LABELS = {"E1": "ev-1", "E2": "ev-2", "E3": "ev-3"}


def missing(key: str) -> Judgement:
    return Judgement(key=key, verdict=None, rationale="", error=NO_VERDICT)


def test_it_parses_the_json_shape_in_label_order():
    answer = {
        "judgements": [
            {"evidence": "E2", "rationale": "It says the\n opposite.", "verdict": "not_supported"},
            {"evidence": "E1", "rationale": "It says so.", "verdict": "supported"},
            {"evidence": " e3 ", "rationale": "", "verdict": "irrelevant"},
        ]
    }

    assert parse_judgements(answer, LABELS) == [
        Judgement("ev-1", Verdict.SUPPORTED, "It says so."),
        Judgement("ev-2", Verdict.NOT_SUPPORTED, "It says the opposite."),
        Judgement("ev-3", Verdict.IRRELEVANT, ""),
    ]


def test_it_parses_a_bare_list():
    answer = [{"evidence": "E2", "rationale": "It says so.", "verdict": "supported"}]

    assert parse_judgements(answer, LABELS) == [
        missing("ev-1"),
        Judgement("ev-2", Verdict.SUPPORTED, "It says so."),
        missing("ev-3"),
    ]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            "E1: The passage gives the year 1889. | supported\n"
            "E2: It says 1887, not 1889 | not_supported\n"
            "E3: About the tower's colour, not its age. | irrelevant",
            [
                Judgement("ev-1", Verdict.SUPPORTED, "The passage gives the year 1889."),
                Judgement("ev-2", Verdict.NOT_SUPPORTED, "It says 1887, not 1889"),
                Judgement("ev-3", Verdict.IRRELEVANT, "About the tower's colour, not its age."),
            ],
        ),
        (
            "Here are my judgements:\n\n1. **E1**: Gives the year | **Supported**\n"
            "E2 - Says it was a bridge, so not supported => not supported\n"
            "E3: Off topic. Verdict: irrelevant.",
            [
                Judgement("ev-1", Verdict.SUPPORTED, "Gives the year"),
                Judgement("ev-2", Verdict.NOT_SUPPORTED, "Says it was a bridge, so not supported"),
                Judgement("ev-3", Verdict.IRRELEVANT, "Off topic."),
            ],
        ),
        (
            "E1: supported | Gives the year.\n"
            "E2: The page says 1887: not supported\n"
            "E3: Says nothing of it | maybe | perhaps",
            [
                Judgement("ev-1", Verdict.SUPPORTED, "Gives the year."),
                Judgement("ev-2", Verdict.NOT_SUPPORTED, "The page says 1887"),
                missing("ev-3"),
            ],
        ),
        (
            "E1: supported: The passage says so.\n"
            "E2: not supported: It contradicts the claim.\n"
            "**E3** - irrelevant - Off topic.",
            [
                Judgement("ev-1", Verdict.SUPPORTED, "The passage says so."),
                Judgement("ev-2", Verdict.NOT_SUPPORTED, "It contradicts the claim."),
                Judgement("ev-3", Verdict.IRRELEVANT, "Off topic."),
            ],
        ),
        (
            "Here is my verdict.\nE1 supported: It says: yes.\n- E3: Not_Supported — Wrong year.",
            [
                Judgement("ev-1", Verdict.SUPPORTED, "It says: yes."),
                missing("ev-2"),
                Judgement("ev-3", Verdict.NOT_SUPPORTED, "Wrong year."),
            ],
        ),
    ],
    ids=[
        "as-asked",
        "markdown-and-other-separators",
        "verdict-first-or-after-a-colon-and-no-verdict",
        "verdict-first",
        "prose-and-verdict-first",
    ],
)
def test_it_parses_plain_text_lines(answer, expected):
    assert parse_judgements(answer, LABELS) == expected


def test_a_line_that_kept_the_prompts_angle_brackets_is_read_without_them():
    assert parse_judgements("E2: <Says it was built in 1887.> | <not_supported>", LABELS)[1] == Judgement(
        "ev-2", Verdict.NOT_SUPPORTED, "Says it was built in 1887."
    )


def test_it_gives_an_error_to_the_evidence_the_model_skipped():
    answer = {"judgements": [{"evidence": "E3", "rationale": "Says so.", "verdict": "supported"}]}

    judgements = parse_judgements(answer, LABELS)

    assert [j.key for j in judgements] == ["ev-1", "ev-2", "ev-3"]
    assert [j.error for j in judgements] == [NO_VERDICT, NO_VERDICT, ""]
    assert [j.verdict for j in judgements] == [None, None, Verdict.SUPPORTED]


def test_it_keeps_the_first_usable_verdict_for_a_label():
    answer = {
        "judgements": [
            {"evidence": "E1", "rationale": "unclear", "verdict": "maybe"},
            {"evidence": "E1", "rationale": "first", "verdict": "supported"},
            {"evidence": "E1", "rationale": "second", "verdict": "irrelevant"},
        ]
    }

    assert parse_judgements(answer, LABELS)[0] == Judgement("ev-1", Verdict.SUPPORTED, "first")


def test_it_skips_entries_that_are_not_objects():
    answer = {"judgements": ["E1: supported", {"evidence": "E2", "verdict": "false"}]}

    assert parse_judgements(answer, LABELS) == [
        missing("ev-1"),
        Judgement("ev-2", Verdict.NOT_SUPPORTED, ""),
        missing("ev-3"),
    ]


@pytest.mark.parametrize(
    "answer",
    [
        {"judgements": []},
        {"judgements": [{"evidence": "E9", "rationale": "x", "verdict": "supported"}]},
        {"judgements": [{"evidence": "E1", "rationale": "x", "verdict": "maybe"}]},
        {"judgements": [{"evidence": "E1", "rationale": "x", "verdict": None}]},
        {"judgements": [{"rationale": "x", "verdict": "supported"}]},
        "Sorry, I cannot judge these passages.",
        "E1: maybe: unclear",
        "",
    ],
)
def test_it_rejects_an_answer_that_judges_none_of_the_evidence(answer):
    with pytest.raises(MalformedAnswer):
        parse_judgements(answer, LABELS)


@pytest.mark.parametrize("answer", [None, 5, {"verdicts": []}, {"judgements": "E1: supported"}])
def test_it_rejects_an_answer_of_the_wrong_shape(answer):
    with pytest.raises(MalformedAnswer, match="judgements"):
        parse_judgements(answer, LABELS)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("supported", Verdict.SUPPORTED),
        (" Supported ", Verdict.SUPPORTED),
        ("supports", Verdict.SUPPORTED),
        ("TRUE", Verdict.SUPPORTED),
        ("not_supported", Verdict.NOT_SUPPORTED),
        ("Not Supported", Verdict.NOT_SUPPORTED),
        ("not-supported", Verdict.NOT_SUPPORTED),
        ("unsupported", Verdict.NOT_SUPPORTED),
        ("refuted", Verdict.NOT_SUPPORTED),
        ("contradicted", Verdict.NOT_SUPPORTED),
        ("false", Verdict.NOT_SUPPORTED),
        ("irrelevant", Verdict.IRRELEVANT),
        ("not relevant", Verdict.IRRELEVANT),
        ("Not enough info", Verdict.IRRELEVANT),
        ("maybe", None),
        ("", None),
        (None, None),
        (True, None),
    ],
)
def test_parse_verdict_accepts_synonyms(value, expected):
    assert parse_verdict(value) == expected


@pytest.mark.parametrize(
    ("count", "size", "expected"),
    [
        (0, 8, []),
        (3, 2, [[0, 1], [2]]),
        (4, 2, [[0, 1], [2, 3]]),
        (41, 20, [list(range(0, 20)), list(range(20, 40)), [40]]),
    ],
)
def test_batches_splits_in_order(count, size, expected):
    assert batches(list(range(count)), size) == expected


def test_build_prompt_labels_each_passage_with_its_source():
    items = [
        EvidenceToJudge("a", "Eiffel Tower - Wiki", "The tower was completed in 1889."),
        EvidenceToJudge("b", "", "The tower is in Paris."),
    ]

    prompt = build_prompt([ClaimToJudge("The Eiffel Tower was completed in 1889.", "", tuple(items))])

    assert prompt == (
        "C1: The Eiffel Tower was completed in 1889.\n"
        "E1 (from: Eiffel Tower - Wiki)\nThe tower was completed in 1889.\n\n"
        "E2\nThe tower is in Paris."
    )


def test_build_prompt_numbers_evidence_across_claims_and_sends_no_paragraph_for_standalone_claims():
    claims = [
        ClaimToJudge("Claim one.", "", (EvidenceToJudge("a", "", "Passage a."),)),
        ClaimToJudge("Claim two.", "", (EvidenceToJudge("b", "", "Passage b."), EvidenceToJudge("c", "", "c."))),
    ]

    assert build_prompt(claims) == "C1: Claim one.\nE1\nPassage a.\n\nC2: Claim two.\nE2\nPassage b.\n\nE3\nc."


def test_build_prompt_sends_a_given_paragraph_once_for_the_claims_that_have_one():
    claims = [
        ClaimToJudge("It is tall.", "The Eiffel Tower. It is tall.", (EvidenceToJudge("a", "", "Passage a."),)),
        ClaimToJudge("Paris is in France.", "", (EvidenceToJudge("b", "", "Passage b."),)),
        ClaimToJudge("It is old.", "The Eiffel Tower. It is tall.", (EvidenceToJudge("c", "", "Passage c."),)),
    ]

    prompt = build_prompt(claims)

    assert prompt.count("The Eiffel Tower. It is tall.") == 1
    assert prompt.endswith(
        "P1: The Eiffel Tower. It is tall.\n\n"
        "C1 (from P1): It is tall.\nE1\nPassage a.\n\n"
        "C2: Paris is in France.\nE2\nPassage b.\n\n"
        "C3 (from P1): It is old.\nE3\nPassage c."
    )


def test_build_prompt_does_not_repeat_a_title_the_passage_starts_with():
    items = (EvidenceToJudge("a", "Eiffel Tower - Wiki", "Eiffel Tower - Wiki The tower is in Paris."),)

    assert "(from:" not in build_prompt([ClaimToJudge("c", "ctx", items)])


def test_build_prompt_truncates_long_titles_and_passages():
    items = (EvidenceToJudge("a", "T" * 400, "p" * (MAX_PASSAGE_CHARS + 1000) + "END"),)

    prompt = build_prompt([ClaimToJudge("claim", "context", items)])

    assert f"E1 (from: {'T' * 150})\n" in prompt
    assert "T" * 151 not in prompt
    assert prompt.endswith("\n" + "p" * MAX_PASSAGE_CHARS)


def test_judge_claim_maps_labels_back_to_evidence_keys():
    items = [
        EvidenceToJudge("source-7", "Wiki", "The tower was completed in 1889."),
        EvidenceToJudge("source-9", "Blog", "Bananas are yellow."),
    ]
    model = FakeModel("E1: States the year. | supported\nE2: About fruit. | irrelevant")

    judgements = judge_claim(model, claim="Completed in 1889.", context="ctx", items=items)

    assert judgements == [
        Judgement("source-7", Verdict.SUPPORTED, "States the year."),
        Judgement("source-9", Verdict.IRRELEVANT, "About fruit."),
    ]
    assert model.calls == [
        {
            "system": SYSTEM_PROMPT,
            "user": build_prompt([ClaimToJudge("Completed in 1889.", "ctx", tuple(items))]),
            "schema_name": "judgements",
            "schema": None,
        }
    ]


def test_judge_claims_maps_labels_of_every_claim_in_order():
    claims = [
        ClaimToJudge("One.", "ctx", (EvidenceToJudge("a", "", "x"), EvidenceToJudge("b", "", "y"))),
        ClaimToJudge("Two.", "ctx", (EvidenceToJudge("c", "", "z"),)),
    ]
    model = FakeModel("E3: supported: says two\nE1: irrelevant: off topic")

    assert judge_claims(model, claims) == [
        Judgement("a", Verdict.IRRELEVANT, "off topic"),
        missing("b"),
        Judgement("c", Verdict.SUPPORTED, "says two"),
    ]


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ([[1, 2], [3], [4, 5]], [[1, 2, 3], [4, 5]]),
        ([[1, 2, 3, 4, 5]], [[1, 2, 3], [4, 5]]),
        ([[1, 2], [3, 4]], [[1, 2], [3, 4]]),
        ([], []),
    ],
)
def test_pack_keeps_a_claims_evidence_together_unless_it_is_larger_than_a_batch(groups, expected):
    assert pack(groups, 3) == expected


def test_judge_claim_ignores_labels_beyond_its_batch():
    items = [EvidenceToJudge("only", "", "The tower was completed in 1889.")]
    model = FakeModel("E1: supported: yes\nE2: not supported: no")

    assert judge_claim(model, claim="c", context="", items=items) == [Judgement("only", Verdict.SUPPORTED, "yes")]


def test_a_hyphenated_verdict_in_plain_text_is_understood():
    judgements = parse_judgements(
        "E1: not-supported: the page says 1887\nE2: supported - it says so", {"E1": "a", "E2": "b"}
    )

    assert [(j.key, j.verdict, j.rationale) for j in judgements] == [
        ("a", Verdict.NOT_SUPPORTED, "the page says 1887"),
        ("b", Verdict.SUPPORTED, "it says so"),
    ]


# --- prompts that fit the server's context (issue 37)


def long_claims() -> list[ClaimToJudge]:
    return [
        ClaimToJudge(
            text=f"Claim {c} about the tower.",
            context="",
            items=tuple(
                EvidenceToJudge(key=f"c{c}e{i}", source_title="", passage=f"Passage {c}.{i} " + "words " * 150)
                for i in range(3)
            ),
        )
        for c in range(2)
    ]


def test_items_that_do_not_fit_one_prompt_are_asked_in_as_many_calls_as_they_need():
    model = FakeModel("Others: irrelevant")

    judgements = judge_claims(model, long_claims(), prompt_tokens=1000)

    assert [j.key for j in judgements] == [f"c{c}e{i}" for c in range(2) for i in range(3)]
    assert len(model.calls) > 1
    assert all(len(call["system"] + call["user"]) // 3 <= 1000 for call in model.calls)
    # Each claim is written once per prompt that holds its items.
    assert sum(call["user"].count("Claim 0 about") for call in model.calls) <= len(model.calls)


def test_without_a_known_context_the_batch_is_one_call():
    model = FakeModel("Others: irrelevant")

    judge_claims(model, long_claims())

    assert len(model.calls) == 1
