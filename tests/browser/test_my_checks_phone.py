"""My checks on a phone (issue 27.9), in real Chromium: the list was 579 px wide on a 390 px
screen, Credibility cut and Delete off-screen; and an edited copy looked like its original."""

import pytest
from django.utils.timezone import localtime
from playwright.sync_api import expect

from tests.browser.test_accessibility import assert_no_violations
from tests.browser.test_ui import RESULT_URL, SAMPLE, submit, wait_until_done
from verification.models import Verification

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}

CELLS = """rows => rows.map(row => {
  const box = (selector) => { const r = row.querySelector(selector).getBoundingClientRect();
                              return {left: r.left, right: r.right, width: r.width, height: r.height}; };
  return {id: row.dataset.id, score: box(".check-score"), remove: box(".check-actions a"), text: box(".check-text")};
})"""


def test_my_checks_fit_a_phone_and_an_edited_copy_names_its_original(page, world, celery_worker):
    original = submit(page, SAMPLE)
    wait_until_done(page)
    page.get_by_role("link", name="Edit text").click()
    page.fill("textarea[name=text]", SAMPLE.replace("330 metres", "300 metres"))
    page.click("button[type=submit]")
    page.wait_for_url(RESULT_URL)
    copy = RESULT_URL.search(page.url).group(1)
    wait_until_done(page)

    page.set_viewport_size(PHONE)
    page.goto("/mine")
    expect(page.locator("#check-list tbody tr")).to_have_count(2)

    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    for row in page.eval_on_selector_all("#check-list tbody tr", CELLS):
        for cell in ("score", "remove", "text"):
            box = row[cell]
            assert box["width"] > 0 and box["height"] > 0, (cell, row)
            assert box["left"] >= 0 and box["right"] <= PHONE["width"], (cell, row)
    for row_id in (original, copy):
        expect(page.locator(f"tr[data-id='{row_id}'] .check-score")).to_be_in_viewport()
        expect(page.locator(f"tr[data-id='{row_id}'] .check-actions a")).to_be_in_viewport()

    # The copy says what it was edited from, with a link to it; the original says nothing of the kind.
    started = localtime(Verification.objects.get(pk=original).created_at)
    edited = page.locator(f"tr[data-id='{copy}'] .edited-from")
    expect(edited).to_have_text(f"edited from the check of {started:%-d %b %Y, %H:%M}")
    expect(edited.locator("a")).to_have_attribute("href", f"/v/{original}")
    expect(page.locator(f"tr[data-id='{original}'] .edited-from")).to_have_count(0)
    assert page.request.get("/api/verifications").json()[0]["edited_from"] == original

    assert_no_violations(page, "My checks on a phone")
