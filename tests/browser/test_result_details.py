"""Smaller things a result page got wrong (issue 27.11), in real Chromium: a failed run offered a
score rule, a link to share and downloads with nothing in them, and listed its identical "check
failed" lines one by one; a sentence's score sat alone on a line under its wrapped outcome; the
downloaded HTML report had no <main> (axe: landmark rules)."""

import pytest
from playwright.sync_api import expect

from tests.browser.test_accessibility import assert_no_violations
from tests.browser.test_score_layout import long_breakdown_run
from tests.browser.test_ui import RUN_TIMEOUT, SAMPLE, submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = [
    pytest.param({"width": 1280, "height": 900}, id="laptop"),
    pytest.param({"width": 390, "height": 844}, id="phone"),
]


def test_a_failed_run_with_nothing_judged_offers_nothing_empty_and_says_each_failure_once(page, world, celery_worker):
    world.serper.fail_status = 503  # every search fails: nothing to judge, the run fails
    submit(page, SAMPLE)
    expect(page.locator("#result-body")).to_have_attribute("data-status", "failed", timeout=RUN_TIMEOUT)

    for empty in ("[data-copy-link]", "#downloads", "#report-md", "input[name=score_rule]"):
        expect(page.locator(empty)).to_have_count(0)
    expect(page.get_by_role("link", name="Edit text")).to_be_visible()
    expect(page.get_by_role("link", name="Delete", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Retry failed parts")).to_be_visible()

    failed_sentences = page.locator("a.sentence[data-outcome=failed]").count()
    assert failed_sentences >= 2, "the test needs several sentences failed alike"
    rows = page.locator(".sentence-notes > li[data-outcome=failed]")
    notes = [row.locator(".note").inner_text() for row in rows.all()]
    assert len(notes) == len(set(notes)), f"the same failure listed more than once: {notes}"
    counts = [
        int(row.locator(".note-count").inner_text().rstrip("×")) if row.locator(".note-count").count() else 1
        for row in rows.all()
    ]
    assert sum(counts) == failed_sentences
    group = page.locator(".sentence-notes > li.note-group").first
    expect(group).to_contain_text(f"({failed_sentences} sentences)")
    expect(group.locator(".outcome-tag")).to_have_text("check failed")


SAME_LINE = """rows => rows.map(row => {
  const line = (rect) => ({top: rect.top, bottom: rect.bottom});
  // The tag's words line by line (a range's boxes): the first line is where its outcome starts.
  const words = document.createRange();
  words.selectNodeContents(row.querySelector(".outcome-tag"));
  const lines = [...words.getClientRects()];
  const score = row.querySelector(".note-score");
  return {
    id: row.id,
    tagLines: new Set(lines.map(r => Math.round(r.top))).size,
    tag: line(lines[0]),
    link: line(row.querySelector(":scope > a").getBoundingClientRect()),
    score: score ? line(score.getBoundingClientRect()) : null,
  };
})"""


def on_one_line(a: dict, b: dict) -> bool:
    """Two boxes share a line when each one's vertical middle is within the other."""
    middle_a, middle_b = (a["top"] + a["bottom"]) / 2, (b["top"] + b["bottom"]) / 2
    return b["top"] <= middle_a <= b["bottom"] and a["top"] <= middle_b <= a["bottom"]


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_each_sentence_row_has_its_number_score_and_outcome_on_one_line(new_context, viewport):
    run = long_breakdown_run()
    page = new_context(viewport=viewport).new_page()
    page.goto(f"/v/{run.pk}")

    rows = page.eval_on_selector_all(".sentence-notes > li:not(.note-group)", SAME_LINE)

    assert len(rows) == 3
    assert any(row["tagLines"] > 1 for row in rows) or viewport["width"] > 900, "no outcome wraps: nothing tested"
    for row in rows:
        assert on_one_line(row["link"], row["tag"]), row
        if row["score"]:
            assert on_one_line(row["score"], row["tag"]), f"the score is not on its outcome's line: {row}"


def test_the_downloaded_html_report_has_a_main_landmark_and_no_axe_violation(page):
    run = long_breakdown_run()
    page.goto(f"/v/{run.pk}")
    report = page.request.get(f"/v/{run.pk}/report.html")
    assert report.ok

    page.set_content(report.text())

    assert_no_violations(page, "the downloaded HTML report")  # it found landmark-one-main and region
    expect(page.locator("main h1")).to_contain_text("factsite report")
