"""The result page on a phone (390×844): targets a thumb can hit, and a way back from the
evidence to the text."""

import pytest
from playwright.sync_api import expect

from tests.browser.test_ui import SAMPLE, submit, wait_until_done

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
# WCAG 2.2's minimum target (2.5.8): 24 × 24 CSS pixels. Links inside running text are exempt
# (the sentences of the text, the words of a passage or rationale): they are lines of prose. So
# is a skip link until it is focused (1 px, out of sight).
SMALL_TARGETS = """() => [...document.querySelectorAll(
    'a[href], input[type=checkbox], input[type=radio], summary, button')]
  .filter(el => el.offsetParent !== null && getComputedStyle(el).visibility !== 'hidden')
  .filter(el => !el.closest('.text, .passage, .rationale p, .site-footer, .visually-hidden, .skip-link:not(:focus)'))
  .map(el => { const r = el.getBoundingClientRect();
               return {what: el.outerHTML.slice(0, 90), width: Math.round(r.width), height: Math.round(r.height)}; })
  .filter(t => t.width < 24 || t.height < 24)"""


@pytest.fixture
def finished_run(page, world, celery_worker):
    page.set_viewport_size(PHONE)
    verification_id = submit(page, SAMPLE)
    wait_until_done(page)
    return verification_id


def test_every_target_on_a_phone_is_at_least_24_px(page, finished_run):
    page.goto(f"/v/{finished_run}?sentence=0")
    expect(page.locator("#evidence input[type=checkbox]").first).to_be_visible()

    small = page.evaluate(SMALL_TARGETS)
    assert small == [], "\n".join(map(str, small))


def test_the_evidence_leads_back_to_its_sentence_in_the_text(page, finished_run):
    page.goto(f"/v/{finished_run}")
    page.locator("#sentence-1").click()
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 2")
    back = page.locator("#evidence a.back-to-text")
    expect(back).to_be_visible()
    back.scroll_into_view_if_needed()
    expect(page.locator("#sentence-1")).not_to_be_in_viewport()

    back.click()

    expect(page.locator("#sentence-1")).to_be_in_viewport()
