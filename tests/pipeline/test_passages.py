import numpy as np
import pytest

from verification.clients.embeddings import SentenceEmbedder
from verification.pipeline.passages import (
    DENSE_SHORTLIST,
    FOLLOWERS,
    MAX_PAGE_SENTENCES,
    merge_windows,
    page_excerpt,
    page_sentences,
    rank_sentences,
    select_passages,
    tokenize,
)
from verification.pipeline.types import Passage

PAGE = [
    "Paris is the capital of France.",
    "The city has many museums and parks.",
    "The Eiffel Tower was completed in 1889.",
    "It was built as the entrance to the World's Fair.",
    "Gustave Eiffel's company designed the tower.",
    "Bananas are rich in potassium.",
    "The Louvre is the largest art museum in the world.",
    "Many tourists visit every summer.",
    "The metro carries millions of riders.",
    "Croissants are a popular breakfast.",
]
CLAIM = "The Eiffel Tower was completed in 1889"


def highlighted(passage) -> list[str]:
    return [passage.text[start:end] for start, end in passage.highlights]


@pytest.fixture(scope="module")
def embedder():
    from verification.clients.embeddings import load_embedder

    return load_embedder("sentence-transformers/all-MiniLM-L6-v2")


def test_it_keeps_only_the_best_sentence_for_top_1():
    [passage] = select_passages(CLAIM, PAGE, top_k=1, context=0)

    assert passage.text == PAGE[2]
    assert passage.highlights == ((0, len(PAGE[2])),)
    assert passage.score > 0


def test_it_keeps_the_top_k_sentences_as_separate_passages_best_first():
    passages = select_passages(CLAIM, PAGE, top_k=2, context=0)

    assert [p.text for p in passages] == [PAGE[2], PAGE[4]]
    assert passages[0].score > passages[1].score


def test_it_adds_context_sentences_either_side():
    [passage] = select_passages(CLAIM, PAGE, top_k=1, context=1)

    assert passage.text == " ".join(PAGE[1:4])
    assert highlighted(passage) == [PAGE[2]]


def test_it_clips_the_context_at_the_page_edges():
    [passage] = select_passages("Croissants are a popular breakfast", PAGE, top_k=1, context=2)

    assert passage.text == " ".join(PAGE[7:10])
    assert highlighted(passage) == [PAGE[9]]


def test_it_merges_overlapping_windows_into_one_passage():
    [passage] = select_passages(CLAIM, PAGE, top_k=2, context=1)

    assert passage.text == " ".join(PAGE[1:6])
    assert highlighted(passage) == [PAGE[2], PAGE[4]]


def test_a_merged_passage_scores_as_its_best_sentence():
    [best] = select_passages(CLAIM, PAGE, top_k=1, context=0)
    [merged] = select_passages(CLAIM, PAGE, top_k=2, context=1)

    assert merged.score == pytest.approx(best.score)


@pytest.mark.parametrize(
    ("claim", "top_k", "context"),
    [
        (CLAIM, 1, 0),
        (CLAIM, 2, 1),
        ("Eiffel designed the tower for the World's Fair", 3, 1),
        ("Eiffel designed the tower for the World's Fair", 2, 0),
        ("The Louvre is the largest museum", 1, 2),
    ],
)
def test_highlights_are_exact_spans_of_the_matched_sentences(claim, top_k, context):
    passages = select_passages(claim, PAGE, top_k=top_k, context=context)

    assert passages
    for passage in passages:
        assert passage.highlights
        for text in highlighted(passage):
            assert text in PAGE
        starts = [start for start, _ in passage.highlights]
        assert starts == sorted(starts)


def test_it_orders_passages_by_score_not_by_page_order():
    passages = select_passages(
        "The Louvre in Paris is the largest art museum in the world",
        PAGE,
        top_k=2,
        context=0,
    )

    assert [p.text for p in passages] == [PAGE[6], PAGE[0]]
    assert passages[0].score > passages[1].score


@pytest.mark.parametrize(
    ("claim", "sentences"),
    [
        ("Quantum chromodynamics describes quarks", PAGE),
        ("the of and it was", PAGE),
        (CLAIM, []),
    ],
    ids=["no-shared-word", "only-stopwords", "empty-page"],
)
def test_it_finds_no_passage_without_overlap(claim, sentences):
    assert select_passages(claim, sentences, top_k=3, context=1) == []


