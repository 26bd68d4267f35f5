"""What the judge writes and reads, kept small for a local model: a reason only for a passage
that supports or refutes, and no context the ranker scored unrelated to the claim."""

import pytest

from tests.fakes import FakeLLM
from tests.pipeline.fake_model import FakeModel
from verification.clients.llm import LLMClient
from verification.pipeline.judge import NO_VERDICT, SYSTEM_PROMPT, build_prompt, judge_claims, parse_judgements
from verification.pipeline.passages import EXCERPT_GAP, judged_text
from verification.pipeline.types import ClaimToJudge, EvidenceToJudge, Judgement, Verdict

LABELS = {"E1": "ev-1", "E2": "ev-2", "E3": "ev-3"}


def highlighted(passage: str, *sentences: str) -> tuple[tuple[int, int], ...]:
    return tuple((passage.index(s), passage.index(s) + len(s)) for s in sentences)


@pytest.mark.parametrize(
    "answer",
    [
        "E1: States the year. | supports\nE2: irrelevant\nE3: Says 1887, not 1889. | refutes",
        # the irrelevant passage left out, as the prompt asks, and the line that stands for it
        "E1: States the year. | supports\nE3: Says 1887, not 1889. | refutes\nOthers: irrelevant",
    ],
)
def test_an_irrelevant_passage_has_no_reason_whether_listed_or_left_out(answer):
    assert parse_judgements(answer, LABELS) == [
        Judgement("ev-1", Verdict.SUPPORTED, "States the year."),
        Judgement("ev-2", Verdict.IRRELEVANT, ""),
        Judgement("ev-3", Verdict.NOT_SUPPORTED, "Says 1887, not 1889."),
    ]


def test_it_parses_a_bare_verdict_written_with_markdown_or_a_period():
    answer = "**E1**: irrelevant.\n2. E2 - irrelevant\nE3: Off topic. | irrelevant"

    assert [(j.verdict, j.rationale) for j in parse_judgements(answer, LABELS)] == [
        (Verdict.IRRELEVANT, ""),
        (Verdict.IRRELEVANT, ""),
        (Verdict.IRRELEVANT, "Off topic."),
    ]


def test_the_closing_line_alone_makes_every_passage_irrelevant_however_the_model_words_it():
    for closing in ("Others: irrelevant", "**All other passages** - irrelevant.", "the rest: Irrelevant"):
        judgements = parse_judgements(closing, LABELS)

        assert [(j.verdict, j.error) for j in judgements] == [(Verdict.IRRELEVANT, "")] * 3, closing


def test_an_answer_cut_short_before_its_closing_line_leaves_its_unlisted_passages_without_a_verdict():
    judgements = parse_judgements("E2: Says 1887, not 1889. | refutes\nE3: The year", LABELS)

    assert [j.verdict for j in judgements] == [None, Verdict.NOT_SUPPORTED, None]
    assert judgements[0].error == NO_VERDICT and judgements[2].error == NO_VERDICT


def test_a_passage_two_claims_share_is_read_once_and_judged_for_each():
    passage = "The Eiffel Tower was completed in 1889 in Paris for the world fair."
    claims = [
        ClaimToJudge("The Eiffel Tower was completed in 1889.", "", (EvidenceToJudge("a", "Tower", passage),)),
        ClaimToJudge("The Eiffel Tower was built for the world fair.", "", (EvidenceToJudge("b", "Tower", passage),)),
        ClaimToJudge("The Eiffel Tower is in Rome.", "", (EvidenceToJudge("c", "", "Rome has seven hills."),)),
    ]

    prompt = build_prompt(claims)
    llm = FakeLLM().start()
    try:
        client = LLMClient(model="m", base_url=llm.url + "/v1", api_key="k", timeout=10, max_retries=0)
        judgements = judge_claims(client, claims)
    finally:
        llm.stop()

    assert prompt.count(passage) == 1
    assert "E2 (from: Tower)\nthe same passage as E1" in prompt
    assert [(j.key, j.verdict) for j in judgements] == [
        ("a", Verdict.SUPPORTED),
        ("b", Verdict.SUPPORTED),
        ("c", Verdict.IRRELEVANT),
    ]


