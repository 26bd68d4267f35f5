from dataclasses import replace

import pytest

from tests.pipeline.fake_model import FakeModel
from verification.clients.llm import decode_answer
from verification.pipeline.decompose import (
    CHUNK_SENTENCES,
    MAX_CLAIMS_PER_SENTENCE,
    MAX_QUERY_CHARS,
    SYSTEM_PROMPT,
    _Watcher,
    answer_complete,
    build_prompt,
    chunks,
    decompose_chunk,
    decompose_sentence,
    labels,
    parse_chunk,
    parse_claims,
    without_trailing_prose,
)
from verification.pipeline.types import ClaimDraft, MalformedAnswer, SegmentedSentence


def sentence(context: tuple[str, ...], position: int) -> SegmentedSentence:
    return SegmentedSentence(
        index=0,
        text=context[position],
        start=0,
        end=len(context[position]),
        paragraph_index=0,
        context=context,
        position_in_context=position,
    )


CONTEXT = (
    "Metformin is the first-line drug for type 2 diabetes.",
    "It was approved in the US in 1994.",
    "I hope this helps!",
)


def test_build_prompt_numbers_the_context_and_names_the_target():
    prompt = build_prompt([sentence(CONTEXT, 1)])

    assert prompt == (
        "Context:\n"
        "S1: Metformin is the first-line drug for type 2 diabetes.\n"
        "S2: It was approved in the US in 1994.\n"
        "S3: I hope this helps!\n"
        "Target sentences: S2\n"
        "Answer:"
    )


@pytest.mark.parametrize(("position", "target"), [(0, "S1"), (2, "S3")])
def test_build_prompt_targets_the_sentence_position(position, target):
    assert build_prompt([sentence(CONTEXT, position)]).endswith(f"Target sentences: {target}\nAnswer:")


OTHER = ("Aspirin thins the blood.", "It was first sold in 1899.")


def chunk() -> list[SegmentedSentence]:
    return [
        replace(sentence(CONTEXT, 0), index=0),
        replace(sentence(CONTEXT, 1), index=1),
        replace(sentence(OTHER, 1), index=3, paragraph_index=1),
    ]


def test_build_prompt_sends_each_paragraph_once_and_numbers_across_them():
    assert build_prompt(chunk()) == (
        "Context:\n"
        "S1: Metformin is the first-line drug for type 2 diabetes.\n"
        "S2: It was approved in the US in 1994.\n"
        "S3: I hope this helps!\n"
        "\n"
        "S4: Aspirin thins the blood.\n"
        "S5: It was first sold in 1899.\n"
        "Target sentences: S1, S2, S5\n"
        "Answer:"
    )
    assert labels(chunk()) == {"S1": 0, "S2": 1, "S5": 3}


def test_chunks_bound_the_sentences_and_the_context_of_a_call():
    long_paragraph = tuple(f"Sentence {i} says a fact of {'x' * 300}." for i in range(12))
    sentences = [replace(sentence(long_paragraph, i), index=i) for i in range(12)]
    sentences += [replace(sentence(CONTEXT, 0), index=12, paragraph_index=1)]

    groups = chunks(sentences)

    assert [[s.index for s in g] for g in groups] == [list(range(CHUNK_SENTENCES)), [10, 11], [12]]


def test_chunks_keep_short_paragraphs_together():
    assert [[s.index for s in g] for g in chunks(chunk())] == [[0, 1, 3]]


def test_parse_chunk_maps_labels_to_sentences_and_leaves_out_what_is_missing():
    answer = {
        "sentences": [
            {"sentence": "S2", "claims": [{"claim": "Metformin was approved in 1994.", "query": "metformin 1994"}]},
            {"sentence": "S1", "claims": []},
            {"sentence": "S9", "claims": [{"claim": "Not asked.", "query": "x"}]},
        ]
    }

    assert parse_chunk(answer, {"S1": 0, "S2": 1, "S5": 3}) == {
        0: [],
        1: [ClaimDraft("Metformin was approved in 1994.", "metformin 1994")],
    }


def test_parse_chunk_reads_plain_text_sections():
    answer = (
        "Here you go.\nS1:\n- Metformin treats diabetes | metformin diabetes\nS2: none\nS5:\n- Aspirin was sold in 1899"
    )

    assert parse_chunk(answer, {"S1": 0, "S2": 1, "S5": 3}) == {
        0: [ClaimDraft("Metformin treats diabetes", "metformin diabetes")],
        1: [],
        3: [ClaimDraft("Aspirin was sold in 1899", "Aspirin was sold in 1899")],
    }


