"""The checked text stays where the reader is reading it (issue 38.7), from the page's first
render to the run's end, for a web run and a trail run, on a phone and a laptop: it moved 299 px
down on a phone during a web run as notices appeared above it, and at the end +61 px (web) and
−122 px (trail) on a laptop. Real Chromium, live server, the real worker and the fake world,
slowed a little so that the page sees the run's middle and not only its end."""

import pytest
from playwright.sync_api import expect

from tests.browser.test_trails_ui import fill_builder
from tests.browser.test_ui import RESULT_URL, SAMPLE, submit, wait_until_done

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 360, "height": 740}
LAPTOP = {"width": 1280, "height": 900}
VIEWPORTS = pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
# Subpixel rounding and nothing more: a line of text is 20 px or more.
MOST_PX = 4

# What is measured to tell what moved the text, and whose words are shown.
ABOVE = "#result-body > *, .live-notice, .summary > *, .overall-text > *, .trail-headline, .verdict-counts, .run-facts"
SAID = "[id^=overall], .trail-headline, .verdict-counts"
# In every document of the context, from its parsing on: the first sentence's top on the page
# (not on screen: the page does not scroll in these tests), taken after every change to the page
# (the observer runs after each swap, once the DOM is whole, before anything is painted), with
# what stood above the text at the time, to say what moved it.
RECORD_TOPS = """(() => {
  const tops = window.__tops = [];
  const words = (el) => el.textContent.replace(/\\s+/g, " ").trim();
  const above = () => [...document.querySelectorAll(ABOVE)]
    .filter((el) => el.offsetParent !== null)
    .map((el) => {
      const box = el.getBoundingClientRect();
      const said = el.matches(SAID) ? ` [${words(el)}]` : "";
      return `${el.id || el.className} ${Math.round(box.width)}x${Math.round(box.height)}${said}`;
    });
  const sample = () => {
    const sentence = document.getElementById("sentence-0");
    if (!sentence) return;
    const top = sentence.getBoundingClientRect().top + window.scrollY;
    const last = tops[tops.length - 1];
    if (last && Math.abs(last.top - top) < 0.5) return;
    tops.push({top, status: document.getElementById("result-body").dataset.status, above: above().join("; ")});
  };
  document.addEventListener("DOMContentLoaded", () => {
    sample();
    const everything = {subtree: true, childList: true, attributes: true, characterData: true};
    new MutationObserver(sample).observe(document.body, everything);
  });
})()"""
RECORD_TOPS = RECORD_TOPS.replace("ABOVE", repr(ABOVE)).replace("SAID", repr(SAID))


@pytest.fixture
def slow_world(world):
    """Each model call, search and page a little slow: the run lasts several polls."""
    world.llm.latency = 0.3
    world.serper.latency = 0.3
    for site in world.sites:
        site.latency = 0.3
    return world


def watched_page(new_context, viewport):
    page = new_context(viewport=viewport).new_page()
    page.add_init_script(RECORD_TOPS)
    return page


def assert_the_text_stayed(page) -> None:
    """Every top recorded since the result page's first render within MOST_PX of the first."""
    # The last poll's answer is settled: the end is announced (factsite.js, after the settle).
    expect(page.locator("#run-ended")).not_to_be_empty()
    tops = page.evaluate("window.__tops")
    assert tops, "the first sentence was never on the page"
    first = tops[0]["top"]
    moved = max(abs(row["top"] - first) for row in tops)
    report = "\n".join(f"{row['top']:.1f} ({row['status']}): {row['above']}" for row in tops)
    assert moved <= MOST_PX, f"the text moved by up to {moved:.0f} px:\n{report}"


@VIEWPORTS
def test_the_text_of_a_web_run_stays_in_place_from_first_render_to_end(
    new_context, slow_world, celery_worker, viewport
):
    page = watched_page(new_context, viewport)
    submit(page, SAMPLE)
    wait_until_done(page)
    assert_the_text_stayed(page)


@VIEWPORTS
def test_the_text_of_a_trail_run_stays_in_place_from_first_render_to_end(
    new_context, slow_world, celery_worker, viewport
):
    page = watched_page(new_context, viewport)
    fill_builder(page)
    page.get_by_role("button", name="Check the trail").click()
    page.wait_for_url(RESULT_URL)
    wait_until_done(page)
    assert_the_text_stayed(page)
