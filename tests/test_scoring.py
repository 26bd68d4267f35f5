"""The pure scoring module: both score rules, exclusions, bands, the source-type distribution,
outcomes and the words that explain them. Every expected number is worked out by hand in the
tables, never by calling the code under test."""

import pytest

from verification.scoring import (
    BAND_LABELS,
    MODEL_KNOWLEDGE,
    NO_CLAIM,
    NOT_CHECKED,
    OUTCOME_ICONS,
    OUTCOME_LABELS,
    OUTCOMES,
    PENDING,
    SCORE_RULES,
    SNIPPET,
    VERDICT_ICONS,
    VERDICT_LABELS,
    EvidenceRecord,
    Tally,
    band,
    compute_scores,
    explain,
    explain_sentence,
    outcome,
    outcome_words,
    provisional_words,
    sentence_outcome,
    shown_percent,
    valid_rule,
)

VERDICTS = {"S": ("supported", False), "N": ("not_supported", False), "I": ("irrelevant", False)}
VERDICTS |= {"F": ("", True), "P": ("", False)}  # failed, pending (not judged yet)


def mix(spec: str, *, sentence: int = 0, claim: int = 0, source_type: str = "news", first_id: int = 1):
    """Evidence from a spec such as "3S 2N 5I 1F 2P": supported, not supported, irrelevant,
    failed and pending items, all of one sentence, claim and source type, with ids from first_id."""
    letters = "".join(int(part[:-1]) * part[-1] for part in spec.split())
    return [
        EvidenceRecord(first_id + n, sentence, claim, source_type, *VERDICTS[letter])
        for n, letter in enumerate(letters)
    ]


def record(evidence_id, verdict, *, sentence=0, claim=0, source_type="news"):
    letter = {"supported": "S", "not_supported": "N", "irrelevant": "I", "failed": "F", "pending": "P"}[verdict]
    return EvidenceRecord(evidence_id, sentence, claim, source_type, *VERDICTS[letter])


# --- the two rules on the same evidence


@pytest.mark.parametrize(
    ("spec", "all_total", "all_score", "decisive_total", "decisive_score"),
    [
        pytest.param("1S", 1, 1.0, 1, 1.0, id="one-supporting"),
        pytest.param("1N", 1, 0.0, 1, 0.0, id="one-contradicting"),
        pytest.param("1S 4I", 5, 0.2, 1, 1.0, id="one-supporting-four-irrelevant"),
        pytest.param("1S 1N 1I", 3, 1 / 3, 2, 0.5, id="one-of-each"),
        pytest.param("2S 1N 2I", 5, 0.4, 3, 2 / 3, id="two-supporting-of-five"),
        pytest.param("3S 1N", 4, 0.75, 4, 0.75, id="no-irrelevant-rules-agree"),
        pytest.param("2I", 2, 0.0, 0, None, id="only-irrelevant"),
        pytest.param("1S 2F 3P", 1, 1.0, 1, 1.0, id="failed-and-pending-ignored"),
    ],
)
def test_each_rule_scores_the_same_evidence_over_its_own_denominator(
    spec, all_total, all_score, decisive_total, decisive_score
):
    evidence = mix(spec)

    by_all = compute_scores(evidence, rule="all").overall
    by_decisive = compute_scores(evidence, rule="decisive").overall

    assert (by_all.rule, by_all.total) == ("all", all_total)
    assert (by_decisive.rule, by_decisive.total) == ("decisive", decisive_total)
    assert by_all.score == pytest.approx(all_score)
    assert by_decisive.score == (None if decisive_score is None else pytest.approx(decisive_score))


def test_the_all_rule_counts_irrelevant_evidence_in_the_denominator():
    scores = compute_scores(mix("1S 1N 3I"))

    assert scores.rule == "all"
    assert scores.overall == Tally(supported=1, not_supported=1, irrelevant=3, rule="all")
    assert scores.overall.total == 5
    assert scores.overall.score == pytest.approx(0.2)
    assert scores.overall.band == "red"


def test_the_decisive_rule_counts_only_evidence_that_takes_a_side():
    scores = compute_scores(mix("1S 1N 3I"), rule="decisive")

    assert scores.overall == Tally(supported=1, not_supported=1, irrelevant=3, rule="decisive")
    assert scores.overall.total == 2
    assert scores.overall.score == pytest.approx(0.5)
    assert scores.overall.band == "orange"


@pytest.mark.parametrize("rule", ["all", "decisive"])
def test_failed_and_pending_evidence_count_in_neither_rule(rule):
    evidence = mix("1S 1N", source_type="news") + mix("2F", source_type="blog", first_id=3)
    evidence += mix("3P", source_type="wiki", first_id=5)

    scores = compute_scores(evidence, rule=rule)

    assert scores.overall == Tally(supported=1, not_supported=1, failed=2, pending=3, rule=rule)
    assert scores.overall.total == 2
    assert scores.overall.score == 0.5
    assert scores.distribution == {"news": 100.0}


@pytest.mark.parametrize("rule", ["", None, "majority", "ALL", "Decisive", "supported"])
def test_an_invalid_rule_falls_back_to_the_all_rule(rule):
    scores = compute_scores(mix("1S 3I"), rule=rule)

    assert valid_rule(rule) == "all"
    assert scores.rule == "all"
    assert scores.overall.rule == "all"
    assert scores.overall.score == 0.25
    assert scores.sentence(0).rule == "all"


def test_it_accepts_a_generator_of_evidence():
    evidence = (r for r in mix("1S 1N"))

    assert compute_scores(evidence).overall == Tally(supported=1, not_supported=1)


# --- no evidence is no score


