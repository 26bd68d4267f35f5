"""The judge is told the languages of a claim and of its passages (issue 36), and that a passage
in another language can support or refute the claim."""

from tests.pipeline.fake_model import FakeModel
from verification.pipeline.judge import SYSTEM_PROMPT, build_prompt, judge_claims
from verification.pipeline.types import ClaimToJudge, EvidenceToJudge, Judgement, Verdict

SPANISH = "La metformina fue aprobada en Estados Unidos en 1994."


def test_the_instructions_say_a_passage_in_another_language_counts():
    assert "A passage in another language than its claim is judged by what it says" in SYSTEM_PROMPT


def test_a_spanish_claims_english_and_spanish_sources_are_labelled():
    items = (
        EvidenceToJudge("a", "Metformin - FDA", "Metformin was approved by the FDA in 1994.", language="en"),
        EvidenceToJudge("b", "Metformina", "La metformina se aprobó en 1994.", language="es"),
        EvidenceToJudge("c", "", "Metformin was approved in 1994.", language="en"),
        EvidenceToJudge("d", "Metformin", "Approved in 1994.", snippet_only=True, language="en"),
    )

    prompt = build_prompt([ClaimToJudge(SPANISH, "", items, language="es")])

    assert prompt == (
        f"C1 (in Spanish): {SPANISH}\n"
        "E1 (from: Metformin - FDA; in English)\nMetformin was approved by the FDA in 1994.\n\n"
        "E2 (from: Metformina)\nLa metformina se aprobó en 1994.\n\n"
        "E3 (in English)\nMetformin was approved in 1994.\n\n"
        "E4 (from: Metformin; its search snippet only; in English)\nApproved in 1994."
    )


def test_an_english_claim_on_english_pages_is_asked_as_before():
    items = (EvidenceToJudge("a", "Wiki", "The tower was completed in 1889.", language="en"),)
    labelled = build_prompt([ClaimToJudge("The tower was completed in 1889.", "", items, language="en")])
    unlabelled = build_prompt([ClaimToJudge("The tower was completed in 1889.", "", items)])
    assert (
        labelled
        == unlabelled
        == "C1: The tower was completed in 1889.\nE1 (from: Wiki)\nThe tower was completed in 1889."
    )


def test_an_english_claim_is_named_english_when_a_passage_is_not():
    items = (EvidenceToJudge("a", "", "Der Turm wurde 1889 fertiggestellt.", language="de"),)
    prompt = build_prompt([ClaimToJudge("The tower was completed in 1889.", "P", items, language="en")])
    assert prompt.endswith(
        "C1 (from P1, in English): The tower was completed in 1889.\n"
        "E1 (in German)\nDer Turm wurde 1889 fertiggestellt."
    )


def test_a_passage_of_unknown_language_is_not_labelled():
    items = (EvidenceToJudge("a", "", "1889", language=""),)
    assert build_prompt([ClaimToJudge(SPANISH, "", items, language="es")]) == f"C1 (in Spanish): {SPANISH}\nE1\n1889"


def test_an_english_source_supports_a_spanish_claim():
    items = (EvidenceToJudge("fda", "FDA", "Metformin was approved by the FDA in 1994.", language="en"),)
    model = FakeModel("E1: The FDA approved it in 1994. | supports\nOthers: irrelevant")

    [judgement] = judge_claims(model, [ClaimToJudge(SPANISH, "", items, language="es")])

    assert judgement == Judgement("fda", Verdict.SUPPORTED, "The FDA approved it in 1994.")
    assert "E1 (from: FDA; in English)" in model.calls[0]["user"]


def test_a_chinese_passages_context_is_read_in_chinese():
    # The ranker chose the first sentence (highlights); of its context, the judge reads what shares
    # words with the claim: Chinese words are told by their character pairs, not as one long run.
    claim = "埃菲尔铁塔于1889年建成。"
    passage = "埃菲尔铁塔位于巴黎。铁塔于1889年建成，用于世界博览会。本站使用缓存技术提升访问速度。"
    chosen = (0, passage.index("。") + 1)
    items = (EvidenceToJudge("a", "维基百科", passage, highlights=(chosen,), language="zh"),)

    prompt = build_prompt([ClaimToJudge(claim, "", items, language="zh")])

    assert "铁塔于1889年建成，用于世界博览会。" in prompt, "the context sentence that states the claim is kept"
    assert "缓存技术" not in prompt, "context with no word of the claim is left out"
