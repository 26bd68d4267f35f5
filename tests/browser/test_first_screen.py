"""The first screen of a result (issue 27.8), in real Chromium on a laptop (1280×900) and a phone
(390×844): the text the reader came for starts on it. It started 654–828 px down on a laptop and
1,403 px on a phone, under seven stacked full-width buttons, a two-row legend and the run's
details; the phone's navigation took two lines per item."""

import pytest
from playwright.sync_api import expect

from tests.browser.test_ui import SAMPLE, submit, wait_until_done

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
# One line of the navigation's text: it was 49.6 px on a phone, each item on two lines.
ONE_LINE = 40

TOP = "selector => document.querySelector(selector).getBoundingClientRect().top + window.scrollY"


def first_sentence_top(page) -> float:
    return page.evaluate(TOP, "#sentence-0")


@pytest.fixture
def finished_run(page, world, celery_worker):
    """The sample, finished, with the fake world's one page that refuses to be read: the page
    has a problems banner above its score, as many real runs do."""
    verification_id = submit(page, SAMPLE)
    wait_until_done(page)
    return verification_id


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_the_first_sentence_of_the_text_is_on_the_first_screen(page, finished_run, viewport):
    page.set_viewport_size(viewport)
    page.goto(f"/v/{finished_run}")
    expect(page.locator("#problems")).to_be_visible()

    top = first_sentence_top(page)

    assert top < viewport["height"], f"the text starts {top:.0f} px down a {viewport['height']} px screen"
    # The score is on that screen too, and above the text.
    assert page.evaluate(TOP, "#overall-score") < top
    # What was run is below the text, not before it.
    assert page.evaluate(TOP, "#run-facts") > top


def test_the_actions_are_one_row_with_the_downloads_in_one_menu(page, finished_run):
    page.goto(f"/v/{finished_run}")
    actions = page.locator("#run-actions")
    buttons = actions.locator(":scope > a, :scope > button, :scope > details > summary")
    expect(buttons).to_have_count(4)  # copy link, edit, download, delete
    tops = {round(box["y"]) for box in (b.bounding_box() for b in buttons.all())}
    assert len(tops) == 1, f"the actions are on {len(tops)} rows"
    links = page.locator("#downloads .menu-items a")
    expect(links).to_have_count(4)
    for link in links.all():
        expect(link).to_be_hidden()

    # By keyboard: the menu's button opens it, Escape closes it and gives the focus back.
    page.focus("#downloads summary")
    page.keyboard.press("Enter")
    for link in links.all():
        expect(link).to_be_visible()
    expect(page.get_by_role("link", name="Download the Report (Markdown)")).to_have_attribute(
        "href", f"/v/{finished_run}/report.md"
    )
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "report-md"
    page.keyboard.press("Escape")
    expect(links.first).to_be_hidden()
    assert page.evaluate("document.activeElement.matches('#downloads summary')")

    # A click elsewhere closes it too.
    page.click("#downloads summary")
    expect(links.first).to_be_visible()
    page.click("#text-heading")
    expect(links.first).to_be_hidden()


def test_each_navigation_item_is_one_line_on_a_phone(page, finished_run):
    page.set_viewport_size(PHONE)
    for path in ("/", "/mine", "/about", f"/v/{finished_run}"):
        page.goto(path)

        heights = page.eval_on_selector_all(
            ".site-header nav a", "links => links.map(a => a.getBoundingClientRect().height)"
        )

        assert len(heights) == 4
        assert max(heights) < ONE_LINE, (path, heights)
        header = page.evaluate("document.querySelector('.site-header').getBoundingClientRect().height")
        assert header < 100, f"{path}: the header is {header:.0f} px tall"  # 118 px with two-line items
