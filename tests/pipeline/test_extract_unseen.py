"""What the page hides or wraps around its article is not read as what it says (extract_unseen.py), on
pages of real size (60–80 KB: a site's menus, scripts, styles, footer tables) shaped like news sites: a
paywalled or collapsed block holding most of the article's text, a page hidden whole until a script has
run, a video player's menus and lists of teasers to other stories."""

import json

import pytest

from verification.pipeline.extract import parse_html, read_html
from verification.pipeline.extract_unseen import remove_unseen

SECTIONS = (
    "World US Politics Business Markets Technology Science Health Climate Sports Football Basketball Tennis "
    "Culture Books Music Film Television Travel Food Style Opinion Letters Obituaries Weather Podcasts Video"
).split()


def site_chrome(site: str) -> tuple[str, str, str]:
    """(head, header, footer) of a news site: its styles and scripts (most of a page's bytes), a menu
    of its sections whose subsections open on hover, a cookie dialog, and a footer of link tables."""
    state = {
        "site": site,
        "sections": [
            {"name": s, "path": f"/{s.lower()}", "subsections": [f"{s} {i}" for i in range(12)]} for s in SECTIONS
        ],
        "ads": [{"slot": f"ad-{i}", "sizes": [[300, 250], [728, 90]], "targeting": {"pos": i}} for i in range(300)],
    }
    head = (
        "<meta charset='utf-8'><meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        "<style>"
        + "".join(f".s-{s.lower()} a {{ color: #{i:03x}; padding: 4px {i}px; }}\n" for i, s in enumerate(SECTIONS * 8))
        + "</style>\n"
        f"<script>window.__STATE__ = {json.dumps(state)};</script>\n"
        "<script async src='https://www.googletagmanager.com/gtag/js?id=G-1'></script>\n"
    )
    menu = "".join(
        f"<li class='s-{s.lower()}'><a href='/{s.lower()}'>{s}</a><ul class='submenu' style='display:none'>"
        + "".join(
            f"<li><a href='/{s.lower()}/{i}'>{s} {word}</a></li>"
            for i, word in enumerate(("news", "analysis", "live", "in pictures"))
        )
        + "</ul></li>\n"
        for s in SECTIONS
    )
    header = (
        f"<header class='masthead'><a class='logo' href='/'>{site}</a>"
        "<a href='/subscribe' class='cta'>Subscribe</a> <a href='/login'>Sign in</a>\n"
        f"<nav class='main-menu' aria-label='Sections'><ul>{menu}</ul></nav>"
        "<form class='search' action='/search'><input type='search' name='q'><button>Search</button></form></header>\n"
        "<div class='cookie-banner' role='dialog' aria-label='Cookies'><p>We use cookies to personalise content and "
        "ads, to provide social media features and to analyse our traffic.</p><button>Accept all</button></div>\n"
    )
    rows = "".join(
        f"<tr>{''.join(f'<td><a href=/{s.lower()}/{i}>{s} archive {i}</a></td>' for s in SECTIONS[j : j + 6])}</tr>"
        for j in range(0, len(SECTIONS), 6)
        for i in range(2)
    )
    footer = (
        f"<footer class='site-footer'><table class='footer-links'>{rows}</table>"
        f"<p>© 2025 {site}. All rights reserved. Registered in England and Wales No. 908371.</p></footer>\n"
        "<script src='/static/bundle.js' defer></script>\n"
    )
    return head, header, footer


def page(title: str, article: str, *, html_attributes: str = "", body_attributes: str = "", wrapper: str = "") -> str:
    head, header, footer = site_chrome("The Northern Ledger")
    opening, closing = (f"<div {wrapper}>", "</div>") if wrapper else ("", "")
    return (
        f"<!DOCTYPE html><html lang='en' {html_attributes}><head><title>{title} | The Northern Ledger</title>\n{head}"
        f"</head><body {body_attributes}>{opening}{header}<main id='content'>{article}</main>{footer}{closing}"
        "</body></html>"
    )