@pytest.mark.parametrize(
    ("spec", "rule"),
    [
        pytest.param("", "all", id="nothing-all"),
        pytest.param("", "decisive", id="nothing-decisive"),
        pytest.param("2I", "decisive", id="only-irrelevant-decisive"),
        pytest.param("2F 1P", "all", id="only-failed-and-pending-all"),
        pytest.param("2F 1P", "decisive", id="only-failed-and-pending-decisive"),
    ],
)
def test_without_counted_evidence_the_score_is_none_not_zero(spec, rule):
    scores = compute_scores(mix(spec), rule=rule)

    assert scores.overall.total == 0
    assert scores.overall.score is None
    assert scores.overall.band == "none"


def test_no_evidence_at_all_has_no_tallies_and_no_distribution():
    scores = compute_scores([], rule="decisive")

    assert scores.overall == Tally(rule="decisive")
    assert scores.sentences == {}
    assert scores.claims == {}
    assert scores.distribution == {}
    assert scores.sentence(4) == Tally(rule="decisive")
    assert scores.claim(99) == Tally(rule="decisive")


@pytest.mark.parametrize(
    ("spec", "rule"),
    [
        pytest.param("1N", "all", id="contradicted-all"),
        pytest.param("1N", "decisive", id="contradicted-decisive"),
        pytest.param("3I", "all", id="only-irrelevant-all"),
    ],
)
def test_a_score_of_zero_is_a_score(spec, rule):
    tally = compute_scores(mix(spec), rule=rule).overall

    assert tally.score == 0.0
    assert tally.score is not None
    assert tally.band == "red"


# --- bands


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        pytest.param(None, "none", id="none"),
        pytest.param(0.0, "red", id="zero"),
        pytest.param(0.2999999, "red", id="just-under-0.3"),
        pytest.param(0.3, "orange", id="exactly-0.3"),
        pytest.param(0.5999999, "orange", id="just-under-0.6"),
        pytest.param(0.6, "green", id="exactly-0.6"),
        pytest.param(1.0, "green", id="one"),
    ],
)
def test_band_thresholds(score, expected):
    assert band(score) == expected


@pytest.mark.parametrize(
    ("spec", "rule", "score", "expected"),
    [
        pytest.param("3S 7N", "all", 0.3, "orange", id="all-exactly-0.3"),
        pytest.param("3S 7N", "decisive", 0.3, "orange", id="decisive-exactly-0.3"),
        pytest.param("3S 2N 5I", "all", 0.3, "orange", id="all-0.3-with-irrelevant"),
        pytest.param("3S 2N 5I", "decisive", 0.6, "green", id="decisive-0.6-same-evidence"),
        pytest.param("3S 2N 6I", "all", 3 / 11, "red", id="all-just-under-0.3"),
        pytest.param("3S 7N 1I", "decisive", 0.3, "orange", id="decisive-0.3-irrelevant-ignored"),
        pytest.param("3S 7N 1I", "all", 3 / 11, "red", id="all-under-0.3-same-evidence"),
        pytest.param("6S 4N", "all", 0.6, "green", id="all-exactly-0.6"),
        pytest.param("6S 4N", "decisive", 0.6, "green", id="decisive-exactly-0.6"),
        pytest.param("6S 4I", "all", 0.6, "green", id="all-0.6-with-irrelevant"),
        pytest.param("6S 3N 2I", "all", 6 / 11, "orange", id="all-just-under-0.6"),
        pytest.param("6S 3N 2I", "decisive", 6 / 9, "green", id="decisive-over-0.6-same-evidence"),
        pytest.param("5S 4N", "decisive", 5 / 9, "orange", id="decisive-just-under-0.6"),
        pytest.param("2S 5N", "decisive", 2 / 7, "red", id="decisive-just-under-0.3"),
    ],
)
def test_a_tally_is_banded_at_the_thresholds_under_both_rules(spec, rule, score, expected):
    tally = compute_scores(mix(spec), rule=rule).overall

    assert tally.score == pytest.approx(score)
    assert tally.band == expected


def test_every_band_has_a_label():
    assert {band(score) for score in (None, 0.0, 0.3, 0.6)} == set(BAND_LABELS)


# --- exclusions

# id sentence claim type verdict
EXCLUDABLE = [
    record(1, "supported", sentence=0, claim=10, source_type="news"),
    record(2, "not_supported", sentence=0, claim=10, source_type="blog"),
    record(3, "irrelevant", sentence=0, claim=11, source_type="wiki"),
    record(4, "supported", sentence=1, claim=20, source_type="blog"),
    record(5, "failed", sentence=1, claim=20, source_type="news"),
]


@pytest.mark.parametrize(
    ("excluded_ids", "excluded_types", "overall", "score", "distribution"),
    [
        pytest.param(
            set(),
            set(),
            Tally(supported=2, not_supported=1, irrelevant=1, failed=1),
            0.5,
            {"news": 25.0, "blog": 50.0, "wiki": 25.0},
            id="nothing-excluded",
        ),
        pytest.param(
            {2},
            set(),
            Tally(supported=2, irrelevant=1, failed=1, excluded=1),
            2 / 3,
            {"news": 100 / 3, "blog": 100 / 3, "wiki": 100 / 3},
            id="by-id",
        ),
        pytest.param(
            set(),
            {"blog"},
            Tally(supported=1, irrelevant=1, failed=1, excluded=2),
            0.5,
            {"news": 50.0, "wiki": 50.0},
            id="by-type",
        ),
        pytest.param(
            {3},
            {"blog"},
            Tally(supported=1, failed=1, excluded=3),
            1.0,
            {"news": 100.0},
            id="by-id-and-type",
        ),
        pytest.param(
            {5},
            set(),
            Tally(supported=2, not_supported=1, irrelevant=1, excluded=1),
            0.5,
            {"news": 25.0, "blog": 50.0, "wiki": 25.0},
            id="a-failed-item-by-id",
        ),
        pytest.param(
            {1, 3},
            {"blog", "news"},
            Tally(excluded=5),
            None,
            {},
            id="everything",
        ),
        pytest.param(
            {99},
            {"social_media"},
            Tally(supported=2, not_supported=1, irrelevant=1, failed=1),
            0.5,
            {"news": 25.0, "blog": 50.0, "wiki": 25.0},
            id="unknown-id-and-type",
        ),
    ],
)
def test_excluded_evidence_is_left_out_of_the_scores_and_counted_as_left_out(
    excluded_ids, excluded_types, overall, score, distribution
):
    scores = compute_scores(EXCLUDABLE, excluded_ids=excluded_ids, excluded_types=excluded_types)

    assert scores.overall == overall
    assert scores.overall.score == (None if score is None else pytest.approx(score))
    assert scores.distribution == pytest.approx(distribution)


