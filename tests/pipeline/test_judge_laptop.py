"""What the judge writes and reads, kept small for a local model: a reason only for a passage
that supports or refutes, and no context the ranker scored unrelated to the claim."""

from tests.fakes import FakeLLM
from tests.pipeline.fake_model import FakeModel
from verification.clients.llm import LLMClient
from verification.pipeline.judge import SYSTEM_PROMPT, build_prompt, judge_claims, parse_judgements
from verification.pipeline.passages import EXCERPT_GAP, judged_text
from verification.pipeline.types import ClaimToJudge, EvidenceToJudge, Judgement, Verdict

LABELS = {"E1": "ev-1", "E2": "ev-2", "E3": "ev-3"}


def highlighted(passage: str, *sentences: str) -> tuple[tuple[int, int], ...]:
    return tuple((passage.index(s), passage.index(s) + len(s)) for s in sentences)


def test_it_parses_irrelevant_lines_without_a_reason():
    answer = "E1: States the year. | supports\nE2: irrelevant\nE3: Says 1887, not 1889. | refutes"

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


def test_the_prompt_asks_for_a_reason_only_where_the_passage_decides_something():
    assert "For supports or refutes, a reason" in SYSTEM_PROMPT
    assert "E2: irrelevant" in SYSTEM_PROMPT.splitlines()[-1]


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