LEAD = [
    "Water rates in Harwick will rise by 9 percent from April, the regional utility said on Tuesday, the largest "
    "increase since the company was formed in 1989.",
    "The utility blamed the cost of replacing lead pipes under a national programme, which it put at 310 million "
    "pounds over ten years.",
]
PREMIUM = [
    "A typical household will pay about 46 pounds a year more, according to the utility's own figures, although "
    "the increase will be smaller for homes with a water meter.",
    "The consumer council said it would challenge the rise before the regulator, arguing that the utility had "
    "paid its shareholders 82 million pounds in dividends over the past three years.",
    "Company accounts show that leakage fell by only 4 percent over the same period, against a target of 15 "
    "percent set by the regulator in 2020.",
    "The utility's chief executive, Moira Grant, said the pipe programme could not be paid for out of profits "
    "and that the company had already cut its own running costs by 12 million pounds.",
    "Residents of the Old Town, where most of the lead pipes remain, will be the first to have them replaced, "
    "starting with 1,400 homes on streets built before 1920.",
    "Households on low incomes can apply for a social tariff that halves their bill, but the council said fewer "
    "than one in five of those eligible had done so.",
    "The regulator is expected to rule on the challenge by the end of June, and any reduction it orders would be "
    "refunded to customers in their next bill.",
    "Opposition councillors called for an independent audit of the utility's spending on the pipe programme, "
    "which they said had been announced three times without work starting.",
    "The last major rise, of 6 percent in 2011, was cut to 4 percent after a similar challenge by the consumer "
    "council, which took nine months to resolve.",
    "Water bills in the region are already the fourth highest in the country, at an average of 512 pounds a year, "
    "according to figures from the national consumer body.",
]
FACT_TABLE = (
    "<table class='factbox'><caption>Average yearly bill</caption>"
    "<tr><th>Household</th><th>Now</th><th>From April</th></tr>"
    "<tr><td>Metered</td><td>£448</td><td>£488</td></tr><tr><td>Unmetered</td><td>£576</td><td>£628</td></tr></table>"
)


def paywalled_story(premium_opening: str) -> str:
    paragraphs = "".join(f"<p>{text}</p>" for text in PREMIUM)
    return page(
        "Water bills to rise 9% in Harwick",
        "<article class='story'><h1>Water bills to rise 9% in Harwick</h1>"
        "<p class='byline'>By Tom Ashby, Consumer affairs correspondent</p><div class='story-body'>"
        + "".join(f"<p>{text}</p>" for text in LEAD)
        + FACT_TABLE
        + f"{premium_opening}{paragraphs}</div>"
        "<div class='paywall-offer'><h2>Keep reading with a subscription</h2><p>Subscribe for 1 pound a week.</p></div>"
        "</div></article>",
    )


PREMIUM_HIDINGS = {
    "display-none": "<div class='premium-content' style='display: none'>",
    "hidden-attribute": "<div class='premium-content' hidden>",
    "aria-hidden": "<div class='premium-content' aria-hidden='true'>",
    "visibility-hidden": "<section class='article-locked' style='visibility:hidden; height: 0'>",
}


def lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def test_the_pages_are_of_real_size():
    assert len(paywalled_story(PREMIUM_HIDINGS["display-none"])) > 50_000
    assert len(NEWS_WITH_PLAYER) > 50_000


@pytest.mark.parametrize("premium_opening", PREMIUM_HIDINGS.values(), ids=PREMIUM_HIDINGS.keys())
def test_a_paywalled_block_holding_most_of_the_article_is_not_read(premium_opening):
    html = paywalled_story(premium_opening)
    text = read_html(html).text

    assert all(paragraph not in text for paragraph in PREMIUM)
    assert all(paragraph in lines(text) for paragraph in LEAD)
    assert "£488" in lines(text)


COLLAPSED_OPENINGS = {
    "display-none": "<div class='read-more__body' id='more-1' style='display:none'>",
    "hidden-attribute": "<div class='read-more__body' id='more-1' hidden>",
    "aria-hidden": "<div class='read-more__body' id='more-1' aria-hidden='true' aria-labelledby='more-toggle'>",
}


@pytest.mark.parametrize("opening", COLLAPSED_OPENINGS.values(), ids=COLLAPSED_OPENINGS.keys())
def test_a_collapsed_read_more_block_is_not_read(opening):
    article = (
        "<article><h1>Harwick's water bills: what changes in April</h1><div class='summary'>"
        + "".join(f"<p>{text}</p>" for text in LEAD)
        + "<button id='more-toggle' aria-expanded='false' aria-controls='more-1'>Read more</button>"
        + opening
        + "".join(f"<p>{text}</p>" for text in PREMIUM)
        + "</div></div></article>"
    )
    text = read_html(page("Harwick's water bills", article)).text

    assert lines(text)[-2:] == LEAD
    assert all(paragraph not in text for paragraph in PREMIUM)


def open_story() -> str:
    return (
        "<article><h1>Water bills to rise 9% in Harwick</h1><div class='story-body'>"
        + "".join(f"<p>{text}</p>" for text in LEAD + PREMIUM)
        + "</div></article>"
    )


ANTI_FLICKER = {
    "body-opacity": {"body_attributes": "style='opacity:0'"},
    "html-class": {"html_attributes": "class='js-hidden async-hide'"},
    "wrapper-display-none": {"wrapper": "id='page' style='display:none'"},
    "wrapper-visibility-hidden": {"wrapper": "class='site-wrapper' style='visibility: hidden'"},
    "page-behind-a-dialog": {"wrapper": "id='app' aria-hidden='true'"},
}


