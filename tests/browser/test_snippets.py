"""A page that refuses to be read, in a real browser: its search snippet is judged in its place,
shown marked "snippet only" with the reason, and one tick leaves every snippet out of the scores,
recomputed live and kept in the link."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_ui import assert_page_shows, submit, wait_until_done
from verification.models import Verification
from verification.scoring import SNIPPET, SUPPORTED, compute_scores
from verification.selectors import evidence_records

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The sample world's blog answers 403 to its "/blocked" page, whose snippet the search engine
# shows as "The Eiffel Tower Paris secrets.": enough for the fake judge to support this claim.
TEXT = "The Eiffel Tower is in Paris, France."


def test_a_refused_pages_snippet_is_marked_and_one_tick_leaves_snippets_out(page, world, celery_worker):
    verification_id = submit(page, TEXT)
    wait_until_done(page)
    records = evidence_records(Verification.objects.get(pk=verification_id))
    snippet = next(r for r in records if r.kind == SNIPPET)
    assert snippet.verdict == SUPPORTED and any(r.kind == "" for r in records)
    everything = compute_scores(records)
    assert_page_shows(page, everything)
    # The refused page was read from its snippet: no failure, so no red "Parts of this verification failed".
    notice = page.locator("#problems")
    expect(notice).to_have_attribute("role", "status")
    expect(notice).not_to_have_class(re.compile(r"\bnotice-error\b"))
    expect(notice).to_contain_text("1 page could not be read, and its search snippet was judged in its place")

    page.click(f"#sentence-{snippet.sentence_index}")
    item = page.locator(f"#evidence-{snippet.id}")
    expect(item.locator(".snippet-tag")).to_have_text("snippet only")
    expect(page.locator(f"#unread-{snippet.id}")).to_have_text(
        "The page could not be read (HTTP 403): judged from the search result's title and snippet."
    )
    expect(item.locator(".passage")).to_have_text("The Eiffel Tower Paris secrets.")
    expect(item.locator(".verdict")).to_have_text("supports")
    expect(page.locator("#sentence-outcome")).to_contain_text("judged from its search snippet only")
    expect(page.locator("#include-kind-snippet")).to_be_checked()

    page.uncheck("#include-kind-snippet")
    page.wait_for_url(re.compile(r"exclude_kinds=snippet"))
    without = compute_scores(records, excluded_kinds={SNIPPET})
    assert without.overall.supported == everything.overall.supported - 1
    assert_page_shows(page, without)
    expect(item).to_have_class(re.compile(r"\bexcluded\b"))
    expect(page.locator(f"#include-evidence-{snippet.id}")).to_be_disabled()
    expect(page.locator("#exclusions")).to_contain_text("Left out: search snippets")

    page.reload()  # the link keeps the view
    expect(page.locator("#include-kind-snippet")).not_to_be_checked()
    assert_page_shows(page, without)

    page.check("#include-kind-snippet")
    expect(page.locator("#exclusions")).to_have_count(0)
    assert_page_shows(page, everything)
