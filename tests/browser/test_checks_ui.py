"""Everyday use in a real browser (issue 17): two browsers see only their own checks; deleting one
removes its rows and uploads and its link then says so; cancel stops the spending; an edit of one
sentence shows exactly that sentence as changed."""

import time

import pytest
from playwright.sync_api import expect

from tests.browser.test_ui import RESULT_URL, SAMPLE, submit, wait_until_done
from verification.models import Claim, Evidence, Sentence, Source, Upload, Verification

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOTES = b"# Notes\n\nThe Eiffel Tower is a wrought-iron lattice tower in Paris, France.\n"


def listed(page) -> list[str]:
    page.goto("/mine")
    return page.eval_on_selector_all("#check-list tbody tr", "rows => rows.map(r => r.dataset.id)")


def rows_of(run_id: str) -> dict[str, int]:
    return {
        "runs": Verification.objects.filter(pk=run_id).count(),
        "sentences": Sentence.objects.filter(verification_id=run_id).count(),
        "claims": Claim.objects.filter(sentence__verification_id=run_id).count(),
        "sources": Source.objects.filter(verification_id=run_id).count(),
        "evidence": Evidence.objects.filter(claim__sentence__verification_id=run_id).count(),
        "uploads": Upload.objects.filter(source__verification_id=run_id).count(),
    }


def test_two_browsers_see_only_their_own_checks_and_deleting_one_removes_everything(
    new_context, world, celery_worker, tmp_path
):
    alice, bob = new_context().new_page(), new_context().new_page()
    notes = tmp_path / "notes.md"
    notes.write_bytes(NOTES)
    alice.goto("/")
    alice.fill("textarea[name=text]", SAMPLE)
    alice.check("input[name=retrieval_mode][value=sparse]")
    alice.check("input[name=evidence][value=both]")
    alice.set_input_files("input[name=files]", str(notes))
    alice.click("button[type=submit]")
    alice.wait_for_url(RESULT_URL)
    alices = RESULT_URL.search(alice.url).group(1)
    wait_until_done(alice)
    bobs = submit(bob, "Paris is the capital of France.")

    assert listed(alice) == [alices]
    assert listed(bob) == [bobs]
    before = rows_of(alices)
    assert before["uploads"] == 1 and before["evidence"] > 0

    alice.goto(f"/v/{alices}")
    alice.get_by_role("link", name="Delete", exact=True).click()
    alice.get_by_role("button", name="Delete it").click()
    alice.wait_for_url("**/mine?done=deleted")
    expect(alice.locator("#check-deleted")).to_be_visible()

    assert rows_of(alices) == dict.fromkeys(before, 0)
    assert rows_of(bobs)["runs"] == 1  # bob's run is untouched
    gone = bob.goto(f"/v/{alices}")
    assert gone.status == 404
    expect(bob.locator("#deleted")).to_contain_text("deleted by the person who started it")


def test_cancel_stops_the_spending_and_keeps_what_was_found(page, world, celery_worker):
    world.llm.held_words = ("1889",)  # the second sentence's decomposition waits in the model
    run_id = submit(page, SAMPLE)
    deadline = time.monotonic() + 30
    while world.llm.held == 0:
        assert time.monotonic() < deadline, "nothing reached the held sentence"
        time.sleep(0.05)

    page.get_by_role("button", name="Cancel this verification").click()
    expect(page.locator("#result-body")).to_have_attribute("data-status", "cancelled")
    llm_calls, searches = len(world.llm.requests), len(world.serper.queries)
    world.llm.release()
    time.sleep(3)  # what was queued or in flight has had its chance to run

    assert len(world.llm.requests) == llm_calls
    assert len(world.serper.queries) == searches
    # The held answer came back after the cancel: its claims are kept, their searches never sent.
    assert Claim.objects.filter(sentence__verification_id=run_id).exists()
    assert not Claim.objects.filter(sentence__verification_id=run_id, search_results__isnull=False).exists()
    page.reload()
    expect(page.locator("#cancelled")).to_be_visible()
    expect(page.locator("#cancel-run")).to_have_count(0)
    assert Verification.objects.get(pk=run_id).status == "cancelled"


def test_an_edit_of_one_sentence_shows_exactly_that_sentence_as_changed(page, world, celery_worker):
    old_id = submit(page, SAMPLE)
    wait_until_done(page)
    assert "330 metres" in SAMPLE

    page.get_by_role("link", name="Edit text").click()
    page.wait_for_url(f"**/?edit={old_id}*")
    page.fill("textarea[name=text]", SAMPLE.replace("330 metres", "300 metres"))
    page.click("button[type=submit]")
    page.wait_for_url(RESULT_URL)
    wait_until_done(page)

    changes = page.locator("#changes")
    expect(changes.locator("li.change-reworded")).to_have_count(1)
    expect(changes.locator("li.change-reworded")).to_contain_text("It is 300 metres tall")
    expect(changes.locator("li.change-added, li.change-removed")).to_have_count(0)
    for moved in changes.locator("li.change-moved").all():
        expect(moved).to_contain_text("300 metres")
    changes.get_by_role("link", name="the earlier version").click()
    page.wait_for_url(f"**/v/{old_id}")
    expect(page.locator("#edited-into")).to_be_visible()
