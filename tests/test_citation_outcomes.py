"""A citation's outcome from its source's state and the verdicts on it (scoring/citations.py)."""

import pytest

from verification.scoring.citations import (
    CITATION_OUTCOMES,
    CitedSource,
    citation_counts,
    citation_outcome,
    citation_summary,
)

URL = "https://a.test/page"
READ = {"url": URL, "source_status": "done", "sentence_finished": True}


@pytest.mark.parametrize(
    ("cited", "expected"),
    [
        pytest.param({**READ, "verdicts": ("irrelevant", "supported")}, ("supports", ""), id="any-supported"),
        pytest.param({**READ, "verdicts": ("not_supported", "supported")}, ("supports", ""), id="supported-wins"),
        pytest.param({**READ, "verdicts": ("irrelevant", "not_supported")}, ("contradicts", ""), id="contradicts"),
        pytest.param(
            {**READ, "verdicts": ("irrelevant",)},
            ("does_not_say", "nothing in it is about what its sentence says"),
            id="only-irrelevant",
        ),
        pytest.param(
            {**READ}, ("does_not_say", "nothing in it is about what its sentence says"), id="no-passage-matched"
        ),
        pytest.param(
            {**READ, "judge_failed": True}, ("not_checked", "its passages could not be judged"), id="judge-failed"
        ),
        pytest.param(
            {**READ, "source_status": "failed", "source_error": "the page answered HTTP 404"},
            ("does_not_exist", "the page answered HTTP 404"),
            id="404",
        ),
        pytest.param(
            {**READ, "source_status": "failed", "source_error": "the page answered HTTP 410"},
            ("does_not_exist", "the page answered HTTP 410"),
            id="410",
        ),
        pytest.param(
            {
                **READ,
                "source_status": "failed",
                "source_error": "the page's host name does not resolve (no such domain)",
            },
            ("does_not_exist", "the page's host name does not resolve (no such domain)"),
            id="no-such-host",
        ),
        pytest.param(
            {**READ, "source_status": "failed", "source_error": "the page answered HTTP 403"},
            ("could_not_be_read", "the page answered HTTP 403"),
            id="403",
        ),
        pytest.param(
            {**READ, "source_status": "failed", "source_error": "could not connect to the page's server"},
            ("could_not_be_read", "could not connect to the page's server"),
            id="no-connection",
        ),
        pytest.param(
            {"unresolved": "no entry 9 in the reference list (3 entries)"},
            ("unresolved", "no entry 9 in the reference list (3 entries)"),
            id="points-nowhere",
        ),
        pytest.param(
            {"url": URL, "left_out": "not read: a run reads at most 2 cited addresses (MAX_CITED_SOURCES)"},
            ("not_checked", "not read: a run reads at most 2 cited addresses (MAX_CITED_SOURCES)"),
            id="over-the-cap",
        ),
        pytest.param({"sentence_finished": True}, ("not_checked", "it gives no address to read"), id="a-name-only"),
        pytest.param({"url": URL}, ("pending", ""), id="not-taken-yet"),
        pytest.param({**READ, "sentence_finished": False, "verdicts": ("not_supported",)}, ("pending", ""), id="going"),
        pytest.param({**READ, "sentence_finished": False, "verdicts": ("supported",)}, ("supports", ""), id="early"),
        pytest.param(
            {"url": URL, "sentence_finished": True},
            ("not_checked", "no claim of its sentence was checked against it"),
            id="no-claim",
        ),
        pytest.param(
            {"url": URL, "source_status": "running", "run_finished": True},
            ("not_checked", "the run ended before it was read"),
            id="cancelled",
        ),
    ],
)
def test_it_gives_each_citation_its_outcome(cited, expected):
    assert citation_outcome(CitedSource(**cited)) == expected


def test_it_counts_every_outcome_and_says_them_in_words():
    counts = citation_counts(["supports", "supports", "supports", "does_not_say", "contradicts", "does_not_exist"])

    assert set(counts) == set(CITATION_OUTCOMES)
    assert citation_summary(counts) == (
        "6 citations: 3 support their sentence, 1 contradicts it, 1 does not say it, 1 does not exist"
    )
    assert citation_summary(citation_counts([])) == ""
    assert citation_summary(citation_counts(["unresolved"])) == "1 citation: 1 points nowhere"
