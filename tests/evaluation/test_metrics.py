"""Metrics against numbers worked out by hand (in the comments), never by the code under test."""

import pytest

from verification.evaluation.datasets import ErrorSpan
from verification.evaluation.metrics import (
    STANCE_TO_VERDICT,
    Binary,
    binary,
    bootstrap_interval,
    boundary_scores,
    classification,
    error_types_caught,
    predict_not_factual,
    reference_boundaries,
    sentence_is_factual,
    span_caught,
)
from verification.pipeline.segment import segment

# (gold_not_factual, predicted_not_factual)
TP, FP, FN, TN = (True, True), (False, True), (True, False), (False, False)


def test_binary_counts_a_two_by_two_confusion():
    counts = binary([TP] * 3 + [FP] + [FN] * 2 + [TN] * 4)
    # precision 3/(3+1) = 0.75; recall 3/(3+2) = 0.6; F1 = 2·0.75·0.6/(0.75+0.6) = 0.9/1.35 = 2/3.
    assert (counts.tp, counts.fp, counts.fn, counts.tn) == (3, 1, 2, 4)
    assert counts.precision == pytest.approx(0.75)
    assert counts.recall == pytest.approx(0.6)
    assert counts.f1 == pytest.approx(2 / 3)
    assert counts.to_dict() == {
        "tp": 3,
        "fp": 1,
        "fn": 2,
        "tn": 4,
        "precision": pytest.approx(0.75),
        "recall": pytest.approx(0.6),
        "f1": pytest.approx(2 / 3),
    }


def test_undefined_scores_are_zero():
    # Nothing predicted not factual: precision 0/0, and with no true positive F1 is 0 too.
    counts = binary([FN, TN])
    assert (counts.precision, counts.recall, counts.f1) == (0.0, 0.0, 0.0)
    assert Binary().f1 == 0.0


@pytest.mark.parametrize(
    ("start", "end", "factual"),
    [
        (0, 10, True),  # ends where the error [10, 20) begins: no character in common
        (0, 11, False),  # shares character 10
        (19, 30, False),  # shares character 19
        (20, 30, True),  # begins where the error ends
        (12, 15, False),  # inside it
    ],
)
def test_a_sentence_is_not_factual_when_it_shares_a_character_with_an_error(start, end, factual):
    assert sentence_is_factual(start, end, [ErrorSpan(10, 20, "entity")]) is factual


@pytest.mark.parametrize(("start", "end", "factual"), [(0, 10, False), (10, 20, False), (11, 20, True), (0, 9, True)])
def test_an_insertion_belongs_to_the_sentence_it_is_in_or_ends(start, end, factual):
    assert sentence_is_factual(start, end, [ErrorSpan(10, 10, "invented")]) is factual


def test_a_sentence_with_no_errors_is_factual():
    assert sentence_is_factual(0, 50, []) is True


@pytest.mark.parametrize(
    ("credibility", "expected"), [(0.29, True), (0.3, False), (1.0, False), (0.0, True), (None, True)]
)
def test_it_predicts_not_factual_below_the_threshold_or_without_a_score(credibility, expected):
    assert predict_not_factual(credibility, 0.3) is expected


# ---- bootstrap ------------------------------------------------------------------------------

MIXED_TEXTS = [[TP, TN], [FP, TN, TN], [TP, FN], [TN], [TP, TP, FP]]


def test_the_bootstrap_is_deterministic_for_a_seed():
    assert bootstrap_interval(MIXED_TEXTS, seed=7) == bootstrap_interval(MIXED_TEXTS, seed=7)
    assert bootstrap_interval(MIXED_TEXTS, seed=7) != bootstrap_interval(MIXED_TEXTS, seed=8)


@pytest.mark.parametrize("statistic", ["precision", "recall", "f1"])
def test_the_interval_contains_the_point_estimate(statistic):
    pooled = binary(pair for text in MIXED_TEXTS for pair in text)
    # tp 4, fp 2, fn 1: precision 4/6, recall 4/5, F1 8/11.
    assert (pooled.precision, pooled.recall, pooled.f1) == pytest.approx((4 / 6, 4 / 5, 8 / 11))
    low, high = bootstrap_interval(MIXED_TEXTS, statistic=statistic)
    assert low <= getattr(pooled, statistic) <= high
    assert low < high


def test_the_interval_narrows_with_more_texts():
    low_10, high_10 = bootstrap_interval(MIXED_TEXTS * 2)
    low_100, high_100 = bootstrap_interval(MIXED_TEXTS * 20)
    assert high_100 - low_100 < (high_10 - low_10) / 2


def test_identical_texts_give_a_point_interval():
    # Every resample pools copies of [TP, FP]: F1 = 2·1/(2·1 + 1 + 0) = 2/3 each time.
    assert bootstrap_interval([[TP, FP]] * 5) == pytest.approx((2 / 3, 2 / 3))


def test_the_bootstrap_resamples_whole_texts():
    # Two texts, one all TP and one all FP: a resample holds 0, 1 or 2 copies of the TP text, so
    # precision is 0, 1/2 or 1 (the TP text has 3 pairs, the FP text 3) and nothing in between.
    low, high = bootstrap_interval([[TP] * 3, [FP] * 3], statistic="precision", samples=2000)
    assert (low, high) == (0.0, 1.0)


def test_the_bootstrap_of_nothing_is_zero_and_a_wrong_statistic_is_refused():
    assert bootstrap_interval([]) == (0.0, 0.0)
    with pytest.raises(ValueError, match="accuracy"):
        bootstrap_interval(MIXED_TEXTS, statistic="accuracy")


