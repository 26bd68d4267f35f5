"""Printing a result page (issue 17.2), with print media emulated in real Chromium: no nav, buttons
or checkboxes; every sentence with its outcome, score and claims; every evidence item with its
address written out. The run is built with the ORM (no worker needed: nothing runs)."""

import pytest
from playwright.sync_api import expect

from tests.test_views import add_claim, add_evidence, make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCRIPT = "<script>window.__xss=1</script>"
# Controls that mean nothing on paper.
CONTROLS = "nav, button, .button, input, select, textarea"


def printable_run():
    run = make_run("The Eiffel Tower is in Paris.", "It was completed in 1889.", "I hope this helps!")
    paris = add_claim(run, 0, "The Eiffel Tower is in Paris.")
    built = add_claim(run, 1, "The Eiffel Tower was completed in 1889.")
    evidence = [
        add_evidence(paris, "wiki", "supported", title="Eiffel Tower - Encyclopedia"),
        add_evidence(paris, "blog", "not_supported", title=f"A blog {SCRIPT}", rationale="It places it in Las Vegas."),
        add_evidence(built, "news", "supported", rationale="The tower opened in 1889."),
    ]
    return run, evidence


def visible_count(page, selector: str) -> int:
    return page.eval_on_selector_all(selector, "els => els.filter(e => e.checkVisibility()).length")


def test_a_printed_result_shows_every_sentence_and_source_address_and_no_controls(new_context):
    run, evidence = printable_run()
    page = new_context().new_page()
    # One sentence selected and a type left out: the page's panel holds only that sentence's evidence.
    page.goto(f"/v/{run.pk}?sentence=0&exclude_types=blog")
    expect(page.locator("#print-report")).to_be_hidden()
    assert visible_count(page, CONTROLS) > 5  # the test is worth something only if there were some

    page.emulate_media(media="print")

    assert visible_count(page, CONTROLS) == 0
    expect(page.locator("#print-report")).to_be_visible()
    sentences = page.locator("#print-report .report-sentence")
    expect(sentences).to_have_count(3)
    for sentence in run.sentences.order_by("index"):
        row = sentences.nth(sentence.index)
        expect(row.locator(".report-sentence-text")).to_have_text(f"S{sentence.index + 1} {sentence.text}")
        expect(row.locator(".report-outcome")).to_be_visible()
        for claim in sentence.claims.all():
            expect(row.locator(".report-claims li", has_text=claim.text)).to_be_visible()
    expect(sentences.nth(0).locator(".report-score-value")).to_have_text("100%")
    for item in evidence:
        address = page.locator(".report-url", has_text=item.source.url)
        note = page.locator("#print-report .report-footnotes > li", has=address)
        expect(note).to_be_visible()
        expect(note.locator(".report-url")).to_be_visible()
        expect(note.locator(".report-title")).to_have_text(item.source.title)
        expect(note.locator(".report-rationale")).to_have_text(item.rationale)
    expect(page.locator("#exclusions")).to_contain_text("Source types left out: Blog.")
    expect(page.locator("#print-report .report-rule")).to_have_text(
        "Score rule: all, supporting ÷ all judged evidence."
    )
    assert page.evaluate("typeof window.__xss") == "undefined"
