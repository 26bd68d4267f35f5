import math

import pytest

from tests.pipeline.fake_model import FakeModel
from tests.trail_fixtures import (
    ABERNATHY,
    BOOK_CLAIMS,
    GRAPHRAG,
    GRAPHRAG_CLAIMS,
    HIERARCHY,
    HIERARCHY_CLAIMS,
    NEEDLE_AT,
    book_trail_data,
    load,
)
from tests.trail_model import TrailTestModel
from verification.pipeline.trail_select import (
    GAP,
    SYSTEM_PROMPT,
    NodeSelection,
    SelectionOptions,
    build_prompt,
    node_sentences,
    parse_selection,
    prompt_chunks,
    select_evidence,
)
from verification.pipeline.types import MalformedAnswer

TEXT = "Paris is large. The tower is tall. It was built in 1889. Bread is cheap. Trains are fast."
CLAIM = "The tower was built in 1889."
ASKED = {f"S{n}": n - 1 for n in range(1, 6)}
# Room for any node of the fixtures in one prompt, and no ranking: what VeriTrail sends.
WHOLE = {"max_sentences_per_prompt": 10**6, "max_chars_per_prompt": 10**9, "rank_top_k": None}


def test_it_numbers_sentences_itself_and_keeps_the_selected_ones_with_their_neighbours():
    model = FakeModel({"sentence_ids": ["S3"], "summary": "It says the tower was built in 1889."})

    selection = select_evidence(model, claim=CLAIM, node_id="src", text=TEXT)

    assert selection == NodeSelection(
        node_id="src",
        sentence_ids=("S3",),
        sentences={"S2": "The tower is tall.", "S3": "It was built in 1889.", "S4": "Bread is cheap."},
        summary="It says the tower was built in 1889.",
        prompts=1,
    )
    assert model.calls[0]["system"] == SYSTEM_PROMPT
    assert model.calls[0]["user"] == (
        "Claim: The tower was built in 1889.\n\nText:\nS1: Paris is large.\nS2: The tower is tall.\n"
        "S3: It was built in 1889.\nS4: Bread is cheap.\nS5: Trains are fast."
    )


def test_ids_that_were_not_in_the_prompt_are_dropped():
    model = FakeModel({"sentence_ids": ["S6", "S0", "S99", "s2", "S2", "x"], "summary": "Something."})

    selection = select_evidence(model, claim=CLAIM, node_id="src", text=TEXT)

    assert selection.sentence_ids == ("S2",)


def test_nothing_selected_keeps_no_summary():
    model = FakeModel({"sentence_ids": [], "summary": "The text is about Paris."})

    assert select_evidence(model, claim=CLAIM, node_id="src", text=TEXT) == NodeSelection("src", (), {}, "", 1)


def test_an_id_of_the_nodes_next_prompt_is_dropped_from_this_one():
    text = " ".join(f"Sentence number {n} is here." for n in range(1, 9)) + " The tower was built in 1889."
    options = SelectionOptions(max_sentences_per_prompt=3, rank_top_k=None)

    honest = select_evidence(TrailTestModel(), claim=CLAIM, node_id="n", text=text, options=options)
    inventive = select_evidence(TrailTestModel(invent_ids=True), claim=CLAIM, node_id="n", text=text, options=options)

    # S4 (the next prompt's first sentence) and S999999 were named by every prompt before its own.
    assert honest.sentence_ids == inventive.sentence_ids == ("S9",)
    assert inventive.prompts == 3


@pytest.mark.parametrize(
    ("answer", "ids", "summary"),
    [
        ({"sentence_ids": ["S4", "S2"], "summary": " Says\nso. "}, ["S2", "S4"], "Says so."),
        ({"sentence_ids": ["S2", "S2", "S12"], "summary": None}, ["S2"], ""),
        ({"sentence_ids": ["S2-S4"], "summary": ""}, ["S2", "S3", "S4"], ""),
        (["S5", "S1"], ["S1", "S5"], ""),
        ("Sentences: S3, S1\nSummary: The text gives the year.", ["S1", "S3"], "The text gives the year."),
        (
            "**Sentence IDs:** S2 and S4\n**Summary:** It says so\nover two lines.",
            ["S2", "S4"],
            "It says so over two lines.",
        ),
        ("Evidence: none\nSummary:", [], ""),
        ("S3, S5", ["S3", "S5"], ""),
        ("none", [], ""),
        ("Sentences: S1 to S3", ["S1", "S2", "S3"], ""),
        ("Sentences: S1-S400", [], ""),
    ],
    ids=[
        "json",
        "json-repeats-and-unknown",
        "json-range",
        "bare-list",
        "plain-lines",
        "markdown-labels",
        "plain-none",
        "ids-only",
        "none-only",
        "range-in-words",
        "a-range-of-everything-is-no-answer",
    ],
)
def test_it_parses_json_and_plain_answers(answer, ids, summary):
    assert parse_selection(answer, ASKED) == (ids, summary)


