"""The paste form in a real browser, as a person meets it on a laptop (1280×900) and a phone
(390×844): Verify in view, a refusal said where the eye and the focus are, documents given in
"The web" mode used, and files to choose again named."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_ui import RESULT_URL
from verification.models import Verification

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
TEXT = "The Eiffel Tower is in Paris, France. It was completed in 1889."


def in_view(page, selector: str) -> bool:
    """Wholly inside the viewport (to a pixel's rounding), as the page is scrolled now."""
    return page.eval_on_selector(
        selector,
        """el => { const r = el.getBoundingClientRect();
                   return r.top >= -1 && r.left >= -1 && r.bottom <= innerHeight + 1 && r.right <= innerWidth + 1; }""",
    )


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_verify_is_in_view_without_scrolling(page, world, viewport):
    page.set_viewport_size(viewport)
    page.goto("/")

    assert page.evaluate("scrollY") == 0
    assert in_view(page, "textarea[name=text]")
    assert in_view(page, "form.verify-form button[type=submit]"), page.eval_on_selector(
        "form.verify-form button[type=submit]", "el => el.getBoundingClientRect().bottom"
    )


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_a_refused_form_says_what_to_fix_at_its_top_with_the_focus_there(page, live_server, world, viewport):
    page.set_viewport_size(viewport)
    page.goto("/")
    page.click("summary:has-text('Advanced')")
    page.fill("input[name=top_k_results]", "0")
    page.click("button[type=submit]")

    summary = page.locator("#form-errors")
    expect(summary).to_be_focused()
    assert in_view(page, "#form-errors")
    expect(summary.locator("h2")).to_have_text("2 things to fix before verifying")
    links = summary.locator("a")
    expect(links).to_have_count(2)
    expect(links.nth(0)).to_have_text("Paste the text to verify: Paste some text to verify.")
    expect(links.nth(1)).to_contain_text("Web results per claim: ")
    # Each link leads to its field, whose own message sits next to it and describes it.
    links.nth(1).click()
    field = page.locator("#id_top_k_results")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_have_attribute("aria-describedby", "top_k_results-error")
    expect(page.locator(".field:has(#id_top_k_results) #top_k_results-error")).to_be_visible()
    assert in_view(page, "#id_top_k_results")
    assert page.url == live_server.url + "/#id_top_k_results"
    assert not Verification.objects.exists()


def test_a_web_address_given_in_web_mode_is_read_and_the_result_says_so(page, world, celery_worker):
    page.goto("/")
    page.fill("textarea[name=text]", TEXT)
    page.check("input[name=retrieval_mode][value=sparse]")
    expect(page.locator("input[name=evidence][value=web]")).to_be_checked()
    page.fill("textarea[name=sources]", world.sites[0].url + "/eiffel")
    page.click("button[type=submit]")

    page.wait_for_url(RESULT_URL)
    run = Verification.objects.get(pk=RESULT_URL.search(page.url).group(1))
    assert run.settings["evidence"] == "both" and run.settings["evidence_switched_from"] == "web"
    expect(page.locator("#evidence-mode")).to_have_text(
        "Both: the web and my documents — you chose “The web” and gave documents, so they were read as well"
    )
    # Let the run end before the test does: its tasks must not outlive the test's database.
    expect(page.locator("#result-body")).to_have_attribute("data-status", re.compile("done|failed"), timeout=60_000)
    # Read: the document is named by its page's title now (by its address until it was read).
    expect(page.locator("#documents")).to_have_text("Eiffel Tower - Wiki encyclopedia")
    assert list(run.sources.filter(origin="document").values_list("url", "status")) == [
        (world.sites[0].url + "/eiffel", "done")
    ]


def test_a_refused_file_names_the_files_to_choose_again(page, live_server, world, celery_worker):
    page.goto("/")
    page.fill("textarea[name=text]", TEXT)
    page.set_input_files(
        "input[name=files]",
        [
            {"name": "notes.md", "mimeType": "text/markdown", "buffer": b"# Notes\n\nIt was completed in 1889.\n"},
            {"name": "photo.pdf", "mimeType": "application/pdf", "buffer": b"\x89PNG\r\n\x1a\n" + b"\x00" * 64},
            {"name": "report.txt", "mimeType": "text/plain", "buffer": b"The Eiffel Tower is in Paris, France.\n"},
        ],
    )
    page.click("button[type=submit]")

    summary = page.locator("#form-errors")
    expect(summary).to_be_focused()
    refused = "Your documents: files: photo.pdf is not a PDF, HTML, Markdown or text file."
    expect(summary.locator("a")).to_have_text([refused])
    expect(summary.locator("#files-to-choose-again")).to_have_text(
        re.compile(r"^Choose again the files that were fine: notes\.md, report\.txt — ")
    )
    expect(page.locator("#files-note")).to_contain_text("Choose again: notes.md, report.txt")
    expect(page.locator("textarea[name=text]")).to_have_value(TEXT)
    assert not Verification.objects.exists()
