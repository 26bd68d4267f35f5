"""Quick mode's part of the decomposition (issue 29): the model's own label after each claim,
read from messy answers, and the label's probability from the answer's token logprobs."""

import math
import re

import pytest

from tests.pipeline.fake_model import FakeModel
from verification.clients.llm import decode_answer
from verification.pipeline.decompose import (
    QUICK_SYSTEM_PROMPT,
    QUICK_TOP_LOGPROBS,
    SYSTEM_PROMPT,
    decompose_chunk,
    known_by_model,
    label_probabilities,
    parse_chunk,
    parse_claims,
    scored,
)
from verification.pipeline.types import ClaimDraft, SegmentedSentence, TokenLogprob

CONTEXT = ("Metformin is the first-line drug for type 2 diabetes.", "It was approved in the US in 1994.")
TARGETS = [
    SegmentedSentence(
        index=i, text=text, start=0, end=len(text), paragraph_index=0, context=CONTEXT, position_in_context=i
    )
    for i, text in enumerate(CONTEXT)
]


def tokens(text: str, label_probability: float = 0.999, other: float = 0.9) -> list[TokenLogprob]:
    """The text as a server's tokens (a word with the space before it): label words at
    `label_probability`, every other token at `other`."""
    pieces = re.findall(r"\s*\S+|\s+$", text)
    assert "".join(pieces) == text
    return [TokenLogprob(piece, math.log(label_probability if _is_label(piece) else other)) for piece in pieces]


def _is_label(piece: str) -> bool:
    return re.sub(r"[\W_]", "", piece).lower() in ("true", "false", "unsure")


class LogprobModel:
    """A model whose server gives the answer's token logprobs (or, with `tokens=None`, none), and
    streams it line by line to `on_text` as a server would."""

    def __init__(self, answer: str, tokens: list[TokenLogprob] | None):
        self.answer, self.tokens = answer, tokens
        self.calls: list[dict] = []

    def complete(self, *, system, user, schema_name, schema, parse, on_text=None, logprobs=0, max_tokens=0, done=None):
        self.calls.append({"system": system, "user": user, "logprobs": logprobs})
        if on_text is not None:
            for end in (m.end() for m in re.finditer("\n", self.answer)):
                on_text(self.answer[:end], _tokens_until(self.tokens, end))
        return parse(decode_answer(self.answer), self.tokens)


def _tokens_until(found: list[TokenLogprob] | None, end: int) -> list[TokenLogprob] | None:
    if found is None:
        return None
    taken, length = [], 0
    for token in found:
        if length >= end:
            break
        taken.append(token)
        length += len(token.token)
    return taken


@pytest.mark.parametrize(
    ("line", "claim", "query", "label"),
    [
        pytest.param(
            "- Metformin lowers blood sugar. | metformin blood sugar | true",
            "Metformin lowers blood sugar.",
            "metformin blood sugar",
            "true",
            id="as-asked",
        ),
        pytest.param(
            "- Paris is in Spain. | paris country | **False**",
            "Paris is in Spain.",
            "paris country",
            "false",
            id="bold-capitalised",
        ),
        pytest.param("* It rains. | rain | label: Unsure.", "It rains.", "rain", "unsure", id="label-colon-period"),
        pytest.param(
            "1. Water is wet. | water wet | TRUE (confident)",
            "Water is wet.",
            "water wet",
            "true",
            id="numbered-with-a-remark",
        ),
        pytest.param("- Zeus exists. | zeus | unknown", "Zeus exists.", "zeus", "unsure", id="unknown-is-unsure"),
        pytest.param(
            "- Paris is in France. | true", "Paris is in France.", "Paris is in France.", "true", id="no-query"
        ),
        pytest.param(
            "- False memories are common. | false memory syndrome",
            "False memories are common.",
            "false memory syndrome",
            "",
            id="a-query-that-starts-with-a-label-word-is-no-label",
        ),
        pytest.param("- A is B. | a b | c d", "A is B.", "a b | c d", "", id="no-label-keeps-the-query-whole"),
    ],
)
def test_a_claims_label_is_read_from_the_end_of_its_line(line, claim, query, label):
    assert parse_claims(line) == [ClaimDraft(text=claim, query=query, label=label)]