def test_excluded_evidence_is_counted_as_left_out_in_its_sentence_and_claim():
    scores = compute_scores(EXCLUDABLE, excluded_ids={4}, excluded_types={"wiki"}, rule="decisive")

    assert scores.sentences == {
        0: Tally(supported=1, not_supported=1, excluded=1, rule="decisive"),
        1: Tally(failed=1, excluded=1, rule="decisive"),
    }
    assert scores.claims == {
        10: Tally(supported=1, not_supported=1, rule="decisive"),
        11: Tally(excluded=1, rule="decisive"),
        20: Tally(failed=1, excluded=1, rule="decisive"),
    }
    assert scores.claim(11).score is None


# --- sentences and claims


def test_each_sentence_and_each_claim_is_tallied_on_its_own_evidence():
    evidence = [
        record(1, "supported", sentence=0, claim=7, source_type="news"),
        record(2, "irrelevant", sentence=0, claim=7, source_type="blog"),
        record(3, "not_supported", sentence=0, claim=8, source_type="wiki"),
        record(4, "pending", sentence=0, claim=8, source_type="wiki"),
        record(5, "irrelevant", sentence=2, claim=0, source_type="news"),
        record(6, "failed", sentence=2, claim=0, source_type="news"),
        record(7, "supported", sentence=2, claim=3, source_type="wiki"),
    ]

    scores = compute_scores(evidence)

    assert scores.claims == {
        7: Tally(supported=1, irrelevant=1),
        8: Tally(not_supported=1, pending=1),
        0: Tally(irrelevant=1, failed=1),
        3: Tally(supported=1),
    }
    assert scores.sentences == {
        0: Tally(supported=1, not_supported=1, irrelevant=1, pending=1),
        2: Tally(supported=1, irrelevant=1, failed=1),
    }
    assert [scores.claim(i).score for i in (7, 8, 0, 3)] == [0.5, 0.0, 0.0, 1.0]
    assert scores.sentence(0).score == pytest.approx(1 / 3)
    assert scores.sentence(2).score == 0.5
    assert scores.sentence(1) == Tally()
    assert scores.overall == Tally(supported=2, not_supported=1, irrelevant=2, failed=1, pending=1)


def test_claims_are_scored_by_the_chosen_rule():
    evidence = mix("1S 3I", claim=1) + mix("1S 1N 2I", claim=2, first_id=10)

    scores = compute_scores(evidence, rule="decisive")

    assert scores.claim(1).score == 1.0
    assert scores.claim(2).score == 0.5
    assert scores.overall.score == pytest.approx(2 / 3)


# --- the source-type distribution


@pytest.mark.parametrize("rule", ["all", "decisive"])
def test_the_distribution_counts_irrelevant_evidence(rule):
    evidence = [
        record(1, "supported", source_type="news"),
        record(2, "irrelevant", source_type="blog"),
        record(3, "irrelevant", source_type="blog"),
        record(4, "not_supported", source_type="wiki"),
    ]

    scores = compute_scores(evidence, rule=rule)

    assert scores.distribution == {"news": 25.0, "blog": 50.0, "wiki": 25.0}


def test_the_distribution_leaves_out_failed_pending_and_excluded_evidence():
    evidence = [
        record(1, "supported", source_type="news"),
        record(2, "irrelevant", source_type="news"),
        record(3, "failed", source_type="blog"),
        record(4, "pending", source_type="wiki"),
        record(5, "supported", source_type="government_website"),
        record(6, "not_supported", source_type="other"),
    ]

    scores = compute_scores(evidence, excluded_ids={5}, excluded_types={"other"})

    assert scores.distribution == {"news": 100.0}


def test_a_claim_answered_from_the_models_knowledge_counts_only_when_its_kind_is_included():
    # Quick mode: the model's label true for claim 1 and false for claim 2, each one record of its own.
    evidence = [
        record(1, "supported", claim=3, source_type="news"),
        EvidenceRecord(-1, 0, 1, "", "supported", kind=MODEL_KNOWLEDGE),
        EvidenceRecord(-2, 0, 2, "", "not_supported", kind=MODEL_KNOWLEDGE),
    ]

    left_out = compute_scores(evidence, excluded_kinds={MODEL_KNOWLEDGE})
    counted = compute_scores(evidence)

    assert (left_out.overall.supported, left_out.overall.total, left_out.overall.excluded) == (1, 1, 2)
    assert left_out.left_out == {-1, -2} and left_out.claim(1).judged == 0
    assert (counted.overall.supported, counted.overall.not_supported, counted.overall.total) == (2, 1, 3)
    assert (counted.claim(1).supported, counted.claim(2).not_supported) == (1, 1)
    # No source was read for them: no source type's share.
    assert counted.distribution == left_out.distribution == {"news": 100.0}


