"""An Arabic answer in a real browser (issue 36): the page says it was checked in Arabic, the text
and its page's passages read right to left (their `dir`, and where the browser lays them out),
while the page around them stays left to right."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.test_ui import submit, wait_until_done
from tests.fakes import FakePage, FakeSite

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARABIC = (Path(__file__).parent.parent / "data" / "languages" / "answer_ar.txt").read_text(encoding="utf-8")


@pytest.fixture
def arabic_site(world):
    site = FakeSite(pages={"/burj": FakePage("برج إيفل", ARABIC)}).start()
    world.serper.sites.append(site)
    yield site
    site.stop()


def test_an_arabic_text_reads_right_to_left_and_says_its_language(page, world, celery_worker, arabic_site):
    submit(page, ARABIC)
    wait_until_done(page)

    expect(page.locator("#run-language")).to_have_text("Checked in Arabic (العربية)")
    text = page.locator(".text-panel .text")
    expect(text).to_have_attribute("dir", "rtl")
    expect(text).to_have_attribute("lang", "ar")
    assert text.evaluate("e => getComputedStyle(e).direction") == "rtl"
    # Right to left: the first sentence starts at the right of the text block.
    first = page.locator("#sentence-0")
    block, sentence = text.bounding_box(), first.bounding_box()
    assert block["x"] + block["width"] - (sentence["x"] + sentence["width"]) < 40
    # The page around the text is English and stays left to right.
    assert page.evaluate("getComputedStyle(document.body).direction") == "ltr"

    first.click()
    passage = page.locator(".evidence .passage[lang=ar]").first
    expect(passage).to_have_attribute("dir", "rtl")
    expect(passage).to_contain_text("1889")
    assert passage.evaluate("e => getComputedStyle(e).direction") == "rtl"
    expect(page.locator(".claim h3").first).to_have_attribute("dir", "rtl")