def test_labels_are_read_from_a_chunk_answer_with_headers_and_json():
    answer = "**S1:**\n- Metformin is first-line. | metformin first line | true\nS2: none"
    as_json = {"sentences": [{"sentence": "S2", "claims": [{"claim": "A is B.", "query": "a b", "label": "False"}]}]}

    assert parse_chunk(answer, {"S1": 0, "S2": 1})[0][0].label == "true"
    assert parse_chunk(as_json, {"S1": 0, "S2": 1}) == {1: [ClaimDraft("A is B.", "a b", label="false")]}


def test_a_labels_probability_is_the_product_of_its_tokens_probabilities():
    answer = "S1:\n- A is B. | a b | true\n- C is D. | c d | false"
    split = [
        TokenLogprob(t, lp)
        for t, lp in [
            ("S1:\n- A is B. | a b |", -0.5),
            (" tr", math.log(0.9)),
            ("ue", math.log(0.8)),
            ("\n- C is D. | c d | ", -0.1),
            ("false", math.log(0.999)),
        ]
    ]
    assert "".join(t.token for t in split) == answer

    found = label_probabilities(split)

    assert found == {"a is b.": pytest.approx(0.72), "c is d.": pytest.approx(0.999)}


def test_a_labels_probability_is_found_in_a_json_answer_too():
    answer = '{"sentences": [{"sentence": "S1", "claims": [{"claim": "A  is B.", "query": "a", "label": "true"}]}]}'

    # The label's token is '"true"}]}]}', the answer's last.
    assert label_probabilities(tokens(answer, label_probability=0.97)) == {"a is b.": pytest.approx(0.97)}


def test_without_logprobs_a_label_has_no_probability():
    drafts = [ClaimDraft("A is B.", "a b", label="true")]

    assert scored(drafts, None) == drafts
    assert not known_by_model(drafts[0], 0.995)


@pytest.mark.parametrize(
    ("label", "probability", "known"),
    [
        ("true", 0.996, True),
        ("false", 0.995, True),
        ("true", 0.99, False),
        ("unsure", 0.9999, False),
        ("", 1.0, False),
        ("true", None, False),
    ],
)
def test_only_a_true_or_false_label_at_the_threshold_spares_a_search(label, probability, known):
    assert known_by_model(ClaimDraft("A.", "a", label=label, probability=probability), 0.995) is known


def test_the_quick_prompt_only_adds_to_the_plain_one_which_stays_as_it_was():
    plain = FakeModel({"sentences": [{"sentence": "S1", "claims": []}, {"sentence": "S2", "claims": []}]})

    decompose_chunk(plain, TARGETS)

    assert plain.calls[0]["system"] == SYSTEM_PROMPT and "label" not in SYSTEM_PROMPT
    assert QUICK_SYSTEM_PROMPT.startswith(SYSTEM_PROMPT) and QUICK_SYSTEM_PROMPT != SYSTEM_PROMPT


def test_a_quick_chunk_asks_for_logprobs_and_gives_each_claim_its_labels_probability():
    answer = (
        "S1:\n- Metformin is the first-line drug for type 2 diabetes. | metformin first line | true\n"
        "S2:\n- Metformin was approved in the US in 1994. | metformin approval 1994 | unsure\n"
    )
    model = LogprobModel(answer, tokens(answer, label_probability=0.998))
    handed_on: dict[int, list[ClaimDraft]] = {}

    found = decompose_chunk(model, TARGETS, on_sentence=handed_on.setdefault, quick=True)

    assert model.calls[0]["system"] == QUICK_SYSTEM_PROMPT and model.calls[0]["logprobs"] == QUICK_TOP_LOGPROBS
    first, second = found[0][0], found[1][0]
    assert (first.label, first.probability) == ("true", pytest.approx(0.998))
    assert (second.label, second.probability) == ("unsure", pytest.approx(0.998))
    assert handed_on == found  # the first sentence, handed on while streaming, has its probability too


def test_a_quick_chunk_from_a_server_without_logprobs_has_labels_without_probabilities():
    answer = "S1:\n- Metformin is first-line. | metformin | true\nS2:\n- Approved in 1994. | metformin 1994 | false\n"
    found = decompose_chunk(LogprobModel(answer, None), TARGETS, quick=True)

    assert [(c.label, c.probability) for claims in found.values() for c in claims] == [("true", None), ("false", None)]