@pytest.mark.parametrize(
    ("types", "verdicts"),
    [
        pytest.param(["news"], ["irrelevant"], id="one-irrelevant"),
        pytest.param(["news", "blog", "wiki"], ["supported", "irrelevant", "not_supported"], id="three-thirds"),
        pytest.param(
            ["news", "news", "blog", "wiki", "other", "other", "other"],
            ["supported", "irrelevant", "irrelevant", "not_supported", "supported", "irrelevant", "supported"],
            id="sevenths",
        ),
    ],
)
def test_the_distribution_sums_to_100(types, verdicts):
    evidence = [record(i, v, source_type=t) for i, (t, v) in enumerate(zip(types, verdicts, strict=True))]

    scores = compute_scores(evidence)

    assert sum(scores.distribution.values()) == pytest.approx(100.0)
    assert set(scores.distribution) == set(types)


# --- outcomes


@pytest.mark.parametrize(
    ("tally", "finished", "failed", "expected"),
    [
        pytest.param(Tally(supported=2, irrelevant=1), True, False, "supported", id="supported"),
        pytest.param(Tally(supported=1, irrelevant=9), True, False, "supported", id="supported-despite-red-score"),
        pytest.param(Tally(supported=1, failed=2), True, False, "supported", id="supported-with-failed-items"),
        pytest.param(Tally(supported=1), True, True, "supported", id="supported-though-the-claim-failed"),
        pytest.param(Tally(not_supported=1, irrelevant=3), True, False, "contradicted", id="contradicted"),
        pytest.param(Tally(supported=3, not_supported=1), True, False, "mixed", id="mixed"),
        pytest.param(Tally(irrelevant=3), True, False, "unconfirmed", id="unconfirmed"),
        pytest.param(Tally(irrelevant=1, failed=2), True, True, "unconfirmed", id="unconfirmed-with-failures"),
        pytest.param(Tally(), True, False, "no_evidence", id="no-evidence"),
        pytest.param(Tally(excluded=2), True, False, "no_evidence", id="everything-left-out"),
        pytest.param(Tally(), True, True, "failed", id="the-claim-failed"),
        pytest.param(Tally(failed=2), True, False, "failed", id="every-item-failed"),
        pytest.param(Tally(supported=3), False, False, "pending", id="pending-with-evidence"),
        pytest.param(Tally(), False, True, "pending", id="pending-before-failure-is-final"),
    ],
)
def test_a_claims_outcome_follows_its_included_evidence(tally, finished, failed, expected):
    assert outcome(tally, finished=finished, failed=failed) == expected


@pytest.mark.parametrize(
    ("tally", "status", "claim_outcomes", "expected"),
    [
        pytest.param(Tally(supported=1), "pending", ["supported"], "pending", id="pending"),
        pytest.param(Tally(supported=1), "running", ["supported"], "pending", id="running"),
        pytest.param(Tally(supported=1), "failed", ["supported"], "failed", id="the-sentence-failed"),
        pytest.param(Tally(), "done", [], "no_claim", id="no-claim"),
        pytest.param(Tally(supported=2), "done", ["supported", "supported"], "supported", id="supported"),
        pytest.param(Tally(supported=1, not_supported=1), "done", ["supported", "contradicted"], "mixed", id="mixed"),
        pytest.param(Tally(not_supported=1), "done", ["contradicted", "no_evidence"], "contradicted", id="contra"),
        pytest.param(Tally(irrelevant=2), "done", ["unconfirmed"], "unconfirmed", id="unconfirmed"),
        pytest.param(Tally(), "done", ["no_evidence", "no_evidence"], "no_evidence", id="no-evidence"),
        pytest.param(Tally(), "done", ["no_evidence", "failed"], "failed", id="a-claim-failed"),
        pytest.param(Tally(supported=1, failed=1), "done", ["supported", "failed"], "supported", id="one-failed"),
    ],
)
def test_a_sentences_outcome_follows_its_status_and_claims(tally, status, claim_outcomes, expected):
    assert sentence_outcome(tally, status=status, claim_outcomes=claim_outcomes) == expected


def test_every_outcome_has_a_label():
    assert set(OUTCOME_LABELS) == {*OUTCOMES, PENDING, NO_CLAIM, NOT_CHECKED}


# --- the words


@pytest.mark.parametrize(
    ("tally", "result", "reason", "expected"),
    [
        pytest.param(
            Tally(supported=2, not_supported=1), "mixed", "", "1 page contradicts it, 2 pages support it", id="mixed"
        ),
        pytest.param(
            Tally(supported=1, not_supported=3, irrelevant=2),
            "mixed",
            "",
            "3 pages contradict it, 1 page supports it; 2 others did not address it",
            id="contradicting-first-then-others",
        ),
        pytest.param(
            Tally(supported=1, irrelevant=1),
            "supported",
            "",
            "1 page supports it; 1 other did not address it",
            id="supported-one-other",
        ),
        pytest.param(Tally(not_supported=2), "contradicted", "", "2 pages contradict it", id="contradicted"),
        pytest.param(
            Tally(irrelevant=3), "unconfirmed", "", "3 pages read, none confirms or contradicts it", id="unconfirmed"
        ),
        pytest.param(
            Tally(irrelevant=1), "unconfirmed", "", "1 page read, none confirms or contradicts it", id="one-read"
        ),
        pytest.param(
            Tally(supported=1, failed=2),
            "supported",
            "",
            "1 page supports it; 2 items could not be judged",
            id="with-failed-items",
        ),
        pytest.param(
            Tally(supported=1, excluded=2),
            "supported",
            "",
            "1 page supports it (2 left out of this view)",
            id="with-excluded-items",
        ),
        pytest.param(
            Tally(), "failed", "no page could be read: HTTP 503", "no page could be read: HTTP 503", id="failed-reason"
        ),
        pytest.param(
            Tally(),
            "no_evidence",
            "the web search found no pages",
            "the web search found no pages",
            id="no-evidence-reason",
        ),
        pytest.param(Tally(), "no_evidence", "", "no evidence was found", id="no-evidence-without-reason"),
        pytest.param(
            Tally(excluded=3),
            "no_evidence",
            "the web search found no pages",
            "all 3 of its evidence items are left out of this view",
            id="everything-left-out",
        ),
        pytest.param(Tally(supported=1), "pending", "", "still being checked", id="pending"),
    ],
)
def test_a_claims_note_says_why_it_has_its_outcome(tally, result, reason, expected):
    assert explain(tally, result, reason=reason) == expected