def test_a_model_following_the_prompt_keeps_its_reasons_for_supports_and_refutes():
    llm = FakeLLM().start()
    try:
        client = LLMClient(model="m", base_url=llm.url + "/v1", api_key="k", timeout=10, max_retries=0)
        items = (
            EvidenceToJudge("yes", "", "The Eiffel Tower was completed in 1889 in Paris."),
            EvidenceToJudge("no", "", "It is a myth: the Eiffel Tower was not completed in 1889 in Paris."),
            EvidenceToJudge("off", "", "Bananas are yellow and grow in warm places."),
        )
        judgements = judge_claims(client, [ClaimToJudge("The Eiffel Tower was completed in 1889.", "", items)])
        request = llm.requests[-1]
    finally:
        llm.stop()

    assert [(j.key, j.verdict) for j in judgements] == [
        ("yes", Verdict.SUPPORTED),
        ("no", Verdict.NOT_SUPPORTED),
        ("off", Verdict.IRRELEVANT),
    ]
    assert judgements[0].rationale and judgements[1].rationale
    assert judgements[2].rationale == ""
    assert request["messages"][0]["content"] == SYSTEM_PROMPT
    assert llm.answers[-1].splitlines()[-1] == "Others: irrelevant" and "E3" not in llm.answers[-1]


def test_the_judge_reads_no_context_the_ranker_scored_unrelated():
    chosen = "The Eiffel Tower was completed in 1889."
    passage = (
        f"Tickets can be bought online. {chosen} Subscribe to our newsletter."
        f"{EXCERPT_GAP}Share this page. In short, the tower opened in 1889 for the fair. Parking is nearby."
    )
    claim = ClaimToJudge(
        "The Eiffel Tower was completed in 1889.",
        "",
        (EvidenceToJudge("e", "", passage, highlighted(passage, chosen, "In short, the tower opened in 1889")),),
    )

    prompt = build_prompt([claim])

    assert f"E1\n{chosen}{EXCERPT_GAP}In short, the tower opened in 1889 for the fair." in prompt
    for filler in ("Tickets", "Subscribe", "Share this page", "Parking"):
        assert filler not in prompt


def test_context_that_shares_a_word_with_the_claim_or_that_a_kept_sentence_refers_to_is_kept():
    passage = (
        "Maria Sklodowska was a Polish physicist. She was born in Warsaw in 1867. "
        "Warsaw is the capital of Poland. Cookies help us improve the site."
    )
    chosen = "She was born in Warsaw in 1867."

    text = judged_text("Marie Curie was born in Warsaw.", passage, highlighted(passage, chosen))

    assert text == (
        "Maria Sklodowska was a Polish physicist. She was born in Warsaw in 1867. Warsaw is the capital of Poland."
    )


def test_a_passage_without_highlights_is_read_whole():
    passage = "Tickets can be bought online. Bananas are yellow."

    assert judged_text("The Eiffel Tower was completed in 1889.", passage, ()) == passage


def test_two_judge_calls_begin_with_the_same_instructions_byte_for_byte():
    model = FakeModel("E1: irrelevant")
    for claim in ("The tower opened in 1889.", "Metformin lowers blood sugar."):
        judge_claims(model, [ClaimToJudge(claim, "", (EvidenceToJudge("e", "", f"About: {claim}"),))])

    first, second = (call["system"] + "\n" + call["user"] for call in model.calls)
    assert first.startswith(SYSTEM_PROMPT) and second.startswith(SYSTEM_PROMPT)
    assert SYSTEM_PROMPT not in model.calls[0]["user"]


def test_the_judge_is_told_which_passage_is_only_a_search_snippet():
    claims = [
        ClaimToJudge(
            "The Eiffel Tower was completed in 1889.",
            "",
            (
                EvidenceToJudge("read", "Eiffel Tower - Wiki", "The tower was completed in 1889."),
                EvidenceToJudge("snippet", "Eiffel Tower facts", "Completed in 1889, the tower …", snippet_only=True),
                EvidenceToJudge("untitled", "", "Completed in 1889 …", snippet_only=True),
            ),
        )
    ]

    prompt = build_prompt(claims)

    assert "E1 (from: Eiffel Tower - Wiki)\n" in prompt
    assert "E2 (from: Eiffel Tower facts; its search snippet only)\n" in prompt
    assert "E3 (from: a search snippet only)\n" in prompt