def test_parse_chunk_reads_headers_numbered_like_a_list():
    answer = "1. **S1:**\n- Metformin treats diabetes. | metformin diabetes\n2) S2:\n3. S5: none"

    assert parse_chunk(answer, {"S1": 0, "S2": 1, "S5": 3}) == {
        0: [ClaimDraft("Metformin treats diabetes.", "metformin diabetes")],
        1: [],
        3: [],
    }


def test_parse_chunk_reads_the_lines_as_asked_with_an_empty_sentence_and_a_claim_on_its_header_line():
    answer = (
        "S1:\n- Metformin treats diabetes. | metformin diabetes\n"
        "- Metformin is a first-line drug. | metformin first line\n"
        "S2:\n"
        "S5: Aspirin was first sold in 1899. | aspirin 1899"
    )

    assert parse_chunk(answer, {"S1": 0, "S2": 1, "S5": 3}) == {
        0: [
            ClaimDraft("Metformin treats diabetes.", "metformin diabetes"),
            ClaimDraft("Metformin is a first-line drug.", "metformin first line"),
        ],
        1: [],
        3: [ClaimDraft("Aspirin was first sold in 1899.", "aspirin 1899")],
    }


@pytest.mark.parametrize(
    "answer", [{"sentences": []}, {"sentences": [{"sentence": "S9", "claims": []}]}, {"claims": []}, "nothing"]
)
def test_parse_chunk_rejects_an_answer_that_covers_no_target(answer):
    with pytest.raises(MalformedAnswer):
        parse_chunk(answer, {"S1": 0, "S2": 1})


class Answers:
    """A model that answers each call with the next of its answers."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.users: list[str] = []

    def complete(self, *, system, user, schema_name, schema, parse, max_tokens=0, done=None):
        self.users.append(user)
        return parse(self.answers.pop(0))


def test_decompose_chunk_asks_again_only_about_the_sentences_left_out():
    model = Answers(
        {"sentences": [{"sentence": "S1", "claims": []}]},
        {"sentences": [{"sentence": "S2", "claims": [{"claim": "Metformin was approved in 1994.", "query": "q"}]}]},
    )

    found = decompose_chunk(model, chunk())

    assert found == {0: [], 1: [ClaimDraft("Metformin was approved in 1994.", "q")]}  # S5 never answered
    assert model.users[1].endswith("Target sentences: S2, S5\nAnswer:")


class Streaming:
    """A model that writes each answer a line at a time to `on_text` (as LLMClient does with a
    server that streams), then parses it, asking once more after a malformed answer as
    LLMClient does. `handed` records each sentence handed on with the lines written by then."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.written = 0
        self.handed: list[tuple[int, int, list[ClaimDraft]]] = []

    def complete(self, *, system, user, schema_name, schema, parse, on_text=None, max_tokens=0, done=None):
        for _attempt in range(2):
            answer = self.answers.pop(0)
            lines = answer.splitlines(keepends=True)
            for self.written in range(1, len(lines) + 1):
                on_text("".join(lines[: self.written]))
            try:
                return parse(decode_answer(answer))
            except MalformedAnswer:
                continue
        raise AssertionError("malformed twice")

    def hand_on(self, index: int, claims: list[ClaimDraft]) -> None:
        self.handed.append((index, self.written, claims))


APPROVED = [ClaimDraft("Metformin was approved in the US in 1994.", "metformin 1994")]
FIRST_LINE = [ClaimDraft("Metformin is the first-line drug for type 2 diabetes.", "metformin first line")]
SOLD = [ClaimDraft("Aspirin was first sold in 1899.", "aspirin 1899")]
STREAMED = (
    "S1:\n- Metformin is the first-line drug for type 2 diabetes. | metformin first line\n"
    "S2:\n- Metformin was approved in the US in 1994. | metformin 1994\n"
    "S5:\n- Aspirin was first sold in 1899. | aspirin 1899"
)


def test_each_sentence_is_handed_on_once_the_next_sentences_header_is_written():
    model = Streaming(STREAMED)

    found = decompose_chunk(model, chunk(), on_sentence=model.hand_on)

    # S1 once the "S2:" line is complete (line 3 of 6), S2 at "S5:", the last when the answer ends.
    assert model.handed == [(0, 3, FIRST_LINE), (1, 5, APPROVED), (3, 6, SOLD)]
    assert found == {0: FIRST_LINE, 1: APPROVED, 3: SOLD}