def test_a_note_can_count_sources_instead_of_pages():
    assert explain(Tally(supported=2, not_supported=1), "mixed", noun="source") == (
        "1 source contradicts it, 2 sources support it"
    )


@pytest.mark.parametrize(
    ("tally", "result", "error", "claim_outcomes", "claim_notes", "expected"),
    [
        pytest.param(
            Tally(supported=1),
            "failed",
            "decomposing failed: LLM timeout",
            ["supported"],
            ["1 page supports it"],
            "decomposing failed: LLM timeout",
            id="its-own-failure",
        ),
        pytest.param(Tally(), "no_claim", "", [], [], "no checkable claim in this sentence", id="no-claim"),
        pytest.param(Tally(), "no_claim", "only an opinion", [], [], "only an opinion", id="no-claim-with-reason"),
        pytest.param(
            Tally(),
            "failed",
            "",
            ["failed", "failed"],
            ["no page could be read: HTTP 503", "search failed: timeout"],
            "no page could be read: HTTP 503",
            id="every-claim-failed-first-note-only",
        ),
        pytest.param(Tally(), "failed", "", [], [], "the check failed", id="failed-without-reason"),
        pytest.param(
            Tally(),
            "no_evidence",
            "",
            ["no_evidence"],
            ["the web search found no pages"],
            "the web search found no pages",
            id="the-claims-reason-for-no-evidence",
        ),
        pytest.param(
            Tally(excluded=2),
            "no_evidence",
            "",
            ["no_evidence"],
            ["all 2 of its evidence items are left out of this view"],
            "all 2 of its evidence items are left out of this view",
            id="everything-left-out",
        ),
        pytest.param(
            Tally(supported=2, irrelevant=1),
            "supported",
            "",
            ["supported", "failed", "failed"],
            ["2 pages support it; 1 other did not address it", "search failed: timeout", "judging failed: 500"],
            "2 sources support it; 1 other did not address it; 2 claims could not be checked (search failed: timeout)",
            id="supported-with-two-failed-claims",
        ),
        pytest.param(
            Tally(supported=1, not_supported=1),
            "mixed",
            "",
            ["mixed", "failed"],
            ["1 page contradicts it, 1 page supports it", "no page could be read: HTTP 404"],
            "1 source contradicts it, 1 source supports it; 1 claim could not be checked "
            "(no page could be read: HTTP 404)",
            id="mixed-with-one-failed-claim",
        ),
        pytest.param(
            Tally(supported=1),
            "pending",
            "",
            ["supported", "failed"],
            ["1 page supports it", "search failed: timeout"],
            "still being checked",
            id="pending-says-nothing-of-failures",
        ),
    ],
)
def test_a_sentences_note_is_one_note_saying_why(tally, result, error, claim_outcomes, claim_notes, expected):
    note = explain_sentence(tally, result, error=error, claim_outcomes=claim_outcomes, claim_notes=claim_notes)

    assert note == expected


def test_a_claim_gets_its_outcome_and_note_from_the_computed_tally():
    evidence = mix("2N 1I 1F", claim=4) + mix("1S", claim=4, source_type="blog", first_id=10)

    tally = compute_scores(evidence, excluded_types={"blog"}).claim(4)
    result = outcome(tally, finished=True)

    assert result == "contradicted"
    assert explain(tally, result) == (
        "2 pages contradict it; 1 other did not address it; 1 item could not be judged (1 left out of this view)"
    )


@pytest.mark.parametrize(
    ("tally", "expected_outcome", "note"),
    [
        pytest.param(Tally(failed=2), "failed", "2 evidence items could not be judged", id="judging-failed"),
        pytest.param(
            Tally(failed=1, excluded=1),
            "failed",
            "1 evidence item could not be judged (1 left out of this view)",
            id="failed-and-left-out",
        ),
        pytest.param(
            Tally(excluded=1), "no_evidence", "its only evidence item is left out of this view", id="one-left-out"
        ),
    ],
)
def test_evidence_that_could_not_be_judged_is_a_failure_not_an_absence(tally, expected_outcome, note):
    result = outcome(tally, finished=True)

    assert result == expected_outcome
    assert explain(tally, result) == note


def test_a_tally_with_an_unknown_rule_scores_by_the_default_rule():
    assert Tally(supported=1, irrelevant=1, rule="bogus").score == 0.5


# --- duplicate groups: the same text at several URLs counts once


def duplicate(evidence_id, of, verdict="supported", *, source_type="news", claim=0, sentence=0):
    letter = {"supported": "S", "not_supported": "N", "irrelevant": "I", "failed": "F", "pending": "P"}[verdict]
    return EvidenceRecord(evidence_id, sentence, claim, source_type, *VERDICTS[letter], duplicate_of=of)


def test_a_duplicate_group_counts_once_with_the_counted_items_verdict():
    evidence = [record(1, "supported"), duplicate(2, of=1), duplicate(3, of=1), record(4, "not_supported")]

    scores = compute_scores(evidence)

    assert scores.overall == Tally(supported=1, not_supported=1, rule="all")
    assert scores.claim(0).score == 0.5
    assert scores.distribution == {"news": 100.0}
    assert scores.left_out == frozenset()