@pytest.mark.parametrize("hiding", ANTI_FLICKER.values(), ids=ANTI_FLICKER.keys())
def test_a_page_hidden_whole_until_a_script_runs_is_read(hiding):
    text = read_html(page("Water bills to rise 9% in Harwick", open_story(), **hiding)).text

    assert lines(text)[-len(LEAD + PREMIUM) :] == LEAD + PREMIUM


def test_a_block_hidden_inside_a_page_hidden_whole_is_still_not_read():
    html = page(
        "Water bills to rise 9% in Harwick",
        "<article><h1>Water bills to rise 9% in Harwick</h1><div class='story-body'>"
        + "".join(f"<p>{text}</p>" for text in LEAD)
        + "<div class='premium' style='display: none'>"
        + "".join(f"<p>{text}</p>" for text in PREMIUM)
        + "</div></div></article>",
        wrapper="id='page' style='visibility:hidden'",
    )
    text = read_html(html).text

    assert lines(text)[-2:] == LEAD
    assert all(paragraph not in text for paragraph in PREMIUM)


STORY = [
    "Flood defences on the River Calder failed in two places on Sunday night, forcing the evacuation of 340 homes "
    "in the lower town of Elland.",
    "The Environment Agency said the water rose 1.2 metres in six hours after 80 millimetres of rain fell on the "
    "moors above the valley, more than a month's rainfall in a single day.",
    "A wall built in 2016 at a cost of 8 million pounds held along most of its length, but the river broke through "
    "at a railway bridge and at a gap left for a road that was never closed.",
    "Residents said warning sirens sounded less than an hour before the water reached the first streets, and that "
    "many cars could not be moved in time.",
    "The council has opened two rest centres, at the leisure centre and at St Mary's church hall, and said about "
    "120 people spent the night there.",
    "The agency said it would review why the road gap had not been closed, adding that the barrier meant to fill it "
    "had been stored in a depot 14 miles away.",
    "More rain is forecast for Tuesday, and the Met Office has issued an amber warning for West Yorkshire until "
    "Wednesday morning.",
]
TEASERS = [
    (
        "/news/bridge-closure",
        "Calder bridge to stay shut for a month",
        "Engineers found cracks in two of its arches after the water fell, the highways authority said on Monday.",
    ),
    (
        "/news/insurance",
        "Flooded homeowners face higher premiums",
        "Insurers say claims from the valley have tripled since 2012, and some homes can no longer be covered at all.",
    ),
    (
        "/news/rail",
        "Trains between Halifax and Huddersfield cancelled",
        "Network Rail said the line would reopen "
        "once the track at Elland had been inspected and the signals dried out.",
    ),
    (
        "/news/schools",
        "Three schools closed as roads stay under water",
        "Parents were told to expect the schools to reopen on Thursday at the earliest, depending on the forecast.",
    ),
    (
        "/opinion/defences",
        "Why the flood wall was built with a hole in it",
        "Our columnist asks who decided that "
        "a road matters more than the town it runs through, and why nobody checked.",
    ),
    (
        "/news/volunteers",
        "Volunteers fill sandbags through the night",
        "More than 200 people turned up at the "
        "fire station after an appeal on social media, bringing their own spades.",
    ),
]
# A player as Bitmovin's UI draws it: its menus are lists and labels, named nothing an extractor knows.
PLAYER = """
<div id="player-1" class="bitmovinplayer-container aspect-16x9" data-autoplay="false">
<video id="bitmovinplayer-video-player-1" preload="metadata" poster="/img/flood.jpg"><source src="/v/flood.mp4">
<p>To view this video please enable JavaScript, and consider upgrading to a web browser that supports HTML5
video.</p></video>
<div class="bmpui-ui-uicontainer">
<div class="bmpui-ui-titlebar"><p class="bmpui-label-metadata-title">Watch: drone footage shows the flooded
streets of Elland</p></div>
<div class="bmpui-ui-settings-panel" aria-label="Settings"><p class="bmpui-ui-label">Settings</p>
<ul class="bmpui-ui-settings-panel-page">
<li class="bmpui-ui-settings-panel-item"><p>Quality</p><p>Auto (720p)</p></li>
<li class="bmpui-ui-settings-panel-item"><p>Playback speed</p><p>Normal</p></li>
<li class="bmpui-ui-settings-panel-item"><p>Subtitles</p><p>Off</p></li>
<li class="bmpui-ui-settings-panel-item"><p>Audio</p><p>English</p></li>
</ul></div>
<div class="bmpui-ui-controls"><p class="bmpui-ui-playbacktimelabel">0:00 / 2:41</p>
<div class="bmpui-ui-seekbar" role="slider" aria-label="Video timeline">Seek</div>
<ul class="bmpui-ui-actions"><li>Share</li><li>Copy link</li><li>Autoplay</li></ul></div>
<div class="bmpui-ui-recommendation-overlay"><p>Up next</p>
<p>Rescue boats in the streets of Elland as the Calder bursts its banks</p></div>
</div></div>
"""


