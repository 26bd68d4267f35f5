"""What the scores look like in a real browser (issue 18): the source-type bars keep their width
beside a long breakdown line, a long title keeps its checkbox on its line, and a contradicted
sentence differs from an unconfirmed one by more than colour. The runs are built with the ORM
(no worker needed: nothing runs), on phone and desktop viewports."""

import os

import pytest
from playwright.sync_api import expect

from tests.conftest import ROOT
from tests.test_result_words import evidence
from tests.test_views import add_claim, add_evidence, make_run
from verification.models import Status

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = [
    pytest.param({"width": 1280, "height": 900}, id="desktop"),
    pytest.param({"width": 390, "height": 844}, id="phone"),
]
LONG_TITLE = "A very long page title about the Eiffel Tower " * 6
# Like tests/browser/test_ui.py: pictures only when asked for.
SCREENSHOTS = os.environ.get("FACTSITE_SCREENSHOTS", "")


def long_breakdown_run():
    """Every kind of count in the breakdown line (so it is as long as it gets), five source types,
    and one evidence item with a long title."""
    run = make_run("The Eiffel Tower is in Paris.", "It is made of steel.", "It opened in 1889.")
    paris = add_claim(run, 0, "The Eiffel Tower is in Paris.")
    for source_type in ("news", "blog", "wiki", "government_website", "scientific_medical_article"):
        evidence(paris, "2S 1N 3I", source_type=source_type)
    add_evidence(paris, "news", "supported", title=LONG_TITLE)
    add_evidence(paris, "your_document", "irrelevant")
    add_evidence(paris, "news", "", status=Status.FAILED)
    evidence(add_claim(run, 1, "The Eiffel Tower is made of steel."), "1N 2I")
    evidence(add_claim(run, 2, "The Eiffel Tower opened in 1889."), "3I")
    return run


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_source_type_bars_keep_their_width_beside_a_long_breakdown(new_context, viewport):
    run = long_breakdown_run()
    page = new_context().new_page()
    page.set_viewport_size(viewport)

    page.goto(f"/v/{run.pk}")

    breakdown = page.locator("#overall-breakdown").bounding_box()
    assert breakdown["width"] > 200, "the breakdown line is not long enough to test anything"
    widths = page.eval_on_selector_all("meter.bar", "bars => bars.map(b => b.getBoundingClientRect().width)")
    assert len(widths) == 6  # your documents are a type too
    # 3rem at the 16 px root size: the least the CSS lets a bar have; it had 0 px.
    assert min(widths) >= 48, widths
    percents = page.eval_on_selector_all(".type-percent", "els => els.map(e => e.getBoundingClientRect())")
    for bar, percent in zip(page.locator("meter.bar").all(), percents, strict=True):
        box = bar.bounding_box()
        assert abs((box["y"] + box["height"] / 2) - (percent["y"] + percent["height"] / 2)) < 12, "% not beside its bar"
    if SCREENSHOTS:
        (ROOT / SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ROOT / SCREENSHOTS / f"scores-{viewport['width']}.png"), full_page=True)


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_long_title_stays_on_the_line_of_its_checkbox(new_context, viewport):
    run = long_breakdown_run()
    page = new_context().new_page()
    page.set_viewport_size(viewport)

    page.goto(f"/v/{run.pk}?sentence=0")

    item = page.locator(".evidence", has=page.locator(".source-title", has_text=LONG_TITLE.strip()))
    checkbox = item.locator("input[name=evidence]").bounding_box()
    title = item.locator(".source-title").evaluate(
        # The first line box of the title: where its text starts.
        "t => { const r = document.createRange(); r.selectNodeContents(t); const b = r.getClientRects()[0];"
        " return {x: b.x, y: b.y, height: b.height}; }"
    )
    assert title["y"] < checkbox["y"] + checkbox["height"] and checkbox["y"] < title["y"] + title["height"], (
        checkbox,
        title,
    )
    assert title["x"] > checkbox["x"], "the title starts beside the checkbox, not under it"


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_contradicted_unconfirmed_and_supported_differ_without_colour(new_context, viewport):
    run = make_run("It is made of steel.", "It opened in 1889.", "It is in Paris.")
    evidence(add_claim(run, 0, "The Eiffel Tower is made of steel."), "1N 2I")
    evidence(add_claim(run, 1, "The Eiffel Tower opened in 1889."), "3I")
    evidence(add_claim(run, 2, "The Eiffel Tower is in Paris."), "1S 2I")
    page = new_context().new_page()
    page.set_viewport_size(viewport)

    page.goto(f"/v/{run.pk}")

    def looks(index: int) -> dict:
        # Everything but colour: the shape before the score, the underline, the ground's pattern.
        return page.locator(f"#sentence-{index}").evaluate(
            """a => { const s = getComputedStyle(a);
            const badge = getComputedStyle(a.querySelector('.score-badge'), '::before');
            return {icon: badge.content, underline: s.borderBottomStyle + ' ' + s.borderBottomWidth,
                    pattern: s.backgroundImage, band: a.dataset.band}; }"""
        )

    contradicted, unconfirmed, supported = looks(0), looks(1), looks(2)
    assert contradicted["band"] == unconfirmed["band"] == "red"  # the same colour: only the rest tells them apart
    assert supported["band"] == "orange"
    assert len({contradicted["icon"], unconfirmed["icon"], supported["icon"]}) == 3, (contradicted, unconfirmed)
    assert all(look["icon"].startswith('"') for look in (contradicted, unconfirmed, supported))  # drawn
    assert contradicted["underline"] != unconfirmed["underline"] != supported["underline"]
    assert contradicted["underline"] != supported["underline"]
    assert unconfirmed["pattern"] != "none" and contradicted["pattern"] == "none"
    # The link's accessible name carries the outcome and the score as words.
    names = [page.locator(f"#sentence-{i}").get_attribute("aria-label") for i in range(3)]
    assert names == [
        "It is made of steel. (contradicted by 1 of 3 sources read, score 0%)",
        "It opened in 1889. (unconfirmed: none of 3 sources read addresses it, score 0%)",
        "It is in Paris. (supported by 1 of 3 sources read, score 33%)",
    ]
    # As the browser computes them (what a screen reader reads), the notes' links included.
    expect(page.get_by_role("link", name=names[0], exact=True)).to_have_count(1)
    expect(
        page.get_by_role(
            "link",
            name="S2 (sentence 2, “It opened in 1889.”): unconfirmed: none of 3 sources read addresses it, score 0%",
        )
    ).to_have_count(1)
    expect(page.get_by_role("link", name="S1", exact=True)).to_have_count(0)


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_100_percent_headline_fits_its_box_beside_a_long_breakdown(new_context, viewport):
    run = make_run("The Eiffel Tower is in Paris.")
    claim = add_claim(run, 0, "The Eiffel Tower is in Paris.")
    evidence(claim, "3S")
    evidence(claim, "7I", source_type="your_document")
    page = new_context().new_page()
    page.set_viewport_size(viewport)

    page.goto(f"/v/{run.pk}")

    score = page.locator("#overall-score")
    assert score.inner_text() == "100%"
    assert score.evaluate("e => e.scrollWidth <= e.clientWidth"), "the score spills out of its box"