def test_a_header_still_being_written_does_not_end_the_section_before_it():
    model = Streaming(STREAMED)
    watcher = _Watcher(labels(chunk()), model.hand_on)
    watcher.read("S1:\n- Metformin is the first-line drug for type 2 diabetes. | metformin first line\nS2")
    assert model.handed == []
    watcher.read("S1:\n- Metformin is the first-line drug for type 2 diabetes. | metformin first line\nS2:\n")
    assert [index for index, _, _ in model.handed] == [0]


def test_a_json_answer_is_handed_on_when_it_is_complete():
    answer = (
        '{"sentences": [{"sentence": "S1", "claims": []},\n'
        '{"sentence": "S2", "claims": [{"claim": "Metformin was approved in the US in 1994.",\n'
        '"query": "metformin 1994"}]},\n'
        '{"sentence": "S5", "claims": []}]}'
    )
    model = Streaming(answer)
    found = decompose_chunk(model, chunk(), on_sentence=model.hand_on)

    assert found == {0: [], 1: APPROVED, 3: []}
    assert [(index, written) for index, written, _ in model.handed] == [(0, 4), (1, 4), (3, 4)]


def test_a_sentence_handed_on_keeps_its_claims_when_the_answer_is_asked_again():
    # The first answer's S2 is unreadable, so the whole answer is asked for again; S1 was handed
    # on while it streamed, and the second answer's other wording of it is not used.
    malformed = "S1:\n- Metformin is the first-line drug for type 2 diabetes. | metformin first line\nS2:\n???\nS5:\n"
    reworded = STREAMED.replace("the first-line drug", "the first drug")
    model = Streaming(malformed, reworded)

    found = decompose_chunk(model, chunk(), on_sentence=model.hand_on)

    assert [(index, claims) for index, _, claims in model.handed] == [(0, FIRST_LINE), (1, APPROVED), (3, SOLD)]
    assert found == {0: FIRST_LINE, 1: APPROVED, 3: SOLD}


def test_a_sentence_left_out_and_asked_again_is_handed_on_from_the_second_call():
    model = Streaming(
        "S1:\n- Metformin is the first-line drug for type 2 diabetes. | metformin first line\nS5:\n",
        "S2:\n- Metformin was approved in the US in 1994. | metformin 1994",
    )

    found = decompose_chunk(model, chunk(), on_sentence=model.hand_on)

    assert [index for index, _, _ in model.handed] == [0, 3, 1]
    assert found == {0: FIRST_LINE, 1: APPROVED, 3: []}


def test_decompose_sentence_fails_when_the_model_leaves_the_sentence_out_twice():
    model = Answers({"sentences": [{"sentence": "S7", "claims": []}]}, "S7: none")

    with pytest.raises(MalformedAnswer):
        decompose_sentence(model, sentence(CONTEXT, 1))


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            {"claims": [{"claim": "Metformin was approved in 1994.", "query": "metformin 1994"}]},
            [ClaimDraft("Metformin was approved in 1994.", "metformin 1994")],
        ),
        (
            [{"claim": "Metformin was approved in 1994.", "query": "metformin 1994"}],
            [ClaimDraft("Metformin was approved in 1994.", "metformin 1994")],
        ),
        (
            ["Metformin lowers blood sugar.", "Metformin was approved in 1994."],
            [
                ClaimDraft("Metformin lowers blood sugar.", "Metformin lowers blood sugar."),
                ClaimDraft("Metformin was approved in 1994.", "Metformin was approved in 1994."),
            ],
        ),
        ({"claims": []}, []),
        ([], []),
    ],
    ids=["object", "bare-list-of-objects", "bare-list-of-strings", "empty-object", "empty-list"],
)
def test_it_parses_the_json_shapes(answer, expected):
    assert parse_claims(answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            "- Metformin lowers blood sugar. | metformin blood sugar\n"
            "* Metformin acts on the liver | metformin liver\n"
            "• Metformin is cheap | metformin price\n"
            "1. Metformin was approved in 1994 | metformin 1994\n"
            "2) Metformin is oral|metformin oral",
            [
                ClaimDraft("Metformin lowers blood sugar.", "metformin blood sugar"),
                ClaimDraft("Metformin acts on the liver", "metformin liver"),
                ClaimDraft("Metformin is cheap", "metformin price"),
                ClaimDraft("Metformin was approved in 1994", "metformin 1994"),
                ClaimDraft("Metformin is oral", "metformin oral"),
            ],
        ),
        (
            "Here are the claims:\n- Metformin is oral | metformin oral\nThat is all.",
            [ClaimDraft("Metformin is oral", "metformin oral")],
        ),
        (
            "- Metformin is oral",
            [ClaimDraft("Metformin is oral", "Metformin is oral")],
        ),
    ],
    ids=["every-bullet-style", "prose-around-bullets", "bullet-without-query"],
)
def test_it_parses_a_plain_text_bullet_list(answer, expected):
    assert parse_claims(answer) == expected