# ---- error types caught -----------------------------------------------------------------------


def test_a_span_is_caught_by_a_flagged_sentence_that_overlaps_it():
    sentences = [(0, 10, False), (11, 30, True)]
    assert span_caught(ErrorSpan(12, 15, "entity"), sentences) is True
    assert span_caught(ErrorSpan(2, 5, "entity"), sentences) is False
    assert span_caught(ErrorSpan(5, 12, "relation"), sentences) is True  # reaches into the flagged one
    assert span_caught(ErrorSpan(30, 30, "invented"), sentences) is True  # an insertion at its end


def test_error_types_are_counted_caught_and_missed_in_favabench_order():
    counts = error_types_caught(
        [("relation", True), ("entity", False), ("entity", True), ("entity", True), ("novel", False)]
    )
    assert counts == {
        "entity": {"caught": 2, "missed": 1},
        "relation": {"caught": 1, "missed": 0},
        "novel": {"caught": 0, "missed": 1},
    }
    assert list(counts) == ["entity", "relation", "novel"]


# ---- classification -------------------------------------------------------------------------


def test_partial_support_counts_as_not_supported():
    assert STANCE_TO_VERDICT == {
        "completely-support": "supported",
        "partially-support": "not_supported",
        "refute": "not_supported",
        "irrelevant": "irrelevant",
    }


def test_classification_by_hand_with_a_failed_judgement():
    S, N, I = "supported", "not_supported", "irrelevant"  # noqa: E741
    pairs = [(S, S)] * 3 + [(S, N), (S, None)] + [(N, N)] * 2 + [(N, I), (I, I), (I, S)]
    result = classification(pairs)
    # 10 pairs, 3 + 2 + 1 = 6 right → accuracy 0.6; the failed one is wrong.
    assert (result["total"], result["correct"], result["failed"]) == (10, 6, 1)
    assert result["accuracy"] == pytest.approx(0.6)
    assert result["labels"] == [S, N, I]
    # supported: 3 right of 4 predicted (P 0.75), of 5 gold (R 0.6) → F1 6/9 = 2/3.
    # not_supported: 2 of 3 predicted, 2 of 3 gold → 2/3 each.  irrelevant: 1 of 2, 1 of 2 → 0.5.
    expected = {S: (0.75, 0.6, 2 / 3, 5), N: (2 / 3, 2 / 3, 2 / 3, 3), I: (0.5, 0.5, 0.5, 2)}
    for label, (precision, recall, f1, support) in expected.items():
        scores = result["per_class"][label]
        assert (scores["precision"], scores["recall"], scores["f1"]) == pytest.approx((precision, recall, f1))
        assert scores["support"] == support
    # macro F1 = (2/3 + 2/3 + 1/2) / 3 = 11/18.
    assert result["macro_f1"] == pytest.approx(11 / 18)
    assert result["confusion"] == {
        S: {S: 3, N: 1, I: 0, "failed": 1},
        N: {S: 0, N: 2, I: 1, "failed": 0},
        I: {S: 1, N: 0, I: 1, "failed": 0},
    }


def test_classification_of_nothing_is_empty():
    result = classification([])
    assert (result["total"], result["accuracy"], result["macro_f1"], result["labels"]) == (0, 0.0, 0.0, [])


# ---- segment boundaries -----------------------------------------------------------------------

RESPONSE = "It rained. We stayed in.\nThe end came."


def test_reference_boundaries_are_segment_ends_without_the_final_one():
    # "It rained." is [0, 10); "We stayed in." is [11, 24); "The end came." [25, 38) ends the text.
    assert reference_boundaries(RESPONSE, ["It rained.", "We stayed  in.", "The end came."]) == {10, 24}


def test_reference_segments_may_differ_in_whitespace():
    assert reference_boundaries(RESPONSE, ["It rained. We", "stayed in. The", "end came.\n"]) == {13, 28}


def test_a_segment_not_in_the_response_is_named():
    with pytest.raises(ValueError, match=r"reference segment 2 \('We left.'\)"):
        reference_boundaries(RESPONSE, ["It rained.", "We left.", "The end came."])


def test_our_segmenter_ends_sentences_where_references_do():
    # The runner passes our sentence ends; both sides end right after the last non-space character.
    predicted = {sentence.end for sentence in segment(RESPONSE)} - {len(RESPONSE)}
    reference = reference_boundaries(RESPONSE, ["It rained.", "We stayed in.", "The end came."])
    assert boundary_scores(predicted, reference)["f1"] == 1.0


def test_boundary_scores_by_hand():
    # 10 and 24 match; 17 is a false split; 30 is missed → P 2/3, R 2/3, F1 2/3.
    assert boundary_scores({10, 17, 24}, {10, 24, 30}) == {
        "tp": 2,
        "fp": 1,
        "fn": 1,
        "precision": pytest.approx(2 / 3),
        "recall": pytest.approx(2 / 3),
        "f1": pytest.approx(2 / 3),
    }


def test_a_tolerance_matches_nearby_boundaries_once_each():
    assert boundary_scores({11, 23}, {10, 24}, tolerance=0)["tp"] == 0
    assert boundary_scores({11, 23}, {10, 24}, tolerance=1)["tp"] == 2
    # 9 and 11 are both within 1 of 10, which matches only one of them.
    scores = boundary_scores({9, 11}, {10}, tolerance=1)
    assert (scores["tp"], scores["fp"], scores["fn"]) == (1, 1, 0)