def test_a_group_counts_through_a_copy_of_an_included_type_when_the_counted_items_type_is_left_out():
    evidence = [record(1, "supported", source_type="blog"), duplicate(2, of=1, source_type="news")]

    scores = compute_scores(evidence, excluded_types={"blog"})

    assert scores.overall == Tally(supported=1, rule="all")
    assert scores.distribution == {"news": 100.0}  # the type it is still found under


def test_a_group_is_left_out_once_when_every_copys_type_is_left_out():
    evidence = [
        record(1, "supported", source_type="blog"),
        duplicate(2, of=1, source_type="news"),
        record(3, "irrelevant", source_type="wiki"),
    ]

    scores = compute_scores(evidence, excluded_types={"blog", "news"})

    assert scores.overall == Tally(irrelevant=1, excluded=1, rule="all")
    assert scores.left_out == {1, 2}


@pytest.mark.parametrize("unticked", [1, 2], ids=["the-counted-item", "a-copy"])
def test_leaving_out_any_member_by_id_leaves_the_whole_group_out(unticked):
    evidence = [record(1, "supported"), duplicate(2, of=1), record(3, "not_supported")]

    scores = compute_scores(evidence, excluded_ids={unticked})

    assert scores.overall == Tally(not_supported=1, excluded=1, rule="all")
    assert scores.left_out == {1, 2}


def test_a_duplicate_of_a_failed_or_pending_item_is_counted_as_its_group():
    evidence = [record(1, "failed"), duplicate(2, of=1), record(3, "pending"), duplicate(4, of=3)]

    assert compute_scores(evidence).overall == Tally(failed=1, pending=1, rule="all")


def test_a_duplicate_whose_original_is_missing_counts_on_its_own():
    assert compute_scores([duplicate(2, of=99)]).overall == Tally(supported=1, rule="all")


@pytest.mark.parametrize("rule", ["all", "decisive"])
def test_groups_count_once_in_their_sentence_and_claim_under_both_rules(rule):
    evidence = [
        record(1, "supported", sentence=0, claim=10),
        duplicate(2, of=1, sentence=0, claim=10),
        record(3, "irrelevant", sentence=1, claim=11),
        duplicate(4, of=3, verdict="irrelevant", sentence=1, claim=11),
    ]

    scores = compute_scores(evidence, rule=rule)

    assert (scores.sentence(0).supported, scores.sentence(0).total) == (1, 1)
    assert scores.claim(11).irrelevant == 1
    assert scores.claim(11).total == (1 if rule == "all" else 0)


# --- the user's documents: one that does not address a claim is not evidence against it


@pytest.mark.parametrize(
    ("documents", "web", "rule", "expected", "score"),
    [
        pytest.param("1S 3I", "", "all", Tally(supported=1, silent_documents=3), 1.0, id="one-of-four-documents"),
        pytest.param("1N 3I", "", "all", Tally(not_supported=1, silent_documents=3), 0.0, id="contradicted-by-one"),
        pytest.param("4I", "", "all", Tally(silent_documents=4), None, id="no-document-addresses-it"),
        pytest.param(
            "1S 2I",
            "1S 2I",
            "all",
            Tally(supported=2, irrelevant=2, silent_documents=2),
            0.5,
            id="both-web-pages-count",
        ),
        pytest.param(
            "1S 2I",
            "1S 2I",
            "decisive",
            Tally(supported=2, irrelevant=2, silent_documents=2, rule="decisive"),
            1.0,
            id="both-decisive",
        ),
        pytest.param(
            "1S 1F 1P 2I", "", "all", Tally(supported=1, failed=1, pending=1, silent_documents=2), 1.0, id="f-p"
        ),
    ],
)
def test_documents_that_do_not_address_a_claim_count_in_neither_number(documents, web, rule, expected, score):
    evidence = mix(documents, source_type="your_document") + mix(web, source_type="news", first_id=100)

    tally = compute_scores(evidence, rule=rule).claim(0)

    assert tally == expected
    assert tally.score == (None if score is None else pytest.approx(score))


def test_silent_documents_are_not_in_the_source_type_shares():
    evidence = mix("1S 3I", source_type="your_document") + mix("1N", source_type="news", first_id=10)

    assert compute_scores(evidence).distribution == {"your_document": 50.0, "news": 50.0}


def test_a_web_copy_of_a_document_counts_as_a_web_page():
    evidence = [record(1, "irrelevant", source_type="news"), duplicate(2, of=1, source_type="your_document")]

    assert compute_scores(evidence).overall == Tally(irrelevant=1)
    assert compute_scores(evidence, excluded_types={"news"}).overall == Tally(silent_documents=1)


@pytest.mark.parametrize(
    ("tally", "expected_outcome", "note"),
    [
        pytest.param(
            Tally(supported=1, silent_documents=3),
            "supported",
            "1 document supports it; 3 documents of yours did not address it (not counted)",
            id="supported",
        ),
        pytest.param(
            Tally(silent_documents=2),
            "unconfirmed",
            "2 documents read, none confirms or contradicts it (2 documents of yours, not counted)",
            id="unconfirmed",
        ),
    ],
)
def test_a_note_says_which_documents_were_not_counted(tally, expected_outcome, note):
    result = outcome(tally, finished=True)

    assert result == expected_outcome
    assert explain(tally, result, noun="document") == note


# --- words and colours agree


@pytest.mark.parametrize(
    ("score_band", "label"),
    [
        ("green", "most evidence supports it"),
        ("orange", "some evidence supports it"),
        ("red", "little or no evidence supports it"),
        ("none", "no score"),
    ],
)
def test_a_bands_words_say_the_share_that_supports_and_nothing_about_contradiction(score_band, label):
    # "mostly unsupported" read as contradicted for 3 supporting and 2 contradicting items;
    # "mixed" for an orange sentence nothing contradicts.
    assert BAND_LABELS[score_band] == label