@pytest.mark.parametrize(
    ("indices", "context", "count", "expected"),
    [
        ([], 1, 5, []),
        ([4], 0, 10, [(4, 4)]),
        ([4], 1, 10, [(3, 5)]),
        ([0], 2, 3, [(0, 2)]),
        ([9], 2, 10, [(7, 9)]),
        ([5, 1], 1, 10, [(0, 2), (4, 6)]),
        ([2, 3], 0, 10, [(2, 3)]),
        ([2, 4], 0, 10, [(2, 2), (4, 4)]),
        ([2, 5], 1, 10, [(1, 6)]),
        ([2, 6], 1, 10, [(1, 3), (5, 7)]),
        ([1, 3, 8], 1, 10, [(0, 4), (7, 9)]),
        ([4, 5], 3, 10, [(1, 8)]),
    ],
    ids=[
        "none",
        "no-context",
        "context",
        "clipped-start",
        "clipped-end",
        "page-order",
        "adjacent",
        "gap",
        "touching",
        "apart",
        "three",
        "nested",
    ],
)
def test_merge_windows(indices, context, count, expected):
    assert merge_windows(indices, context, count) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel-Tower, in 1889!", ["eiffel", "tower", "1889"]),
        ("It was what it was.", []),
        ("Gustave EIFFEL's company", ["gustav", "eiffel", "s", "compani"]),
        ("Vaccines were opened; vaccine opening", ["vaccin", "open", "vaccin", "open"]),
    ],
)
def test_tokenize_drops_stopwords_and_punctuation_and_stems(text, expected):
    assert tokenize(text) == expected


def test_a_word_form_the_claim_does_not_use_still_matches():
    page = ["The museum opens at nine.", "The bridge was opening to traffic in 1845.", "Tickets cost ten pounds."]

    [passage] = select_passages("The bridge opened in 1845", page, top_k=1, context=0)

    assert passage.text == page[1]


REPEATED_TITLE_PAGE = [
    "Caldervale harbour history",  # meta title
    "Home › History › Caldervale harbour history",
    "Caldervale harbour history",  # the heading
    "The Caldervale harbour was opened in 1845 by the town council.",
    "Caldervale Harbour History",  # the breadcrumb's last crumb, capitalised
    "Its first pier was built of timber from the harbour forests.",
    "The harbour was rebuilt in 1902 after a storm.",
    "Fishing boats still use the harbour.",
]


@pytest.mark.parametrize("dense", [False, True], ids=["sparse", "dense"])
def test_a_line_the_page_repeats_takes_one_slot_of_the_top_k(dense, embedder):
    passages = select_passages(
        "The Caldervale harbour opened in 1845",
        REPEATED_TITLE_PAGE,
        top_k=3,
        context=0,
        embedder=embedder if dense else None,
    )
    chosen = [text for p in passages for text in highlighted(p)]

    assert len(chosen) == 3
    assert sum(text.lower() == "caldervale harbour history" for text in chosen) <= 1
    assert REPEATED_TITLE_PAGE[3] in chosen


class CountingEmbedder:
    """The real model, recording what it was asked to embed."""

    def __init__(self, embedder) -> None:
        self.embedder, self.asked = embedder, []

    def encode(self, texts):
        self.asked.append(list(texts))
        return self.embedder.encode(texts)


def test_dense_mode_also_weighs_the_sentence_after_a_match_that_shares_no_word_with_the_claim(embedder):
    filler = [f"Unrelated line {n} about weather and parking in the old town." for n in range(60)]
    notes = [f"Notes on Norbridge, part {n}." for n in range(40)]  # more lines sharing a word than BM25 keeps
    page = [*filler[:20], "The Norbridge library opened to readers in 1871.", "It held forty thousand volumes."]
    page += [*notes, *filler[20:]]
    counting = CountingEmbedder(embedder)

    select_passages("The Norbridge library had 40,000 books", page, top_k=3, context=0, embedder=counting)

    [asked] = counting.asked
    assert "It held forty thousand volumes." in asked
    assert len(asked) <= 1 + DENSE_SHORTLIST + FOLLOWERS  # the claim, BM25's shortlist, the followers of its best


