"""axe-core (the copy bundled by axe-playwright-python) run inside real Chromium on each kind of
page a reader meets: the form, a running run, a finished run with a sentence selected, /about."""

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.test_ui import SAMPLE, submit, wait_until_done
from verification.models import FINISHED

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Axe()
PHONE = {"width": 390, "height": 844}


def assert_no_violations(page, name: str) -> None:
    # page.evaluate runs axe through the DevTools protocol: the page's Content-Security-Policy,
    # which refuses inline and injected scripts, does not apply to it.
    violations = AXE.run(page).response["violations"]
    found = [f"{v['id']} ({v['impact']}): {[node['target'] for node in v['nodes']]}" for v in violations]
    assert not found, f"{name}: " + "; ".join(found)


def test_axe_finds_no_violations_on_any_page(page, held, celery_worker):
    page.goto("/")
    assert_no_violations(page, "the form")

    submit(page, SAMPLE)
    assert page.get_attribute("#result-body", "data-status") not in FINISHED
    expect(page.locator("#progress")).to_be_visible()
    assert_no_violations(page, "a running run")

    held.release()
    wait_until_done(page)
    page.click("#sentence-0")
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 1")
    expect(page.locator("#run-ended")).not_to_be_empty()
    assert_no_violations(page, "a finished run with a sentence selected")
    # Dark mode's colours and the phone's layout are pages of their own to a reader.
    page.emulate_media(color_scheme="dark")
    assert_no_violations(page, "a finished run, dark")
    page.set_viewport_size(PHONE)
    assert_no_violations(page, "a finished run, dark, on a phone")
    page.emulate_media(color_scheme="light")

    page.goto("/about")
    assert_no_violations(page, "/about")

    # The check does see a violation: an image with no text alternative.
    page.evaluate("document.querySelector('main').append(document.createElement('img'))")
    with pytest.raises(AssertionError, match="image-alt"):
        assert_no_violations(page, "/about with an image without alt")
