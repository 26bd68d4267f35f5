"""The text's own citations in a real browser (issue 34), on the real worker: an AI-search answer
with a planted wrong citation (its cited page says the opposite), one whose page says something
else and one that is not there. The badges and the summary line show each outcome in words; a
click or Enter opens what the source said; one tick leaves cited sources out, every score
recomputed live and kept in the link; axe finds nothing wrong with a badge open."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_accessibility import assert_no_violations
from tests.browser.test_ui import assert_page_shows, submit, wait_until_done
from tests.fakes import FakePage, FakeSite
from verification.models import Verification
from verification.scoring import CITED, compute_scores
from verification.selectors import evidence_records

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def web_news(world):
    """A page the web search finds for the answer's claims, so the scores rest on more than what it cites."""
    site = FakeSite(
        pages={
            "/riverton-tram": FakePage(
                "Riverton tram news",
                "The council of Riverton approved a tram line in 2024. "
                "The tram line runs along the Riverton boulevard.",
            )
        }
    ).start()
    world.serper.sites.append(site)
    yield site
    site.stop()


def answer(site) -> str:
    return (
        "Riverton approved a tram line in 2024 [1]. The Riverton tram line will cost 40 million dollars [2]. "
        "The tram line runs along the Riverton boulevard [3]. Riverton ordered twelve tram cars [4].\n\n"
        "Sources:\n"
        f"[1] Riverton council minutes {site.url}/minutes\n"
        f"[2] City paper {site.url}/cost\n"
        f"[3] City paper {site.url}/parks\n"
        f"[4] Tram orders {site.url}/gone\n"
    )


def test_badges_and_the_summary_show_each_citation_and_one_tick_leaves_cited_sources_out(
    page, world, celery_worker, cited_site, web_news
):
    verification_id = submit(page, answer(cited_site))
    # The summary is there from the first poll, while the run goes on.
    expect(page.locator("#citation-summary")).to_contain_text("4 citations")
    wait_until_done(page)

    expect(page.locator("#citation-summary")).to_have_text(
        "4 citations: 1 supports its sentence, 1 contradicts it, 1 does not say it, 1 does not exist"
    )
    words = page.locator(".text .citation-badge")
    expect(words).to_have_text(
        [
            "Citation [1] supports",
            "Citation [2] contradicts",
            "Citation [3] does not say this",
            "Citation [4] does not exist",
        ]
    )
    # The markers are badges, not words of the sentences.
    expect(page.locator("#sentence-0")).not_to_contain_text("[1]")

    # The planted wrong citation: a click shows what its page says, and why it contradicts the sentence.
    wrong = page.locator("#citation-1")
    expect(wrong).to_have_attribute("data-outcome", "contradicts")
    panel = wrong.locator(".citation-panel")
    expect(panel).to_be_hidden()
    box = page.locator("#sentence-2").bounding_box()
    assert box is not None
    wrong.locator("summary").click()
    expect(panel).to_be_visible()
    expect(panel.locator(".citation-said")).to_have_text("[2] contradicts its sentence.")
    expect(panel.locator("blockquote.passage")).to_contain_text("will not cost 40 million dollars")
    expect(panel.locator(".citation-source a")).to_have_attribute("href", f"{cited_site.url}/cost")
    # By keyboard too: Enter on the 404's badge says why.
    page.focus("#citation-3 summary")
    page.keyboard.press("Enter")
    expect(page.locator("#citation-3 .citation-said")).to_have_text("[4] does not exist: the page answered HTTP 404.")
    expect(panel).to_be_hidden()  # one badge open at a time: their panels would lie over each other
    # Opening a badge moves no text: its panel lies over what follows.
    assert page.locator("#sentence-2").bounding_box() == box
    assert_no_violations(page, "a result with its citations' badges open")
    page.emulate_media(color_scheme="dark")
    assert_no_violations(page, "a result with its citations' badges open, dark")
    page.emulate_media(color_scheme="light")
    # Escape closes it, the focus back on its badge.
    page.focus("#citation-3 .citation-panel a")
    page.keyboard.press("Escape")
    expect(page.locator("#citation-3 .citation-panel")).to_be_hidden()
    expect(page.locator("#citation-3 summary")).to_be_focused()

    # The link in the panel shows the passage among its sentence's evidence, marked as cited.
    wrong.locator("summary").click()
    wrong.locator("a.citation-evidence").click()
    page.wait_for_url(re.compile(r"sentence=1"))
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 2")
    expect(page.locator(".evidence .cited-tag").first).to_have_text("cited by the text")

    records = evidence_records(Verification.objects.get(pk=verification_id))
    assert any(record.kind == CITED for record in records) and any(record.kind == "" for record in records)
    everything = compute_scores(records)
    without = compute_scores(records, excluded_kinds={CITED})
    assert (without.overall.supported, without.overall.total) != (
        everything.overall.supported,
        everything.overall.total,
    )
    assert_page_shows(page, everything)

    expect(page.locator("#include-kind-cited")).to_be_checked()
    page.uncheck("#include-kind-cited")
    page.wait_for_url(re.compile(r"exclude_kinds=cited"))
    assert_page_shows(page, without)
    expect(page.locator("#exclusions")).to_contain_text("Left out: sources the text cites")
    # The badges still say what each cited source said: the tick changes what counts, not what was found.
    expect(page.locator("#citation-1")).to_have_attribute("data-outcome", "contradicts")

    page.reload()  # the link keeps the choice
    expect(page.locator("#include-kind-cited")).not_to_be_checked()
    assert_page_shows(page, without)

    page.check("#include-kind-cited")
    expect(page.locator("#exclusions")).to_have_count(0)
    assert_page_shows(page, everything)


