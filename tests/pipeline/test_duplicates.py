"""Near-duplicate passages: the same text at several URLs is one group, whatever whitespace,
punctuation, boilerplate around it or small edits; different texts on one topic are not."""

import pytest

from verification.pipeline.duplicates import MIN_CONTAINMENT, Candidate, containment, find_duplicates, shingles

WIRE = (
    "The Eiffel Tower was completed in 1889 as the entrance arch to the World's Fair, and at 330 metres "
    "it remained the tallest man-made structure in the world for 41 years until the Chrysler Building."
)


@pytest.mark.parametrize(
    "copy",
    [
        pytest.param(WIRE, id="identical"),
        pytest.param(WIRE.replace(" ", "\n  ").replace(",", " ,"), id="reflowed-whitespace-and-commas"),
        pytest.param(WIRE.upper().replace("'", "’").replace("-", " – "), id="case-quotes-dashes"),
        pytest.param(
            "PARIS (Wire Service) — " + WIRE + " Read more: our travel section. Share this story.",
            id="byline-and-boilerplate-around",
        ),
        pytest.param(WIRE.replace("remained", "stayed").replace("until", "till"), id="two-words-edited"),
    ],
)
def test_a_copy_of_the_same_text_is_a_duplicate_of_the_first(copy):
    assert find_duplicates([Candidate(1, WIRE), Candidate(2, copy)]) == {2: 1}


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(
            "Gustave Eiffel's company designed and built the tower in Paris; it was completed in 1889 and "
            "criticised by many artists of the time, who called it useless and monstrous.",
            id="same-topic-other-words",
        ),
        pytest.param("The Eiffel Tower was completed in 1889.", id="a-short-common-sentence"),
    ],
)
def test_a_different_text_on_the_same_topic_is_not_a_duplicate(other):
    assert find_duplicates([Candidate(1, WIRE), Candidate(2, other)]) == {}


def test_every_copy_joins_the_first_item_and_the_first_counts():
    other = (
        "Visitors climbed the tower in record numbers this year, the operator said on Monday in a statement to press."
    )
    candidates = [Candidate(7, WIRE), Candidate(3, other), Candidate(5, WIRE + " Share."), Candidate(9, other + "!")]

    assert find_duplicates(candidates) == {5: 7, 9: 3}


def test_groups_do_not_chain_through_a_copy_that_drifted():
    words = WIRE.split()
    new_words = "one two three four five six seven eight nine ten eleven twelve".split()
    drifted = " ".join(words[:28] + new_words[:6])
    farther = " ".join(words[16:28] + new_words)
    assert containment(shingles(farther), shingles(drifted)) >= MIN_CONTAINMENT  # a copy of the copy…
    assert containment(shingles(farther), shingles(WIRE)) < MIN_CONTAINMENT  # …but not of the original

    duplicates = find_duplicates([Candidate(1, WIRE), Candidate(2, drifted), Candidate(3, farther)])

    assert duplicates == {2: 1}


def test_shingles_ignore_punctuation_whitespace_and_case():
    assert (
        shingles("The  tower, in PARIS!")
        == shingles("the tower in paris")
        == {("the", "tower", "in"), ("tower", "in", "paris")}
    )


def test_passages_too_short_to_tell_are_never_similar():
    short = shingles("The tower is tall.")

    assert containment(short, short) == 0.0


def test_nothing_to_compare_gives_no_duplicates():
    assert find_duplicates([]) == {}
    assert find_duplicates([Candidate(1, ""), Candidate(2, "")]) == {}
