import pytest

from verification.scoring import BAND_LABELS, EvidenceRecord, Tally, band, compute_scores

SUP, NOT, IRR = "supported", "not_supported", "irrelevant"


def records(*rows: tuple[int, str, str]) -> list[EvidenceRecord]:
    """(sentence_index, source_type, verdict) rows, with ids 1..n."""
    return [
        EvidenceRecord(id=i, sentence_index=sentence, source_type=source_type, verdict=verdict)
        for i, (sentence, source_type, verdict) in enumerate(rows, start=1)
    ]


@pytest.mark.parametrize(
    ("verdicts", "supported", "total", "score"),
    [
        ([SUP], 1, 1, 1.0),
        ([NOT], 0, 1, 0.0),
        ([SUP, NOT], 1, 2, 0.5),
        ([SUP, SUP, NOT], 2, 3, 2 / 3),
        ([SUP, NOT, NOT, NOT], 1, 4, 0.25),
        ([SUP, IRR, IRR, NOT], 1, 2, 0.5),
        ([SUP, "", NOT], 1, 2, 0.5),
        ([SUP, "pending", IRR], 1, 1, 1.0),
    ],
    ids=[
        "one-supported",
        "one-refuted",
        "half",
        "two-thirds",
        "quarter",
        "irrelevant-ignored",
        "unjudged-ignored",
        "only-supported-counts",
    ],
)
def test_score_is_supported_over_supported_plus_not_supported(verdicts, supported, total, score):
    scores = compute_scores(records(*[(0, "news", v) for v in verdicts]))

    assert scores.overall == Tally(supported, total)
    assert scores.overall.score == pytest.approx(score)
    assert scores.sentences[0] == Tally(supported, total)


@pytest.mark.parametrize(
    "verdicts",
    [[], [IRR], [IRR, IRR], ["", "pending"]],
    ids=["no-evidence", "irrelevant", "all-irrelevant", "unjudged"],
)
def test_there_is_no_score_without_counted_evidence(verdicts):
    scores = compute_scores(records(*[(0, "news", v) for v in verdicts]))

    assert scores.overall == Tally(0, 0)
    assert scores.overall.score is None
    assert scores.overall.band == "none"
    assert scores.sentences == {}
    assert scores.distribution == {}


def test_a_score_of_zero_is_not_no_score():
    scores = compute_scores(records((0, "news", NOT)))

    assert scores.overall.score == 0.0
    assert scores.overall.band == "red"


def test_it_scores_each_sentence_on_its_own_evidence():
    scores = compute_scores(
        records((0, "news", SUP), (0, "blog", SUP), (1, "news", NOT), (1, "wiki", SUP), (2, "wiki", IRR))
    )

    assert scores.sentences == {0: Tally(2, 2), 1: Tally(1, 2)}
    assert scores.overall == Tally(3, 4)


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (None, "none"),
        (0.0, "red"),
        (0.29, "red"),
        (0.2999999, "red"),
        (0.3, "orange"),
        (0.45, "orange"),
        (0.5999999, "orange"),
        (0.6, "green"),
        (0.61, "green"),
        (1.0, "green"),
    ],
)
def test_band_thresholds(score, expected):
    assert band(score) == expected


@pytest.mark.parametrize(
    ("supported", "total", "expected"),
    [(3, 10, "orange"), (6, 10, "green"), (2, 10, "red"), (5, 10, "orange"), (0, 0, "none")],
)
def test_a_tally_bands_its_own_score_at_the_boundaries(supported, total, expected):
    assert Tally(supported, total).band == expected


def test_every_band_has_a_label():
    assert {band(score) for score in (None, 0.0, 0.3, 0.6)} <= set(BAND_LABELS)


def test_it_leaves_out_evidence_excluded_by_id():
    evidence = records((0, "news", SUP), (0, "news", NOT), (1, "blog", NOT))

    scores = compute_scores(evidence, excluded_ids=[2, 3])

    assert scores.overall == Tally(1, 1)
    assert scores.sentences == {0: Tally(1, 1)}
    assert scores.distribution == {"news": 100.0}


def test_it_leaves_out_evidence_excluded_by_source_type():
    evidence = records((0, "news", SUP), (0, "blog", NOT), (1, "blog", NOT), (1, "wiki", SUP))

    scores = compute_scores(evidence, excluded_types={"blog"})

    assert scores.overall == Tally(2, 2)
    assert scores.sentences == {0: Tally(1, 1), 1: Tally(1, 1)}
    assert scores.distribution == {"news": 50.0, "wiki": 50.0}


def test_excluding_everything_leaves_no_score():
    evidence = records((0, "news", SUP), (0, "blog", NOT))

    scores = compute_scores(evidence, excluded_ids={1}, excluded_types={"blog"})

    assert scores.overall.score is None
    assert scores.sentences == {}
    assert scores.distribution == {}


def test_the_distribution_counts_only_counted_evidence_in_percent():
    evidence = records(
        (0, "news", SUP),
        (0, "news", NOT),
        (0, "blog", SUP),
        (1, "wiki", NOT),
        (1, "wiki", IRR),
        (1, "blog", IRR),
    )

    scores = compute_scores(evidence)

    assert scores.distribution == pytest.approx({"news": 50.0, "blog": 25.0, "wiki": 25.0})


@pytest.mark.parametrize(
    "types",
    [
        ["news"],
        ["news", "blog", "wiki"],
        ["news", "news", "blog", "wiki", "other", "other", "other"],
    ],
)
def test_the_distribution_sums_to_100(types):
    scores = compute_scores(records(*[(0, t, SUP) for t in types]))

    assert sum(scores.distribution.values()) == pytest.approx(100.0)
    assert set(scores.distribution) == set(types)


def test_it_accepts_a_generator_of_evidence():
    evidence = (r for r in records((0, "news", SUP), (1, "blog", NOT)))

    assert compute_scores(evidence).overall == Tally(1, 2)