@pytest.mark.parametrize(
    ("spec", "rule", "noun", "expected_band", "words"),
    [
        pytest.param("1S 2I", "all", "page", "orange", "supported by 1 of 3 pages read", id="supported-orange"),
        pytest.param("1S 3I", "all", "page", "red", "supported by 1 of 4 pages read", id="supported-red"),
        pytest.param("2S", "all", "page", "green", "supported by 2 of 2 pages read", id="supported-green"),
        pytest.param("1S 2I", "decisive", "page", "green", "supported by 1 of 1 page that takes a side", id="decisive"),
        pytest.param("1N 2I", "all", "page", "red", "contradicted by 1 of 3 pages read", id="contradicted"),
        pytest.param(
            "2N", "decisive", "page", "red", "contradicted by 2 of 2 pages that take a side", id="contradicted-decisive"
        ),
        pytest.param(
            "3S 2N 11I",
            "all",
            "source",
            "red",
            "mixed evidence: supported by 3 of 16 sources read, contradicted by 2",
            id="mixed-red",
        ),
        pytest.param(
            "4S 1N",
            "all",
            "page",
            "green",
            "mixed evidence: supported by 4 of 5 pages read, contradicted by 1",
            id="mix",
        ),
        pytest.param(
            "3I", "all", "page", "red", "unconfirmed: none of 3 pages read addresses it", id="unconfirmed-red"
        ),
        pytest.param(
            "1I", "decisive", "page", "none", "unconfirmed: none of 1 page read addresses it", id="unconfirmed-grey"
        ),
    ],
)
def test_outcome_words_carry_the_counts_behind_the_colour(spec, rule, noun, expected_band, words):
    tally = compute_scores(mix(spec), rule=rule).overall
    result = outcome(tally, finished=True)

    assert tally.band == expected_band
    assert outcome_words(tally, result, noun=noun) == words


def test_outcome_words_for_documents_say_counted_when_some_were_read_and_not_counted():
    tally = compute_scores(mix("1S 3I", source_type="your_document")).overall

    assert outcome_words(tally, "supported", noun="document") == "supported by 1 of 1 document counted"


@pytest.mark.parametrize(
    "result", ["no_evidence", "failed", PENDING, NO_CLAIM], ids=["no-evidence", "failed", "pending", "no-claim"]
)
def test_outcomes_without_a_score_are_their_bare_label(result):
    assert outcome_words(Tally(), result) == OUTCOME_LABELS[result]


def test_contradicted_and_unconfirmed_differ_in_shape_and_words_though_both_are_red_zero():
    contradicted = compute_scores(mix("1N 2I")).overall
    unconfirmed = compute_scores(mix("3I")).overall

    assert (contradicted.band, contradicted.score) == (unconfirmed.band, unconfirmed.score) == ("red", 0.0)
    assert OUTCOME_ICONS["contradicted"] != OUTCOME_ICONS["unconfirmed"]
    assert outcome_words(contradicted, "contradicted").startswith("contradicted by 1 of 3")
    assert outcome_words(unconfirmed, "unconfirmed").startswith("unconfirmed: none of 3")


def test_every_outcome_and_verdict_has_its_own_shape():
    assert set(OUTCOME_ICONS) == set(OUTCOME_LABELS)
    assert len(set(OUTCOME_ICONS.values())) == len(OUTCOME_ICONS)
    assert set(VERDICT_ICONS) == set(VERDICT_LABELS) == {"supported", "not_supported", "irrelevant"}
    # An item and the outcome it leads to wear the same shape.
    assert VERDICT_ICONS["supported"] == OUTCOME_ICONS["supported"]
    assert VERDICT_ICONS["not_supported"] == OUTCOME_ICONS["contradicted"]


def test_one_vocabulary_in_lower_case_for_verdicts_outcomes_bands_and_rules():
    # An item "contradicts", a claim is "contradicted": never "not supported" beside "contradicted".
    assert VERDICT_LABELS == {
        "supported": "supports",
        "not_supported": "contradicts",
        "irrelevant": "does not address it",
    }
    words = [*VERDICT_LABELS.values(), *OUTCOME_LABELS.values(), *BAND_LABELS.values(), *SCORE_RULES.values()]
    assert all(w == w.lower() for w in words)
    assert not any("not supported" in w or "unsupported" in w for w in words)


# --- a run still going on


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        pytest.param("1S 2I 45P", "so far, from 3 of 48 judgements", id="early"),
        pytest.param("2S 1N 1F 1P", "so far, from 4 of 5 judgements", id="a-failure-is-a-judgement-made"),
        pytest.param("", "so far, from 0 of 0 judgements", id="nothing-yet"),
    ],
)
def test_a_provisional_score_says_how_many_judgements_it_rests_on(spec, words):
    assert provisional_words(compute_scores(mix(spec)).overall) == words


@pytest.mark.parametrize(
    ("score", "shown"),
    [
        pytest.param(None, None, id="no-score"),
        pytest.param(0.0, 0, id="zero"),
        pytest.param(11 / 37, 29, id="red-29.7-is-not-shown-as-orange-30"),
        pytest.param(0.2999999, 29, id="just-under-0.3"),
        pytest.param(0.3, 30, id="exactly-0.3"),
        pytest.param(0.5999, 59, id="orange-59.99-is-not-shown-as-green-60"),
        pytest.param(0.6, 60, id="exactly-0.6"),
        pytest.param(2 / 3, 67, id="rounds-up-inside-its-band"),
        pytest.param(0.334, 33, id="rounds-down"),
        pytest.param(0.996, 100, id="green-rounds-to-100"),
    ],
)
def test_the_percent_shown_stays_in_the_band_of_its_colour(score, shown):
    assert shown_percent(score) == shown
    if score is not None:
        assert band(shown / 100) == band(score)


