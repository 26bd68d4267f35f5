"""The result page's words and colours agree (issue 18): every outcome says the counts behind
its colour, contradicted and unconfirmed differ in shape as well as in words, a run still going
on says its scores are "so far", the links are named by their sentence and outcome, and the
user's documents that do not address a claim are not counted against it. Runs are built with the
ORM (tests/test_views.py's helpers); each expectation is written out by hand."""

import lxml.html
import pytest

from tests.test_views import add_claim, add_evidence, get, make_run, one, parse, permalink
from verification.models import ClaimStatus, Origin, Sentence, Source, Status, Verification

pytestmark = pytest.mark.django_db


def evidence(claim, spec: str, *, source_type: str = "news") -> None:
    """Judged evidence from a spec such as "1S 2I": supported, not supported, irrelevant."""
    verdicts = {"S": "supported", "N": "not_supported", "I": "irrelevant", "P": ""}
    for part in spec.split():
        for _ in range(int(part[:-1])):
            status = Status.PENDING if part[-1] == "P" else Status.DONE
            add_evidence(claim, source_type, verdicts[part[-1]], status=status)


def words(element) -> str:
    return " ".join(element.text_content().split())


def sentence_run(*specs: str, status=Status.DONE, source_type: str = "news", mode: str = "web") -> Verification:
    """One sentence per spec, each with one claim whose evidence is the spec."""
    texts = [f"Claim number {n} is about the tower." for n in range(1, len(specs) + 1)]
    run = make_run(*texts, status=status)
    if mode != "web":
        Verification.objects.filter(pk=run.pk).update(settings={**run.settings, "evidence": mode})
    for index, spec in enumerate(specs):
        evidence(add_claim(run, index, texts[index]), spec, source_type=source_type)
    return run


def test_a_sentence_supported_by_one_of_three_pages_says_so_beside_its_orange(client):
    run = sentence_run("1S 2I")

    doc = parse(get(client, permalink(run), htmx=True))

    link = one(doc, "#sentence-0")
    assert link.get("data-band") == "orange" and link.get("data-outcome") == "supported"
    tag = one(doc, "#note-0 .outcome-tag")
    assert "band-orange" in tag.classes and tag.get("data-icon") == "✓"
    assert words(tag) == "supported by 1 of 3 sources read"
    assert words(one(doc, "#note-0 .note-score")) == "33%"


def test_a_contradicted_and_an_unconfirmed_sentence_differ_in_shape_and_words_though_both_are_red_zero(client):
    run = sentence_run("1N 2I", "3I")

    doc = parse(get(client, permalink(run), htmx=True, sentence="0"))

    contradicted, unconfirmed = one(doc, "#sentence-0"), one(doc, "#sentence-1")
    assert [contradicted.get("data-band"), unconfirmed.get("data-band")] == ["red", "red"]
    assert [contradicted.get("data-score"), unconfirmed.get("data-score")] == ["0.0", "0.0"]
    # The CSS draws a pattern per data-outcome and the icon from data-icon.
    assert [contradicted.get("data-outcome"), unconfirmed.get("data-outcome")] == ["contradicted", "unconfirmed"]
    assert [one(a, ".score-badge").get("data-icon") for a in (contradicted, unconfirmed)] == ["✗", "?"]
    assert words(one(doc, "#note-0 .outcome-tag")) == "contradicted by 1 of 3 sources read"
    assert words(one(doc, "#note-1 .outcome-tag")) == "unconfirmed: none of 3 sources read addresses it"
    assert words(one(doc, "#sentence-outcome .outcome-tag")) == "contradicted by 1 of 3 sources read"


def test_a_sentence_links_name_carries_its_outcome_and_score_in_words(client):
    run = sentence_run("1N 2I", "2S")

    doc = parse(get(client, permalink(run), htmx=True))

    first, second = one(doc, "#sentence-0"), one(doc, "#sentence-1")
    assert first.get("aria-label") == (
        "Claim number 1 is about the tower. (contradicted by 1 of 3 sources read, score 0%)"
    )
    assert (
        second.get("aria-label") == "Claim number 2 is about the tower. (supported by 2 of 2 sources read, score 100%)"
    )
    assert one(first, ".score-badge").get("aria-hidden") == "true"  # not "…tower.0%"


def test_the_per_sentence_links_say_which_sentence_and_its_outcome(client):
    run = sentence_run("1N 2I", "2S")

    doc = parse(get(client, permalink(run), htmx=True))

    names = [words(a) for a in doc.cssselect(".sentence-note > a")]
    assert names == [
        "S1 (sentence 1, “Claim number 1 is about the tower.”): contradicted by 1 of 3 sources read, score 0%",
        "S2 (sentence 2, “Claim number 2 is about the tower.”): supported by 2 of 2 sources read, score 100%",
    ]


def test_the_headline_says_the_share_that_supports_not_mostly_unsupported(client):
    run = sentence_run("3S 2N 11I")

    doc = parse(get(client, permalink(run), htmx=True))

    assert "band-red" in one(doc, ".overall").classes
    assert words(one(doc, ".overall-label")) == "Overall credibility · little or no evidence supports it"
    assert words(one(doc, "#overall-counts")) == "supported evidence 3 of 16"
    assert words(one(doc, "#overall-breakdown")) == "3 supporting · 2 contradicting · 11 not addressing their claim"
    assert "unsupported" not in words(one(doc, ".summary"))


def test_an_orange_sentence_nothing_contradicts_is_not_called_mixed(client):
    run = sentence_run("1S 1I")

    doc = parse(get(client, permalink(run), htmx=True))

    assert words(one(doc, ".overall-label")) == "Overall credibility · some evidence supports it"
    assert "mixed" not in words(one(doc, "#result-body .summary")) + words(one(doc, "#note-0"))


