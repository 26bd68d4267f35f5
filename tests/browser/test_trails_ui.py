"""The trail pages in real Chromium: the builder filled with the example trail's texts
(docs/examples/trail.json), the run on the real Celery worker with the fake LLM (which answers the
trail's steps by what the prompts say: tests/trail_model.py), each claim's trail, and axe-core on
the form and the trail page.

    FACTSITE_SCREENSHOTS=1 bash scripts/test.sh tests/browser/test_trails_ui.py

also rewrites docs/screenshots/trail.png (look at it before committing it)."""

import json
import os
import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_accessibility import assert_no_violations
from tests.browser.test_screenshots import shoot
from tests.browser.test_ui import RESULT_URL, RUN_TIMEOUT
from tests.conftest import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EXAMPLE = {node["id"]: node for node in json.loads((ROOT / "docs" / "examples" / "trail.json").read_text())["nodes"]}
UNSUPPORTED = "The tower was painted gold in 1920."
SUPPORTED = "The Eiffel Tower opened in Paris in 1889."
PHONE = {"width": 390, "height": 844}


def fill_builder(page) -> None:
    """The example trail typed into the builder: two of its three source boxes, one level."""
    page.goto("/trail")
    for box, node in (("source-0", "src-a"), ("source-1", "src-b"), ("level-0-0", "sum-1"), ("final", "final")):
        page.fill(f"#{box}-text", EXAMPLE[node]["text"])
        page.fill(f"#{box}-name", node)
    page.fill("#level-0-step", "section summary")
    page.fill("#final-step", "final answer")


def claim_link(page, text: str):
    return page.locator(".trail-claims a", has_text=text)


def test_the_builder_adds_boxes_in_place_keeping_what_was_typed(page, configured):
    page.goto("/trail")
    page.fill("#source-0-text", "Source one says so.")
    page.fill("#source-0-name", "first")
    # The level's checkboxes name the source as it is typed (trail.js).
    expect(page.locator("#level-0-0 [data-label-of=source-0]")).to_have_text("first")

    page.get_by_role("button", name="Add a source").click()

    expect(page.locator("#source-3-text")).to_be_focused()
    expect(page.locator("#source-0-text")).to_have_value("Source one says so.")
    expect(page.locator("#level-0-0 input[name=level-0-0-from][value='3']")).to_be_checked()
    assert page.url.endswith("/trail")  # htmx swapped the builder: no page load

    page.get_by_role("button", name="Add a level").click()
    expect(page.locator("#level-1-step")).to_be_focused()
    expect(page.locator("#level-1-0 [data-label-of=level-0-0]")).to_have_text("level-1-text-1")


@pytest.fixture
def held_claim(world, settings):
    """The fake model holds back the evidence selections of the "aquarium" claim until the test
    calls `release()`: the run stays running, its other claims finished. Each claim is asked on
    its own and at once, so the held call holds that claim alone and the others do not wait for it."""
    settings.TRAIL_BATCH_CLAIMS, settings.TRAIL_BATCH_WAIT_S = 1, 0
    world.llm.held_words = ("Claim: The tower hosts",)
    yield world.llm
    world.llm.release()


def test_a_trail_built_in_the_form_shows_where_each_claim_came_from(page, held_claim, celery_worker):
    fill_builder(page)
    assert_no_violations(page, "the trail form")
    page.get_by_role("button", name="Check the trail").click()
    page.wait_for_url(RESULT_URL)

    # While it runs, the page polls: the claims arrive one by one, the held one still being checked.
    expect(page.locator("#verdict-counts [data-verdict=fully_supported]")).to_have_text("1 fully supported")
    expect(page.locator("#verdict-counts [data-verdict=pending]")).to_have_text("1 being checked")
    expect(page.locator("#progress")).to_be_visible()
    assert_no_violations(page, "a running trail")
    held_claim.release()
    expect(page.locator("#result-body")).to_have_attribute("data-status", "done", timeout=RUN_TIMEOUT)
    expect(page.locator("#run-ended")).to_have_text("The trail check finished: every claim has its verdict.")
    # The last poll's 286 stopped the polling, and the page holds no poll any more.
    expect(page.locator("#result-body")).not_to_have_attribute("hx-trigger", re.compile("every"))

    expect(page.locator("#trail-headline")).to_have_text(
        "1 unsupported claim entered at 'section summary', 1 at the final step."
    )
    expect(page.locator("#sentence-1")).to_have_attribute("data-band", "red")

    claim_link(page, UNSUPPORTED).click()
    expect(page.locator("#claim-entered")).to_contain_text("entered at 'section summary', in 'sum-1'")
    assert re.search(r"\?claim=\d+$", page.url)
    entered = page.locator("article.trail-node.entered")
    expect(entered).to_have_attribute("data-node", "sum-1")
    expect(entered.locator(".node-evidence mark")).to_have_text(UNSUPPORTED)
    assert_no_violations(page, "a trail with an unsupported claim selected")
    if os.environ.get("FACTSITE_SCREENSHOTS"):
        page.reload()  # without the notice that the run has just ended
        expect(page.locator("#claim-entered")).to_be_visible()
        page.evaluate("window.scrollTo(0, 0)")
        shoot(page, "trail.png", full_page=False)

    claim_link(page, SUPPORTED).click()
    expect(page.locator("#claim-path")).to_contain_text("Supported down to src-a")
    source = page.locator("article.trail-node.path[data-node=src-a]")
    expect(source.locator(".node-evidence mark", has_text=SUPPORTED)).to_have_count(1)
    expect(page.locator("article.trail-node[data-node=src-b]")).not_to_have_class(re.compile(r"\bpath\b"))
    expect(page.locator("article[data-node=sum-1] .made-from .path")).to_have_text("src-a")
    # The whole source opens on demand, in place, the selected sentence marked in it.
    source.get_by_role("link", name="Read src-a whole").click()
    expect(source.locator(".node-text .passage mark", has_text=SUPPORTED)).to_be_visible()
    expect(source.locator(".node-text .passage")).to_contain_text(EXAMPLE["src-a"]["text"])

    # Back to the unsupported claim with the browser's back button: the view is the address.
    page.go_back()
    expect(page.locator("#claim-entered")).to_be_visible()

    assert_no_violations(page, "a trail, light")
    page.emulate_media(color_scheme="dark")
    assert_no_violations(page, "a trail, dark")
    page.set_viewport_size(PHONE)
    assert_no_violations(page, "a trail, dark, on a phone")


def test_a_refused_trail_keeps_every_text_and_passes_axe(page, configured):
    fill_builder(page)
    page.fill("#level-0-0-name", "src-a")  # two texts of one name

    # Enter in a name field checks the trail (the form's default button), never "Add a source".
    page.press("#final-step", "Enter")

    expect(page.locator("#form-errors")).to_contain_text("Two texts are named 'src-a'")
    expect(page.locator("#source-3-text")).to_have_count(0)
    expect(page.locator("#form-errors")).to_be_focused()
    expect(page.locator("#level-0-0-text")).to_have_value(EXAMPLE["sum-1"]["text"])
    expect(page.locator("#final-step")).to_have_value("final answer")
    assert_no_violations(page, "a refused trail form")