@pytest.mark.parametrize("answer", ["", "none", "None.", "No claims", "no claim."])
def test_it_reads_an_empty_or_none_answer_as_no_claims(answer):
    assert parse_claims(answer) == []


@pytest.mark.parametrize(
    "answer",
    [
        "I cannot help with that.",
        "-Metformin is oral",
        "No claims here because it is an opinion.",
        {"claims": "Metformin is oral"},
        {"answer": []},
        42,
        None,
        {"claims": [1]},
        [["Metformin is oral"]],
    ],
)
def test_it_rejects_an_answer_of_the_wrong_shape(answer):
    with pytest.raises(MalformedAnswer):
        parse_claims(answer)


def test_it_collapses_whitespace_and_drops_duplicates():
    answer = {
        "claims": [
            {"claim": "  Metformin   is\noral. ", "query": " metformin \t oral "},
            {"claim": "Metformin is oral.", "query": "metformin oral"},
            {"claim": "Metformin is cheap.", "query": "metformin price"},
        ]
    }

    assert parse_claims(answer) == [
        ClaimDraft("Metformin is oral.", "metformin oral"),
        ClaimDraft("Metformin is cheap.", "metformin price"),
    ]


def test_it_skips_claims_without_text():
    answer = {
        "claims": [
            {"claim": "", "query": "orphan query"},
            {"claim": None, "query": "orphan query"},
            {"query": "orphan query"},
            {"claim": "   ", "query": "orphan query"},
            {"claim": "Metformin is oral.", "query": ""},
        ]
    }

    assert parse_claims(answer) == [ClaimDraft("Metformin is oral.", "Metformin is oral.")]


def test_it_cuts_a_long_query():
    [draft] = parse_claims({"claims": [{"claim": "Metformin is oral.", "query": "q" * 500}]})

    assert draft.query == "q" * MAX_QUERY_CHARS


def test_it_keeps_at_most_the_first_claims_after_deduplicating():
    repeated = [{"claim": "Claim 0.", "query": "q"}] * 3
    distinct = [{"claim": f"Claim {i}.", "query": "q"} for i in range(12)]

    drafts = parse_claims({"claims": repeated + distinct})

    assert [d.text for d in drafts] == [f"Claim {i}." for i in range(MAX_CLAIMS_PER_SENTENCE)]


def test_decompose_sentence_asks_the_model_for_plain_lines():
    model = FakeModel({"claims": [{"claim": "Metformin was approved in the US in 1994."}]})
    target = sentence(CONTEXT, 1)

    drafts = decompose_sentence(model, target)

    assert drafts == [
        ClaimDraft(
            "Metformin was approved in the US in 1994.",
            "Metformin was approved in the US in 1994.",
        )
    ]
    assert model.calls == [
        {
            "system": SYSTEM_PROMPT,
            "user": build_prompt([target]),
            "schema_name": "claims",
            "schema": None,
        }
    ]


def test_decompose_sentence_parses_a_plain_text_answer():
    model = FakeModel("- Metformin was approved in 1994 | metformin approval 1994")

    assert decompose_sentence(model, sentence(CONTEXT, 1)) == [
        ClaimDraft("Metformin was approved in 1994", "metformin approval 1994")
    ]


def test_decompose_sentence_raises_malformed_answer_so_the_model_can_ask_again():
    model = FakeModel("Sorry, I am not able to help with that.")

    with pytest.raises(MalformedAnswer):
        decompose_sentence(model, sentence(CONTEXT, 1))


def test_the_same_claim_with_two_queries_is_checked_once():
    answer = {
        "claims": [{"claim": "Water boils at 100 C.", "query": "a"}, {"claim": "water boils at 100 C.", "query": "b"}]
    }

    assert parse_claims(answer) == [ClaimDraft("Water boils at 100 C.", "a")]


def test_what_a_model_writes_after_its_last_section_is_not_read_as_claims():
    asked = {"S1": 0, "S2": 1}
    answer = "S1:\n- The tower is in Paris. | tower paris\nS2:\n\nI hope this helps. Let me know if you need more."

    assert answer_complete(answer, asked)
    assert parse_chunk(without_trailing_prose(answer, asked), asked) == {
        0: [ClaimDraft(text="The tower is in Paris.", query="tower paris")],
        1: [],
    }
    unfinished = "S1:\n- The tower is in Paris. | tower paris\nS2:\n- It opened"
    assert not answer_complete(unfinished, asked) and without_trailing_prose(unfinished, asked) == unfinished
