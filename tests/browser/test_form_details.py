"""The paste form (issue 27.11), in real Chromium: the character count was a live region rewritten
at every keystroke (a screen reader read it out again and again); Edit text kept the earlier
run's documents as one line of names, the one that could not be read included, none removable."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_ui import RESULT_URL, SAMPLE, wait_until_done
from verification.models import Origin, Source

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Everything a screen reader is told of on its own: what every live region says, each time it changes.
LISTEN = """() => {
  window.__told = [];
  for (const region of document.querySelectorAll("[aria-live], [role=status], [role=alert]")) {
    new MutationObserver(() => window.__told.push(region.textContent.trim()))
      .observe(region, {childList: true, characterData: true, subtree: true});
  }
}"""


def test_the_character_count_is_read_when_asked_and_only_crossing_the_limit_is_announced(page, live_server):
    page.goto("/")
    count = page.locator("#text-count")
    expect(page.locator("textarea[name=text]")).to_have_attribute("aria-describedby", "text-count")
    assert count.evaluate("el => el.closest('[aria-live], [role=status], [role=alert]')") is None, (
        "the count is a live region: it is read out at every keystroke"
    )
    page.evaluate(LISTEN)

    page.click("textarea[name=text]")
    page.keyboard.type("The Eiffel Tower")
    expect(count).to_have_text("16 / 20,000 characters")
    assert page.evaluate("window.__told") == [], "typing was announced"

    page.fill("textarea[name=text]", "x" * 20_001)
    expect(count).to_contain_text("1 over the limit")
    alert = page.locator("#text-count-alert")
    expect(alert).to_have_text("The text is now over the limit of 20,000 characters.")
    page.keyboard.press("End")
    page.keyboard.type("yy")
    page.keyboard.press("Backspace")
    page.keyboard.press("Backspace")
    page.keyboard.press("Backspace")
    expect(count).to_have_text("20,000 / 20,000 characters")
    expect(alert).to_have_text("The text is within the limit of 20,000 characters again.")
    assert page.evaluate("window.__told") == [
        "The text is now over the limit of 20,000 characters.",
        "The text is within the limit of 20,000 characters again.",
    ]


NOTES = b"# Notes\n\nThe Eiffel Tower is a wrought-iron lattice tower in Paris, France.\n"


def test_edit_text_lists_the_earlier_documents_one_by_one_to_keep_or_leave_out(page, world, celery_worker, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_bytes(NOTES)
    wiki, refused = world.sites[0].url + "/eiffel", world.sites[2].url + "/blocked"
    page.goto("/")
    page.fill("textarea[name=text]", SAMPLE)
    page.check("input[name=retrieval_mode][value=sparse]")
    page.check("input[name=evidence][value=documents]")
    page.fill("textarea[name=sources]", f"{wiki}\n{refused}")
    page.set_input_files("input[name=files]", str(notes))
    page.click("button[type=submit]")
    page.wait_for_url(RESULT_URL)
    expect(page.locator("#result-body")).to_have_attribute("data-status", re.compile("done|failed"), timeout=60_000)
    assert Source.objects.get(url=refused).status == "failed"

    page.get_by_role("link", name="Edit text").click()
    kept = page.locator("#kept-documents")
    expect(kept.locator("input[name=keep_document]")).to_have_count(3)
    item = {name: kept.locator("li", has_text=name) for name in ("Wiki encyclopedia", "notes.md", refused)}
    expect(item["Wiki encyclopedia"].locator("input")).to_be_checked()  # a page read is named by its title
    expect(item["notes.md"].locator("input")).to_be_checked()
    # The one that could not be read says so, and is left out unless ticked.
    expect(item[refused].locator("input")).not_to_be_checked()
    expect(item[refused]).to_contain_text("could not be read")

    item["notes.md"].locator("input").uncheck()
    page.click("button[type=submit]")
    page.wait_for_url(RESULT_URL)
    edited = RESULT_URL.search(page.url).group(1)
    wait_until_done(page)

    documents = Source.objects.filter(verification_id=edited, origin=Origin.DOCUMENT)
    assert list(documents.values_list("url", flat=True)) == [wiki]
    expect(page.locator("#documents li")).to_have_count(1)