# --- search snippets: evidence of a kind, counted by default, left out with one tick


def snippets(spec: str, *, sentence: int = 0, claim: int = 0, first_id: int = 100):
    """As `mix`, judged from search snippets (their pages could not be read)."""
    return [r._replace(kind=SNIPPET) for r in mix(spec, sentence=sentence, claim=claim, first_id=first_id)]


def test_a_record_is_a_passage_of_a_page_read_unless_it_says_otherwise():
    assert EvidenceRecord(1, 0, 0, "news", "supported").kind == ""
    assert EvidenceRecord._fields[-1] == "kind"  # added last: positional records stay valid


@pytest.mark.parametrize(
    ("excluded_kinds", "overall", "score"),
    [
        pytest.param((), Tally(supported=2, not_supported=1, irrelevant=2, snippets=3), 0.4, id="counted-by-default"),
        pytest.param({SNIPPET}, Tally(supported=1, irrelevant=1, excluded=3), 0.5, id="snippets-left-out"),
        pytest.param(
            {"model_knowledge"},
            Tally(supported=2, not_supported=1, irrelevant=2, snippets=3),
            0.4,
            id="another-kind-left-out",
        ),
    ],
)
def test_snippets_count_like_other_evidence_unless_their_kind_is_left_out(excluded_kinds, overall, score):
    evidence = mix("1S 1I") + snippets("1S 1N 1I")

    scores = compute_scores(evidence, excluded_kinds=excluded_kinds)

    assert scores.overall == overall
    assert scores.overall.score == pytest.approx(score)


def test_leaving_snippets_out_leaves_them_out_of_their_sentence_claim_and_the_type_shares():
    evidence = [
        *mix("1S", sentence=0, claim=1, source_type="wiki"),
        *snippets("1N", sentence=0, claim=1, first_id=10),
        *snippets("2S", sentence=1, claim=2, first_id=20),
    ]

    scores = compute_scores(evidence, excluded_kinds={SNIPPET}, rule="decisive")

    assert scores.sentences == {
        0: Tally(supported=1, excluded=1, rule="decisive"),
        1: Tally(excluded=2, rule="decisive"),
    }
    assert scores.claim(1).score == 1.0 and scores.claim(2).score is None
    assert scores.distribution == {"wiki": 100.0}
    assert scores.left_out == {10, 20, 21}


def test_a_snippet_copy_of_a_page_read_keeps_the_group_when_snippets_are_left_out():
    page, copy = record(1, "supported"), record(2, "supported")._replace(kind=SNIPPET, duplicate_of=1)
    alone = record(3, "irrelevant")._replace(kind=SNIPPET)

    scores = compute_scores([page, copy, alone], excluded_kinds={SNIPPET})

    assert scores.overall == Tally(supported=1, excluded=1)
    assert scores.left_out == {3}


def test_only_judged_snippets_are_counted_as_snippets():
    tally = compute_scores(snippets("1S 1F 1P")).overall

    assert tally == Tally(supported=1, failed=1, pending=1, snippets=1)


@pytest.mark.parametrize(
    ("tally", "result", "noun", "note"),
    [
        pytest.param(
            Tally(supported=1, snippets=1),
            "supported",
            "page",
            "1 page supports it; judged from its search snippet alone (the page could not be read)",
            id="one-snippet-alone",
        ),
        pytest.param(
            Tally(supported=1, irrelevant=1, snippets=2),
            "supported",
            "page",
            "1 page supports it; 1 other did not address it; all judged from search snippets alone "
            "(no page could be read)",
            id="snippets-alone",
        ),
        pytest.param(
            Tally(irrelevant=2, snippets=2),
            "unconfirmed",
            "page",
            "2 pages judged, none confirms or contradicts it; all judged from search snippets alone "
            "(no page could be read)",
            id="unconfirmed-from-snippets",
        ),
        pytest.param(
            Tally(supported=2, not_supported=1, irrelevant=2, snippets=1),
            "mixed",
            "source",
            "1 source contradicts it, 2 sources support it; 2 others did not address it; "
            "1 of the 5 sources judged from its search snippet only",
            id="a-sentence-with-one-snippet",
        ),
        pytest.param(
            Tally(supported=3, irrelevant=1, snippets=2, excluded=1),
            "supported",
            "page",
            "3 pages support it; 1 other did not address it; 2 of the 4 pages judged from their search snippets "
            "only (1 left out of this view)",
            id="some-snippets",
        ),
    ],
)
def test_a_note_says_how_much_of_the_evidence_was_search_snippets(tally, result, noun, note):
    assert explain(tally, result, noun=noun) == note


def test_a_sentences_note_says_how_many_of_its_sources_were_snippets():
    tally = compute_scores(mix("1S 1I", claim=1) + snippets("1S", claim=2)).sentence(0)

    note = explain_sentence(
        tally, "supported", error="", claim_outcomes=["supported", "supported"], claim_notes=["", ""]
    )

    assert note == (
        "2 sources support it; 1 other did not address it; 1 of the 3 sources judged from its search snippet only"
    )


@pytest.mark.parametrize(
    ("evidence", "words"),
    [
        pytest.param(snippets("1S 1I"), "supported by 1 of 2 pages judged", id="judged-not-read"),
        pytest.param(snippets("2I"), "unconfirmed: none of 2 pages judged addresses it", id="unconfirmed"),
        pytest.param(mix("1S 1I"), "supported by 1 of 2 pages read", id="pages-read"),
    ],
)
def test_outcome_words_do_not_call_a_snippet_read(evidence, words):
    tally = compute_scores(evidence).overall

    assert outcome_words(tally, outcome(tally, finished=True)) == words