@pytest.mark.parametrize(
    "answer",
    [None, 3, {"ids": ["S1"]}, {"sentence_ids": "S1"}, "I cannot tell which sentences matter.", ""],
)
def test_it_rejects_an_answer_of_another_shape(answer):
    with pytest.raises(MalformedAnswer):
        parse_selection(answer, ASKED)


@pytest.mark.parametrize(
    ("lengths", "max_sentences", "max_chars", "expected"),
    [
        ([10] * 5, 2, 1000, [[0, 1], [2, 3], [4]]),
        ([10] * 5, 10, 40, [[0, 1], [2, 3], [4]]),
        ([10, 50, 10], 10, 60, [[0], [1], [2]]),
        ([100], 10, 20, [[0]]),
        ([], 10, 100, []),
    ],
    ids=["by-count", "by-characters", "a-long-sentence-alone", "too-long-for-any-prompt", "empty"],
)
def test_prompt_chunks_split_in_order_within_both_limits(lengths, max_sentences, max_chars, expected):
    sentences = ["x" * length for length in lengths]
    options = SelectionOptions(max_sentences_per_prompt=max_sentences, max_chars_per_prompt=max_chars, rank_top_k=None)

    # A sentence counts 8 characters more in a prompt (its id and line break).
    assert prompt_chunks("claim", sentences, options) == expected


def test_a_book_length_source_is_split_over_prompts_that_each_fit():
    text = load(book_trail_data()).text("book")
    sentences = node_sentences(text)
    options = SelectionOptions(max_chars_per_prompt=12_000, max_sentences_per_prompt=150, rank_top_k=None)
    model = TrailTestModel()

    selection = select_evidence(model, claim=ABERNATHY, node_id="book", text=text, options=options)

    prompts = [call["user"] for call in model.calls]
    assert selection.prompts == len(prompts)
    # Whole sentences only, so at least as many prompts as the limits need, and few more.
    needed = max(sum(len(s) + 8 for s in sentences) / 12_000, len(sentences) / 150)
    assert math.ceil(needed) <= len(prompts) <= math.ceil(needed * 1.05)
    print(f"\nbook: {len(text):,} characters, {len(sentences):,} sentences, {len(prompts)} prompts")
    assert all(len(p) <= 12_000 + len(f"Claim: {ABERNATHY}\n\nText:\n") for p in prompts)
    shown = [line.split(":")[0] for p in prompts for line in p.splitlines() if line.startswith("S")]
    assert shown == [f"S{n}" for n in range(1, len(sentences) + 1)]
    assert selection.sentence_ids == (f"S{NEEDLE_AT + 1}",)
    assert {call["system"] for call in model.calls} == {SYSTEM_PROMPT}


def test_a_large_node_is_ranked_first_and_sent_in_one_prompt_with_context():
    text = load(book_trail_data()).text("book")
    model = TrailTestModel()

    selection = select_evidence(model, claim=ABERNATHY, node_id="book", text=text, options=SelectionOptions(context=1))

    [prompt] = [call["user"] for call in model.calls]
    needle = f"S{NEEDLE_AT + 1}"
    assert selection.sentence_ids == (needle,)
    assert f"\nS{NEEDLE_AT}: " in prompt and f"\nS{NEEDLE_AT + 2}: " in prompt
    assert "\nS1: " not in prompt
    assert selection.prompts == 1


def test_ranked_sentences_far_apart_are_separated_by_a_gap():
    sentences = ["a b", "c d", "tower x", "e f", "g h", "i j", "tower y", "k l"]

    assert build_prompt("tower", sentences, [1, 2, 3, 5, 6, 7]) == (
        f"Claim: tower\n\nText:\nS2: c d\nS3: tower x\nS4: e f\n{GAP}\nS6: i j\nS7: tower y\nS8: k l"
    )