def teaser_list(title: str, teasers, headline: str = "h3") -> str:
    """A box of cards to other stories, each an image, a linked headline and the story's first
    sentence, in class names an extractor does not know."""
    items = "".join(
        f"<li class='package-item'><a class='package-item__image' href='{href}'><img src='{href}.jpg' alt=''></a>"
        f"<{headline} class='package-item__headline'><a href='{href}'>{text}</a></{headline}>"
        f"<p class='package-item__standfirst'>{standfirst}</p></li>"
        for href, text, standfirst in teasers
    )
    return f"<div class='story-package'><span class='story-package__title'>{title}</span><ul>{items}</ul></div>"


NEWS_WITH_PLAYER = page(
    "Flood defences fail in Elland",
    "<article class='story'><h1>Flood defences fail in Elland as 340 homes evacuated</h1>"
    "<p class='byline'>By Priya Shah · Monday 3 February 2025</p>"
    + PLAYER
    + "<div class='story-body'>"
    + "".join(f"<p>{text}</p>" for text in STORY[:4])
    + teaser_list("Related", TEASERS[:2])
    + "".join(f"<p>{text}</p>" for text in STORY[4:])
    + "</div>"
    + teaser_list("More stories", TEASERS[2:], headline="p")
    + "</article>"
    + teaser_list("Recommended for you", TEASERS, headline="h4"),
)


def test_a_video_players_menus_are_not_read():
    text = read_html(NEWS_WITH_PLAYER).text

    for chrome in ("Settings", "Quality", "Playback speed", "Subtitles", "Share", "Autoplay", "Up next", "Copy link"):
        assert chrome not in text
    assert lines(text)[-len(STORY) :] == STORY


def test_teasers_to_other_stories_are_not_read():
    text = read_html(NEWS_WITH_PLAYER).text

    for _, headline, standfirst in TEASERS:
        assert headline not in text
        assert standfirst not in text
    assert not {"Related", "More stories", "Recommended for you"} & set(lines(text))
    assert lines(text)[-len(STORY) :] == STORY


def test_a_list_articles_numbered_items_are_read():
    items = "".join(
        f"<div class='listicle__item'><h2><a href='/shop/{i}'>{i}. {headline}</a></h2><p>{standfirst}</p></div>"
        for i, (_, headline, standfirst) in enumerate(TEASERS, start=1)
    )
    html = page(
        "Six flood stories", f"<article><h1>Six flood stories</h1><div class='listicle'>{items}</div></article>"
    )
    text = read_html(html).text

    assert all(standfirst in lines(text) for _, _, standfirst in TEASERS)


def test_a_gallerys_slides_shown_in_turn_are_read():
    slides = "".join(
        f"<div class='gallery__slide{'' if i == 0 else ' hidden'}' style='display: {'block' if i == 0 else 'none'}'>"
        f"<h2>{i + 1}</h2><p>{text}</p></div>"
        for i, text in enumerate(STORY)
    )
    html = page(
        "The flood in pictures", f"<article><h1>The flood in pictures</h1><div class='gallery'>{slides}</div></article>"
    )

    assert all(text in lines(read_html(html).text) for text in STORY)


def test_a_sports_table_of_players_is_kept():
    table = (
        "<table class='player-stats'><tr><th class='player-name'>Player</th><th>Goals</th></tr>"
        + "".join(f"<tr class='player-row'><td class='player-name'>Player {i}</td><td>{i}</td></tr>" for i in range(5))
        + "</table>"
    )
    tree = parse_html(f"<html><body><article><h1>Scorers</h1>{table}</article></body></html>")
    remove_unseen(tree)

    assert "Player 4" in tree.text_content()


def test_menus_and_toolbars_drawn_with_divs_are_not_read():
    tree = parse_html(
        "<html><body><article><h1>Flood defences fail</h1>"
        "<div class='tools' role='toolbar'><span>Print this page</span><span>Larger text</span></div>"
        "<ul class='opts' role='menu'><li role='menuitemradio'>Read aloud</li></ul>"
        + "".join(f"<p>{text}</p>" for text in STORY)
        + "</article></body></html>"
    )
    remove_unseen(tree)

    text = tree.text_content()
    assert all(control not in text for control in ("Print this page", "Larger text", "Read aloud"))
    assert STORY[-1] in text
