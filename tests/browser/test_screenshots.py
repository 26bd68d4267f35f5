"""The README's pictures (docs/screenshots/*.png), taken from real runs in real Chromium against
the fake outside world. Opt-in, since it rewrites files in the working tree:

    FACTSITE_SCREENSHOTS=1 bash scripts/test.sh tests/browser/test_screenshots.py

Look at every picture before committing it."""

import os

import pytest
from playwright.sync_api import expect

from tests.browser.test_citations_ui import answer as cited_answer
from tests.browser.test_citations_ui import web_news  # noqa: F401 (a fixture)
from tests.browser.test_languages_ui import ARABIC, arabic_site  # noqa: F401 (a fixture)
from tests.browser.test_snippets import TEXT as SNIPPET_TEXT
from tests.browser.test_ui import RUN_TIMEOUT, SAMPLE, submit, wait_until_done
from tests.conftest import ROOT
from verification.models import FINISHED, Verification
from verification.scoring import SNIPPET, SUPPORTED
from verification.selectors import evidence_records

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not os.environ.get("FACTSITE_SCREENSHOTS"), reason="set FACTSITE_SCREENSHOTS=1 to take them"),
]

FOLDER = ROOT / "docs" / "screenshots"
PHONE = {"width": 390, "height": 844}


def shoot(page, name: str, *, full_page: bool = True) -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    # The caret would blink into some pictures and not others.
    page.screenshot(path=str(FOLDER / name), full_page=full_page, caret="hide", animations="disabled")


def select_first_sentence(page) -> None:
    page.click("#sentence-0")
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 1")


@pytest.fixture
def clean_world(world):
    # The blog's page that refuses robots is not found, so a finished run shows results without a
    # problems banner (failed.png shows one).
    world.sites[2].pages["/blocked"].searchable = False
    return world


def test_the_form_a_running_run_and_a_finished_one(new_context, clean_world, held, celery_worker):
    page = new_context().new_page()
    page.goto("/")
    page.fill("textarea[name=text]", SAMPLE)
    shoot(page, "landing.png", full_page=False)

    submit(page, SAMPLE)
    # Everything but the held sentence is judged: partial scores and the progress both show.
    expect(page.locator("#progress .stages li").last).to_contain_text("judged")
    expect(page.locator("a.sentence.band-green, a.sentence.band-orange, a.sentence.band-red").first).to_be_visible(
        timeout=RUN_TIMEOUT
    )
    assert page.get_attribute("#result-body", "data-status") not in FINISHED
    shoot(page, "running.png")

    held.release()
    wait_until_done(page)
    select_first_sentence(page)
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, "result.png")


def test_a_page_judged_from_its_snippet(new_context, world, celery_worker):
    # The sample world as it is: the blog's "/blocked" page answers 403 and its search snippet is
    # judged in its place. Its own run (the others hide that page); a text the snippet supports
    # (test_snippets.py's), since on the sample it addresses no claim.
    page = new_context().new_page()
    verification_id = submit(page, SNIPPET_TEXT)
    wait_until_done(page)
    records = evidence_records(Verification.objects.get(pk=verification_id))
    snippet = next(r for r in records if r.kind == SNIPPET)
    assert snippet.verdict == SUPPORTED
    page.click(f"#sentence-{snippet.sentence_index}")
    item = page.locator(f"#evidence-{snippet.id}")
    expect(item.locator(".snippet-tag")).to_have_text("snippet only")
    expect(page.locator(f"#unread-{snippet.id}")).to_contain_text("HTTP 403")
    expect(page.locator("#include-kind-snippet")).to_be_visible()
    # The evidence panel, at most the window's height, scrolls inside, and a full-page picture shows
    # it scrolled to the top, above this item: a window tall enough shows the panel whole.
    panel = page.locator("#evidence")
    page.set_viewport_size({"width": page.viewport_size["width"], "height": panel.evaluate("e => e.scrollHeight") + 48})
    assert panel.evaluate("e => e.scrollHeight <= e.clientHeight")
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, "snippet.png")


def test_a_failed_run(page, held, world, celery_worker):
    world.serper.fail_status = 503
    submit(page, SAMPLE)
    held.release()
    expect(page.locator("#result-body")).to_have_attribute("data-status", "failed", timeout=RUN_TIMEOUT)
    expect(page.locator("#problems")).to_be_visible()
    shoot(page, "failed.png")


def test_a_run_on_the_readers_documents(page, clean_world, celery_worker):
    page.goto("/")
    page.fill("textarea[name=text]", SAMPLE)
    page.check("input[name=evidence][value=documents]")
    sites = clean_world.sites
    page.fill("textarea[name=sources]", f"{sites[0].url}/eiffel\n{sites[1].url}/tower-story\n{sites[2].url}/trip")
    page.check("input[name=retrieval_mode][value=sparse]")
    page.click("button[type=submit]")
    wait_until_done(page)
    select_first_sentence(page)
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, "documents.png")


def test_the_phone_view(new_context, clean_world, celery_worker):
    page = new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True).new_page()
    submit(page, SAMPLE)
    wait_until_done(page)
    shoot(page, "phone.png", full_page=False)


def test_my_checks_and_a_printed_report(new_context, clean_world, celery_worker):
    page = new_context().new_page()
    submit(page, "Paris is the capital of France. The Seine flows through it.")
    first = page.url
    submit(page, SAMPLE)
    wait_until_done(page)
    page.goto("/mine")
    expect(page.locator("#check-list tbody tr")).to_have_count(2)
    shoot(page, "my-checks.png")

    page.goto(first)
    wait_until_done(page)
    page.emulate_media(media="print")
    expect(page.locator("#print-report")).to_be_visible()
    shoot(page, "printed-report.png")


@pytest.mark.usefixtures("web_news")
def test_an_answer_with_citations_on_a_laptop_and_a_phone(new_context, world, celery_worker, cited_site):
    page = new_context().new_page()
    submit(page, cited_answer(cited_site))
    wait_until_done(page)
    page.locator("#citation-1 summary").click()
    expect(page.locator("#citation-1 .citation-panel")).to_be_visible()
    shoot(page, "citations.png", full_page=False)

    phone = new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True).new_page()
    phone.goto(page.url)
    shoot(phone, "citations-phone.png", full_page=False)


@pytest.mark.usefixtures("arabic_site")
def test_an_arabic_answer(new_context, world, celery_worker):
    page = new_context().new_page()
    submit(page, ARABIC)
    wait_until_done(page)
    select_first_sentence(page)
    page.evaluate("window.scrollTo(0, 0)")
    shoot(page, "arabic.png", full_page=False)