@pytest.mark.parametrize(
    ("options", "kept"),
    [
        (SelectionOptions(rank_top_k=2, rank_above_sentences=5, context=1), [1, 2, 3, 5, 6, 7]),
        (SelectionOptions(rank_top_k=2, rank_above_sentences=5, context=0), [2, 6]),
        (SelectionOptions(rank_top_k=1, rank_above_sentences=5, context=0), [6]),
        (SelectionOptions(rank_top_k=2, rank_above_sentences=8, context=0), list(range(8))),
        (SelectionOptions(rank_top_k=None, rank_above_sentences=5), list(range(8))),
        (SelectionOptions(rank_top_k=2, max_sentences_per_prompt=7, context=0), [2, 6]),
        (SelectionOptions(rank_top_k=2, max_sentences_per_prompt=8, context=0), list(range(8))),
    ],
    ids=[
        "large-with-context",
        "large-without-context",
        "top-1",
        "not-large",
        "ranking-off",
        "large-as-more-than-one-prompt",
        "fits-one-prompt",
    ],
)
def test_the_ranker_keeps_the_best_sentences_of_a_large_node_only(options, kept):
    sentences = ["Bread is cheap.", "Rain fell.", "The tower is tall.", "Cats nap.", "Dogs run.", "Snow fell."]
    sentences += ["The tower was built in 1889.", "Trains are fast."]

    assert [i for chunk in prompt_chunks(CLAIM, sentences, options) for i in chunk] == kept


def _all_planted():
    for data, claims in ((HIERARCHY, HIERARCHY_CLAIMS), (GRAPHRAG, GRAPHRAG_CLAIMS), (book_trail_data(), BOOK_CLAIMS)):
        trail = load(data)
        for planted in claims:
            for node_id in trail.ids:
                yield planted.claim, node_id, trail.text(node_id)


@pytest.mark.parametrize("top_k", [1, 3, SelectionOptions().rank_top_k])
def test_the_ranker_prefilter_loses_little_recall_on_the_fixtures(top_k):
    ranked_options = SelectionOptions(**WHOLE | {"rank_top_k": top_k, "rank_above_sentences": 0, "context": 1})
    found = kept = shown_whole = shown_ranked = 0
    for claim, node_id, text in _all_planted():
        whole_model, ranked_model = TrailTestModel(), TrailTestModel()
        whole = select_evidence(whole_model, claim=claim, node_id=node_id, text=text, options=SelectionOptions(**WHOLE))
        ranked = select_evidence(ranked_model, claim=claim, node_id=node_id, text=text, options=ranked_options)
        found += len(whole.sentence_ids)
        kept += len(set(whole.sentence_ids) & set(ranked.sentence_ids))
        shown_whole += sum(call["user"].count("\nS") for call in whole_model.calls)
        shown_ranked += sum(call["user"].count("\nS") for call in ranked_model.calls)

    recall, share = kept / found, shown_ranked / shown_whole
    print(
        f"\nranker top {top_k} ±1 on every node: recall {recall:.3f} of {found} selections, "
        f"{share:.2%} of the sentences sent"
    )
    assert found > 40
    assert recall >= 0.95
    assert share < 0.05


def test_a_large_node_with_nothing_like_the_claim_costs_no_call():
    model = TrailTestModel()
    options = SelectionOptions(rank_above_sentences=0)

    selection = select_evidence(model, claim="Quokkas live on Rottnest.", node_id="n", text=TEXT, options=options)

    assert (selection, model.calls) == (NodeSelection("n", (), {}, "", 0), [])


def test_every_prompt_of_a_claim_starts_alike_so_a_server_can_reuse_the_prefix():
    trail = load(HIERARCHY)
    model = TrailTestModel()

    for node_id in trail.ids:
        select_evidence(model, claim=CLAIM, node_id=node_id, text=trail.text(node_id))

    assert {call["system"] for call in model.calls} == {SYSTEM_PROMPT}
    assert all(call["user"].startswith(f"Claim: {CLAIM}\n\nText:\nS1: ") for call in model.calls)
