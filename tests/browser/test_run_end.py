"""A result page watched while its run goes on and ends (issue 27.10, 27.11), in real Chromium
with the real worker: an early score is shown small and grey with its "so far" (a large green 80 %
early on ended at 57 %), and the text does not move when the run ends (it moved up 54 px: the
progress bar above it went and a notice came)."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_live_updates import count_poll_swaps, wait_for_polls, wait_until_only_the_held_sentence_is_left
from tests.browser.test_ui import SAMPLE, submit, wait_until_done
from verification.models import FINISHED

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}

# Where each thing is on the page (not on screen: the same while the page is not scrolled).
PLACES = """() => {
  const box = (selector) => {
    const r = document.querySelector(selector).getBoundingClientRect();
    return {top: r.top + window.scrollY, height: r.height};
  };
  return {sentence: box("#sentence-0"), text: box("#text-heading"), summary: box(".summary"), scrollY: window.scrollY};
}"""

SCORE_STYLE = """() => {
  const style = getComputedStyle(document.getElementById("overall-score"));
  return {
    size: parseFloat(style.fontSize),
    color: style.color,
    muted: getComputedStyle(document.getElementById("overall-breakdown")).color,
  };
}"""


def settled(page, held, verification_id: str) -> None:
    """Everything but the held sentence is judged, and the page shows it."""
    wait_until_only_the_held_sentence_is_left(held, verification_id)
    count_poll_swaps(page)
    wait_for_polls(page, 2)
    assert page.get_attribute("#result-body", "data-status") not in FINISHED


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_the_text_stays_where_it_is_when_the_run_ends(new_context, held, celery_worker, viewport):
    page = new_context(viewport=viewport).new_page()
    verification_id = submit(page, SAMPLE)
    settled(page, held, verification_id)
    expect(page.locator("#progress")).to_be_visible()
    before = page.evaluate(PLACES)

    held.release()
    wait_until_done(page)
    # The reader who watched is told, and nothing of the page moved for it.
    expect(page.locator("#run-ended")).to_have_text(re.compile(r"^Verification finished"))
    expect(page.locator("#run-ended")).to_be_visible()
    expect(page.locator("#progress")).to_have_count(0)
    after = page.evaluate(PLACES)

    assert before["scrollY"] == after["scrollY"] == 0
    assert after["sentence"]["top"] == pytest.approx(before["sentence"]["top"], abs=0.5), (before, after)
    assert after["summary"]["height"] == pytest.approx(before["summary"]["height"], abs=0.5), (before, after)
    assert after["sentence"]["top"] < viewport["height"]


def test_a_score_that_can_still_move_is_small_and_grey_until_the_run_ends(page, held, celery_worker):
    verification_id = submit(page, SAMPLE)
    settled(page, held, verification_id)

    running = page.evaluate(SCORE_STYLE)
    expect(page.locator("#overall-provisional")).to_have_text(re.compile(r"^so far, from \d+ of \d+ judgements$"))
    expect(page.locator("#overall-score")).to_have_text(re.compile(r"^\d+%$"))
    assert running["color"] == running["muted"], "a provisional score is drawn in its band's colour"
    assert running["size"] <= 21, f"a provisional score is {running['size']} px tall"  # 41.6 px, as a final one

    held.release()
    wait_until_done(page)

    final = page.evaluate(SCORE_STYLE)
    expect(page.locator("#overall-provisional")).to_have_count(0)
    assert final["color"] != final["muted"]
    assert final["size"] >= 2 * running["size"]