def test_a_run_going_on_says_every_score_is_so_far_and_a_finished_one_does_not(client):
    run = sentence_run("2S", "1S 1N 2P", status=Status.RUNNING)
    Sentence.objects.filter(verification=run, index=0).update(status=Status.DONE)
    checking = run.sentences.get(index=1).claims.get()
    checking.status = ClaimStatus.JUDGING
    checking.save()

    doc = parse(get(client, permalink(run), htmx=True, sentence="1"))

    assert words(one(doc, ".overall-label")) == (
        "Overall credibility · most evidence supports it so far, from 4 of 6 judgements"
    )
    assert words(one(doc, "#note-1 .outcome-tag")) == "being checked"
    assert words(one(doc, "#note-1 .provisional")) == "so far, from 2 of 4 judgements"
    assert words(one(doc, "#sentence-score")) == "50% · supported evidence 1 of 2 · so far, from 2 of 4 judgements"
    assert words(one(doc, f"#claim-{checking.pk} .claim-outcome")).startswith(
        "being checked 50% so far, from 2 of 4 judgements ·"
    )
    assert "so far" in one(doc, ".types legend").text_content()
    # The sentence already checked is final: its words do not say "so far".
    assert "so far" not in words(one(doc, "#note-0"))

    Verification.objects.filter(pk=run.pk).update(status=Status.DONE)
    Sentence.objects.filter(verification=run).update(status=Status.DONE)
    run.sentences.get(index=1).claims.update(status=ClaimStatus.DONE)
    finished = parse(get(client, permalink(run), htmx=True, sentence="1"))
    assert "so far" not in words(one(finished, "#result-body"))


def test_documents_that_do_not_address_a_claim_do_not_count_against_it_and_the_page_says_so(client):
    run = sentence_run("1S 3I", mode="documents", source_type="your_document")

    doc = parse(get(client, permalink(run), htmx=True, sentence="0"))

    link = one(doc, "#sentence-0")
    assert (link.get("data-band"), link.get("data-score")) == ("green", "1.0")  # 25% red before
    assert words(one(doc, "#note-0 .outcome-tag")) == "supported by 1 of 1 document counted"
    assert words(one(doc, "#note-0 .note")) == (
        "1 document supports it; 3 documents of yours did not address it (not counted)"
    )
    assert words(one(doc, "#overall-breakdown")) == (
        "1 supporting · 0 contradicting · 0 not addressing their claim · "
        "3 of your documents not addressing their claim, not counted"
    )
    assert words(one(doc, "details.irrelevant-group > summary")) == (
        "3 documents did not address this claim (3 of your documents: not counted)"
    )
    assert not doc.cssselect("#documents-rule")  # shown for runs that were given documents
    Source.objects.filter(verification=run).update(origin=Origin.DOCUMENT)
    given = parse(get(client, permalink(run), htmx=True))
    assert words(one(given, "#documents-rule")) == (
        "Your documents count only for the claims they address: a document that does not address a claim "
        "counts in neither number (why)."
    )
    assert one(given, "#documents-rule a").get("href") == "/about#documents-rule"
    result = get(client, permalink(run) + ".json").json()
    assert result["score"] == 1.0 and result["counts"]["silent_documents"] == 3
    assert result["sentences"][0]["claims"][0]["note"] == (
        "1 document supports it; 3 documents of yours did not address it (not counted)"
    )


def test_the_scoring_modules_document_type_is_the_models():
    from verification.models import SourceType
    from verification.scoring import DOCUMENT_TYPE

    assert DOCUMENT_TYPE == SourceType.YOUR_DOCUMENT


def test_the_legend_shows_every_shape_and_band_the_sentences_can_have(client):
    run = sentence_run("1S", "1N", "1S 1N", "1I", "")

    doc = parse(get(client, permalink(run), htmx=True))

    legend = one(doc, ".legend")
    shown = {a.get("data-outcome") for a in doc.cssselect("a.sentence")}
    assert shown == {"supported", "contradicted", "mixed", "unconfirmed", "no_evidence"}
    icons = {a.get("data-outcome"): one(a, ".score-badge").get("data-icon") for a in doc.cssselect("a.sentence")}
    in_legend = {span.get("data-outcome"): span.get("data-icon") for span in legend.cssselect(".legend-outcome")}
    assert icons.items() <= in_legend.items()
    assert [span.get("data-band") for span in legend.cssselect(".legend-band")] == ["green", "orange", "red", "none"]
    assert words(legend).startswith("Colour, the share of counted evidence that supports it: ≥ 60% 30%–60% < 30%")


def test_about_describes_exactly_the_legend_and_the_documents_rule(client):
    doc = parse(get(client, "/about"))

    bands = {li.get("data-band"): words(li) for li in doc.cssselect("ul.bands li")}
    assert "no relevant evidence" not in words(one(doc, "article"))
    assert bands["none"].startswith("grey “—” no score: nothing was counted")
    shapes = {span.get("data-outcome"): span.get("data-icon") for span in doc.cssselect(".shapes [data-outcome]")}
    from verification.selectors.result_page import result_legend  # here: what the page's legend is built from

    legend = result_legend()["outcomes"]
    assert shapes == {row["outcome"]: row["icon"] for row in legend}  # the page's legend, shape for shape
    assert "documents that do not address a claim count in neither number" in words(one(doc, "article"))


def test_no_bare_verdict_words_are_left_in_the_markup(client):
    run = sentence_run("1S 1N 1I")

    html = get(client, permalink(run), htmx=True, sentence="0").content.decode()

    text = words(lxml.html.fragment_fromstring(html, create_parent="div"))
    assert "not supported" not in text and "Supported" not in text