def test_dense_passages_do_not_depend_on_what_was_encoded_with_the_page(embedder):
    claim = "Eiffel's company built the tower for the World's Fair"
    fresh = SentenceEmbedder(embedder.model)
    mixed = SentenceEmbedder(embedder.model)
    # The page's sentences first encoded among others, longer and shorter: their cached vectors
    # come from those calls.
    mixed.encode([*PAGE[::-1], *PARAPHRASE_PAGE, "A much longer line about something else entirely. " * 8, claim])

    alone = select_passages(claim, PAGE, top_k=3, context=1, embedder=fresh)
    among_others = select_passages(claim, PAGE, top_k=3, context=1, embedder=mixed)

    assert alone == among_others
    # Exactly, not nearly: batched torch moves these scores by ~3e-8, enough to swap a near tie.
    assert np.array_equal(rank_sentences(claim, PAGE, fresh), rank_sentences(claim, PAGE, mixed))


def test_page_sentences_splits_lines_and_sentences():
    text = "A heading\nFirst sentence. Second one.\nLast line."

    assert page_sentences(text) == ["A heading", "First sentence.", "Second one.", "Last line."]


def test_page_sentences_caps_a_huge_page():
    text = "\n".join(f"Line number {i}." for i in range(MAX_PAGE_SENTENCES + 10))

    sentences = page_sentences(text)

    assert len(sentences) == MAX_PAGE_SENTENCES
    assert sentences[-1] == f"Line number {MAX_PAGE_SENTENCES - 1}."


PARAPHRASE_PAGE = [
    "The museum opens at nine in the morning.",
    "A doctor gave the sick man pills for his high blood pressure.",
    "Tickets can be bought online.",
    "Parking is free on Sundays.",
]
PARAPHRASED_CLAIM = "The physician prescribed medication to treat hypertension."


def test_sparse_mode_misses_a_paraphrase():
    assert select_passages(PARAPHRASED_CLAIM, PARAPHRASE_PAGE, top_k=2, context=0) == []


def test_dense_mode_finds_a_paraphrase_with_no_shared_words(embedder):
    passages = select_passages(PARAPHRASED_CLAIM, PARAPHRASE_PAGE, top_k=2, context=0, embedder=embedder)

    assert [p.text for p in passages] == [PARAPHRASE_PAGE[1]]
    assert passages[0].score > 0


def test_dense_mode_keeps_a_lexical_match_and_adds_the_paraphrase(embedder):
    page = [*PARAPHRASE_PAGE, "The patient waited in the garden for the bus."]

    sparse = select_passages(PARAPHRASED_CLAIM + " patient", page, top_k=2, context=0)
    dense = select_passages(PARAPHRASED_CLAIM + " patient", page, top_k=2, context=0, embedder=embedder)

    assert [p.text for p in sparse] == [page[4]]
    assert sorted(p.text for p in dense) == sorted([page[1], page[4]])


def test_a_sentence_stating_the_claim_is_found_even_when_its_words_fill_half_the_page():
    sentences = [
        "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
        "The Eiffel Tower was completed in 1889 for the World's Fair.",
    ]

    chosen = select_passages("The Eiffel Tower was completed in 1889.", sentences, top_k=1, context=0)

    assert [p.text for p in chosen] == [sentences[1]]


def test_a_pages_passages_become_one_excerpt_in_page_order_with_every_highlight():
    later = Passage(text="Gamma delta.", highlights=((0, 12),), score=0.9, position=7)
    earlier = Passage(text="Alpha. Beta.", highlights=((7, 12),), score=0.4, position=2)

    excerpt = page_excerpt([later, earlier])

    assert excerpt.text == "Alpha. Beta. … Gamma delta."
    assert [excerpt.text[start:end] for start, end in excerpt.highlights] == ["Beta.", "Gamma delta."]
    assert excerpt.score == 0.9 and excerpt.position == 2


def test_a_page_without_matching_passages_gives_no_excerpt():
    assert page_excerpt([]) is None
