"""A claim's trail on a phone (issue 38.8), in real Chromium: the stage columns scrolled sideways
(646 px in 324 px) with nothing that said so, the node where the claim got in was cut in half and
the final text was off-screen. They stack now, and nothing is wider than the screen. The run is
built with the ORM (tests/test_trail_views.py): nothing runs."""

import pytest
from playwright.sync_api import expect

from tests.test_trail_views import claim_id, finished_trail

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONES = pytest.mark.parametrize(
    "viewport", [{"width": 360, "height": 740}, {"width": 390, "height": 844}], ids=["360", "390"]
)
# Left and right edges on the page, and how wide an element's content is against its box.
BOX = """el => { const r = el.getBoundingClientRect();
  return {left: r.left, right: r.right, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth}; }"""


@PHONES
def test_a_claims_trail_on_a_phone_fits_the_screen_with_its_entry_node_and_final_text_whole(
    new_context, configured, viewport
):
    run = finished_trail()
    page = new_context(viewport=viewport).new_page()

    page.goto(f"/v/{run.pk}?claim={claim_id(run, 'gold')}")

    expect(page.locator("#claim-entered")).to_contain_text("entered at 'section summary'")
    stages = page.locator(".trail-scroll").evaluate(BOX)
    assert stages["scrollWidth"] <= stages["clientWidth"], f"the stages scroll sideways: {stages}"
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    for node in ("article.trail-node.entered", "article.trail-node.final"):
        box = page.locator(node).evaluate(BOX)
        assert box["left"] >= 0 and box["right"] <= viewport["width"], f"{node} is cut: {box}"
    # Stacked from the sources down to the final text, which comes last.
    tops = page.eval_on_selector_all(".trail-column", "columns => columns.map(c => c.getBoundingClientRect().top)")
    assert tops == sorted(tops) and len(set(tops)) == len(tops), tops