def test_a_badge_inside_a_sentence_stands_between_its_words_and_either_side_selects_the_sentence(
    page, world, celery_worker, cited_site
):
    """A marker in the middle of a sentence: its badge stands between the words it stood between,
    a click on the words before it or after it selects the sentence, a click on the badge opens its
    panel and selects nothing; the keyboard meets the sentence once, then its badge."""
    submit(
        page,
        "Riverton approved a tram line [1] in 2024. The Riverton tram line will cost 40 million dollars [2].\n\n"
        "Sources:\n"
        f"[1] Riverton council minutes {cited_site.url}/minutes\n"
        f"[2] City paper {cited_site.url}/cost\n",
    )
    wait_until_done(page)
    before = page.locator("#sentence-0")
    badge = page.locator("#citation-0")
    after = page.locator("a.sentence-part[data-index='0']")
    expect(before).to_have_text("Riverton approved a tram line ")
    expect(after).to_have_count(1)
    expect(after).to_contain_text("in 2024.")
    expect(badge.locator("summary")).to_have_text("Citation [1] supports")
    # On one line, in the order of the text: the words, the badge, the words.
    words, mark, rest = (locator.bounding_box() for locator in (before, badge.locator("summary"), after))
    assert words and mark and rest
    assert words["x"] + words["width"] <= mark["x"] + 1 and mark["x"] + mark["width"] <= rest["x"] + 1
    assert abs((words["y"] + words["height"] / 2) - (mark["y"] + mark["height"] / 2)) < 12
    assert abs(words["y"] - rest["y"]) < 2

    # The words after the badge select the sentence, shown selected in both its pieces.
    after.click()
    page.wait_for_url(re.compile(r"sentence=0"))
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 1")
    expect(before).to_have_class(re.compile(r"\bselected\b"))
    expect(after).to_have_class(re.compile(r"\bselected\b"))
    # Another sentence, then the words before the badge: the first sentence again.
    page.locator("#sentence-1").click()
    page.wait_for_url(re.compile(r"sentence=1"))
    expect(after).not_to_have_class(re.compile(r"\bselected\b"))
    before.click()
    page.wait_for_url(re.compile(r"sentence=0"))
    expect(page.locator("#evidence-heading")).to_have_text("Sentence 1")
    expect(after).to_have_class(re.compile(r"\bselected\b"))

    # The badge opens its panel and selects nothing.
    panel = badge.locator(".citation-panel")
    expect(panel).to_be_hidden()
    badge.locator("summary").click()
    expect(panel).to_be_visible()
    expect(panel.locator(".citation-said")).to_have_text("[1] supports its sentence.")
    assert "sentence=0" in page.url
    expect(before).to_have_class(re.compile(r"\bselected\b"))
    assert_no_violations(page, "a sentence split around its citation's open badge")

    # The keyboard: Tab from the sentence goes to its badge (the other piece is no tab stop), Enter
    # on the sentence selects it, its name the whole sentence.
    badge.locator("summary").click()
    expect(panel).to_be_hidden()
    page.locator("#sentence-1").click()
    page.wait_for_url(re.compile(r"sentence=1"))
    page.focus("#sentence-0")
    expect(before).to_have_attribute("aria-label", re.compile(r"^Riverton approved a tram line in 2024\. \("))
    page.keyboard.press("Tab")
    expect(badge.locator("summary")).to_be_focused()
    page.focus("#sentence-0")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"sentence=0"))
    expect(after).to_have_class(re.compile(r"\bselected\b"))
