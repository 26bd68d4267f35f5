"""Claims and queries in the text's language (issue 36): what the decomposition's prompt says of
it, and the English query a thin web's language gets beside its own."""

import pytest

from tests.pipeline.fake_model import FakeModel
from verification.pipeline.decompose import (
    SYSTEM_PROMPT,
    build_prompt,
    decompose_chunk,
    english_query,
    parse_chunk,
    parse_claims,
)
from verification.pipeline.types import SegmentedSentence

GERMAN = ("Der Eiffelturm steht in Paris.", "Er wurde 1889 fertiggestellt.")
ARABIC = ("برج إيفل يقع في باريس.", "اكتمل بناء البرج عام 1889.")


def targets(context: tuple[str, ...]) -> list[SegmentedSentence]:
    return [
        SegmentedSentence(
            index=i, text=text, start=0, end=len(text), paragraph_index=0, context=context, position_in_context=i
        )
        for i, text in enumerate(context)
    ]


def test_an_english_or_unknown_text_is_asked_as_before():
    before = build_prompt(targets(GERMAN))
    assert build_prompt(targets(GERMAN), "en") == before
    assert build_prompt(targets(GERMAN), None) == before
    assert build_prompt(targets(GERMAN), "xx") == before  # a code factsite has no name for
    assert "language" not in before and "in English" not in before


def test_the_model_writes_a_german_texts_claims_and_queries_in_german():
    prompt = build_prompt(targets(GERMAN), "de")
    assert prompt.endswith(
        "Target sentences: S1, S2\n"
        "The text is in German: write the claims and their queries in German, in the text's own words.\n"
        "Answer:"
    )
    assert "| en:" not in prompt  # German's web is large: its own queries find pages enough


def test_without_queries_only_the_claims_language_is_said():
    prompt = build_prompt(targets(GERMAN), "de", queries=False)
    assert "write the claims in German" in prompt and "queries" not in prompt


def test_a_thin_webs_language_gets_an_english_query_too():
    prompt = build_prompt(targets(ARABIC), "ar")
    assert "The text is in Arabic: write the claims and their queries in Arabic" in prompt
    assert 'After each claim\'s query add " | en: " and the same query in English' in prompt
    assert "- <claim in Arabic> | <query in Arabic> | en: <the query in English>" in prompt
    # No English query is asked when the model writes no queries at all.
    assert "| en:" not in build_prompt(targets(ARABIC), "ar", queries=False)


def test_the_instructions_stay_the_same_for_every_language():
    model = FakeModel("S1:\n- برج إيفل يقع في باريس. | برج إيفل باريس | en: eiffel tower paris\nS2:\n")
    decompose_chunk(model, targets(ARABIC), language="ar")
    decompose_chunk(model, targets(GERMAN), language="de")
    assert [call["system"] for call in model.calls] == [SYSTEM_PROMPT, SYSTEM_PROMPT]
    assert "in Arabic" in model.calls[0]["user"] and "in German" in model.calls[1]["user"]


def test_a_claims_english_query_is_read_apart_from_its_own():
    found = parse_chunk(
        "S1:\n- برج إيفل يقع في باريس. | برج إيفل باريس | en: Eiffel Tower Paris\n"
        "S2:\n- اكتمل بناء البرج عام 1889. | بناء البرج 1889\n",
        {"S1": 0, "S2": 1},
    )
    first, second = found[0][0], found[1][0]
    assert (first.text, first.query, first.english_query) == (
        "برج إيفل يقع في باريس.",
        "برج إيفل باريس",
        "Eiffel Tower Paris",
    )
    assert (second.query, second.english_query) == ("بناء البرج 1889", "")


def test_quick_modes_label_comes_after_the_english_query():
    [claim] = parse_claims("- برج إيفل يقع في باريس. | برج إيفل باريس | en: eiffel tower paris | true")
    assert (claim.query, claim.english_query, claim.label) == ("برج إيفل باريس", "eiffel tower paris", "true")


def test_an_english_query_alone_leaves_the_claim_as_its_own_query():
    [claim] = parse_claims("- برج إيفل يقع في باريس. | en: eiffel tower paris")
    assert (claim.query, claim.english_query) == ("برج إيفل يقع في باريس.", "eiffel tower paris")


def test_json_claims_may_give_their_english_query():
    [claim] = parse_claims(
        {"claims": [{"claim": "ताजमहल आगरा में है।", "query": "ताजमहल आगरा", "english_query": "taj mahal agra"}]}
    )
    assert (claim.query, claim.english_query) == ("ताजमहल आगरा", "taj mahal agra")


def test_an_english_query_that_repeats_the_query_is_dropped():
    [claim] = parse_claims("- Der Eiffelturm steht in Paris. | Eiffelturm Paris | en: eiffelturm paris")
    assert claim.english_query == ""


def test_a_query_that_only_holds_the_letters_en_is_not_cut():
    # French: "en" is a word of the query, not a marker (no colon after it).
    assert english_query("tour Eiffel construite en 1889") == ("tour Eiffel construite en 1889", "")
    assert english_query("tour Eiffel | EN: Eiffel tower built 1889") == ("tour Eiffel", "Eiffel tower built 1889")


@pytest.mark.parametrize(
    "line",
    [
        "- भारत की राजधानी नई दिल्ली है। | भारत की राजधानी | true | en: capital of India",
        "- भारत की राजधानी नई दिल्ली है। | भारत की राजधानी | en: capital of India | true",
    ],
)
def test_quick_mode_and_an_english_query_are_read_in_either_order(line):
    # Both instructions say to add their part after the query: a model writes them either way.
    (draft,) = parse_claims(line)

    assert (draft.query, draft.english_query, draft.label) == ("भारत की राजधानी", "capital of India", "true")
