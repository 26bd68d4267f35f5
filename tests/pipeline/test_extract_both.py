"""Web pages read by trafilatura and readability-lxml together (extract.read_html): pages shaped like
the real web, each where one extractor alone fails in a way the combination is meant to avoid."""

import pytest

from verification.pipeline.extract import parse_html, read_html, read_main_text
from verification.pipeline.extract_choice import Choice

# A song's lyrics with its chorus sung twice at the end, in a site's navigation, search form, sidebar and footer.
LYRICS_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>"Harbour Lights" lyrics – The Quayside Singers | Folk Archive</title>
<meta name="description" content="Full lyrics of Harbour Lights, the 1962 song by the Quayside Singers.">
<link rel="stylesheet" href="/static/site.css">
<script>window.dataLayer = window.dataLayer || []; function gtag(){dataLayer.push(arguments);} gtag('js', new
Date());</script>
</head><body>
<header class="site-header"><a class="logo" href="/">Folk Archive</a>
<nav class="main-nav">
<ul>
<li>
<a href="/artists">Artists</a>
</li>
<li>
<a href="/songs">Songs</a>
</li>
<li>
<a href="/albums">Albums</a>
</li>
<li>
<a href="/about">About</a>
</li>
</ul>
</nav>
<form class="search" action="/search">
<input type="search" name="q" placeholder="Search songs">
<button>Search</button>
</form>
</header>
<main><article class="lyrics-page">
<h1>Harbour Lights</h1>
<p class="byline">Written by Mary Doyle and Tom Fenwick, recorded by the Quayside Singers in 1962.</p>
<div class="lyrics">
<p>The boats come in at evening when the tide is running low, and every window on the hill is lit to bring them
home.</p>
<p>So keep the harbour lights burning, keep them burning through the night, for the sea is wide and the wind is
cold and the sailors need the light.</p>
<p>My father sailed the northern banks for forty years and more, and every night my mother stood and watched him
from the shore.</p>
<p>So keep the harbour lights burning, keep them burning through the night, for the sea is wide and the wind is
cold and the sailors need the light.</p>
<p>So keep the harbour lights burning, keep them burning through the night, for the sea is wide and the wind is
cold and the sailors need the light.</p>
</div>
<p class="credits">The song reached number four in the Irish charts in March 1962 and has been covered by more
than thirty artists since.</p>
</article>
<aside class="sidebar">
<h3>More by the Quayside Singers</h3>
<ul>
<li>
<a href="/songs/the-ferryman">The Ferryman</a>
</li>
<li>
<a href="/songs/salt-and-stone">Salt and Stone</a>
</li>
</ul>
</aside>
</main>
<footer class="site-footer">
<p>© 2024 Folk Archive. Lyrics are provided for educational purposes only.</p>
<a href="/privacy">Privacy</a>
</footer>
<script src="/static/app.js"></script>
</body></html>
"""


# A local news story inside its site's chrome: a paywall notice the page hides, and a box of teasers to
# other stories inside the article, the shape of cbssports.com's "Our Latest Stories".
NEWS_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>City council approves new bus lanes on Main Street | Riverton Herald</title>
<meta property="og:title" content="City council approves new bus lanes on Main Street">
<meta property="article:published_time" content="2024-03-12T09:30:00Z">
<script type="application/ld+json">{"@type": "NewsArticle", "headline": "City council approves new bus lanes on
Main Street"}</script>
<script>var _sf_async_config = {uid: 1234, domain: "rivertonherald.com"};</script>
<style>.story p { font-size: 18px; } .modal { position: fixed; }</style>
</head><body class="story-page">
<div class="topbar">
<a href="/">Riverton Herald</a> <a href="/subscribe">Subscribe</a> <a href="/login">Log in</a>
</div>
<nav class="sections">
<a href="/news">News</a> <a href="/sports">Sports</a> <a href="/business">Business</a> <a
href="/opinion">Opinion</a>
</nav>
<main id="content"><article class="story-wrapper">
<h1 class="story-title">City council approves new bus lanes on Main Street</h1>
<div class="story-meta">By Ana Lopez · March 12, 2024</div>
<div class="story">
<p>The Riverton city council voted 7 to 2 on Monday night to add dedicated bus lanes to a 2.4-mile stretch of
Main Street, ending a two-year debate over the corridor.</p>
<p>Construction is expected to begin in June and to cost about $4.8 million, most of it covered by a federal
transit grant awarded last autumn.</p>
<section class="paywall" hidden>
<p>You have read all of your free articles this month. Subscribe now for unlimited access to the Riverton Herald
for just $1 a week.</p>
<p>Already a subscriber? Log in to keep reading.</p>
</section>
<p>Transit officials say the lanes will cut average bus travel times on the route by about six minutes during
the evening rush hour.</p>
<p>Two council members who voted against the plan said they worried about the loss of 140 parking spaces used by
shops along the street.</p>
<p>The council will vote on the final design of the stations at its meeting on April 8.</p>
</div>
<div class="latest-news-box">
<div class="Card-title">
<span class="title-text">Our Latest Stories</span>
</div>
<ul class="latest-news-box-row">
<li class="col-4">
<a href="/news/school-budget" class="thumbnail">
<figure class="img">
<img alt="school-budget.jpg" src="/img/school-budget.jpg">
</figure>
</a>
<div class="latest-box-item-headlines">
<h3 class="latest-box-item-title">
<a href="/news/school-budget">School board weighs budget cuts</a>
</h3>
<h4 class="latest-box-item-subline">Three options are on the table for next year</h4>
</div>
</li>
<li class="col-4">
<a href="/news/bridge" class="thumbnail">
<figure class="img">
<img alt="bridge.jpg" src="/img/bridge.jpg">
</figure>
</a>
<div class="latest-box-item-headlines">
<h3 class="latest-box-item-title">
<a href="/news/bridge">Old Mill bridge to close for repairs</a>
</h3>
<h4 class="latest-box-item-subline">Detours start next week on Route 9</h4>
</div>
</li>
<li class="col-4">
<a href="/news/library" class="thumbnail">
<figure class="img">
<img alt="library.jpg" src="/img/library.jpg">
</figure>
</a>
<div class="latest-box-item-headlines">
<h3 class="latest-box-item-title">
<a href="/news/library">Library extends weekend hours</a>
</h3>
<h4 class="latest-box-item-subline">Open until 8 on Saturdays from April</h4>
</div>
</li>
<li class="col-4">
<a href="/news/park" class="thumbnail">
<figure class="img">
<img alt="park.jpg" src="/img/park.jpg">
</figure>
</a>
<div class="latest-box-item-headlines">
<h3 class="latest-box-item-title">
<a href="/news/park">Riverside park gets new playground</a>
</h3>
<h4 class="latest-box-item-subline">Work finished ahead of schedule</h4>
</div>
</li>
<li class="col-4">
<a href="/news/election" class="thumbnail">
<figure class="img">
<img alt="election.jpg" src="/img/election.jpg">
</figure>
</a>
<div class="latest-box-item-headlines">
<h3 class="latest-box-item-title">
<a href="/news/election">Who is running for mayor</a>
</h3>
<h4 class="latest-box-item-subline">A guide to the five candidates</h4>
</div>
</li>
</ul>
</div>
</article></main>
<footer><p>© 2024 Riverton Herald. All rights reserved.</p></footer>
<script src="https://cdn.example.com/analytics.js" async></script>
</body></html>
"""


# Election results with a table and an embedded tweet (the clerk's own statement), which readability-lxml
# leaves out of its reading.
RESULTS_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Turnout in the county election reached a record 71 percent - Valley Times</title>
<meta name="description" content="Official results from the county clerk show record turnout.">
<script async src="https://www.googletagmanager.com/gtag/js?id=G-XXXX"></script>
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new
Date());gtag('config','G-XXXX');</script>
</head><body>
<div id="masthead"><a href="/" class="brand">Valley Times</a>
<ul class="menu">
<li>
<a href="/local">Local</a>
</li>
<li>
<a href="/politics">Politics</a>
</li>
<li>
<a href="/weather">Weather</a>
</li>
</ul>
</div>
<div id="page"><div class="col-main">
<h1>Turnout in the county election reached a record 71 percent</h1>
<p class="dateline">Published November 9, 2022</p>
<div class="ad-slot"><div class="ad-label">Advertisement</div></div>
<div class="entry-content">
<p>Turnout in Tuesday's county election reached 71 percent of registered voters, the highest share since the
county began keeping records in 1952, according to official results released by the county clerk on
Wednesday.</p>
<p>The clerk's office counted 84,312 ballots, up from 69,870 in the previous midterm election four years
ago.</p>
<p>Results by district:</p>
<table class="results">
<tr><th>District</th><th>Ballots cast</th><th>Turnout</th></tr>
<tr><td>North</td><td>29,104</td><td>74%</td></tr>
<tr><td>Central</td><td>31,877</td><td>69%</td></tr>
<tr><td>South</td><td>23,331</td><td>70%</td></tr>
</table>
<blockquote class="twitter-tweet">
<p lang="en" dir="ltr">Thank you to every poll worker who stayed late. 84,312 ballots counted, every one of them
by hand-checked machine. A record for our county.</p>&mdash; County Clerk Dana Reyes (@ClerkReyes) <a
href="https://twitter.com/ClerkReyes/status/1">November 9, 2022</a>
</blockquote>
<script async src="https://platform.twitter.com/widgets.js" charset="utf-8"></script>
<p>Election officials said early voting accounted for almost half of all ballots, and that mail ballots
postmarked by Election Day will be counted if they arrive by Monday.</p>
<p>The results will be certified by the county board on November 22.</p>
</div>
</div>
<div class="col-side">
<h3>Most read</h3>
<ol>
<li>
<a href="/a">Snow expected this weekend</a>
</li>
<li>
<a href="/b">New bakery opens downtown</a>
</li>
</ol>
</div>
</div>
<div id="colophon">Valley Times · 12 Market Square · <a href="/contact">Contact</a></div>
</body></html>
"""


# The same story with its first paragraphs in an intro block apart from the body, where trafilatura
# reads the body alone.
RESULTS_PAGE_IN_TWO_PARTS = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Turnout in the county election reached a record 71 percent - Valley Times</title>
<meta name="description" content="Official results from the county clerk show record turnout.">
<script async src="https://www.googletagmanager.com/gtag/js?id=G-XXXX"></script>
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new
Date());gtag('config','G-XXXX');</script>
</head><body>
<div id="masthead"><a href="/" class="brand">Valley Times</a>
<ul class="menu">
<li>
<a href="/local">Local</a>
</li>
<li>
<a href="/politics">Politics</a>
</li>
<li>
<a href="/weather">Weather</a>
</li>
</ul>
</div>
<div id="page"><div class="col-main">
<h1>Turnout in the county election reached a record 71 percent</h1>
<p class="dateline">Published November 9, 2022</p>
<div class="entry-intro">
<p>Turnout in Tuesday's county election reached 71 percent of registered voters, the highest share since the
county began keeping records in 1952, according to official results released by the county clerk on
Wednesday.</p>
<p>Officials had predicted a turnout of about 60 percent. Long lines formed at several polling places in the
north of the county, where two sites stayed open past the 8 p.m. closing time for voters already in line.</p>
</div>
<div class="ad-slot"><div class="ad-label">Advertisement</div></div>
<div class="entry-content">
<p>The clerk's office counted 84,312 ballots, up from 69,870 in the previous midterm election four years
ago.</p>
<p>Results by district:</p>
<table class="results">
<tr><th>District</th><th>Ballots cast</th><th>Turnout</th></tr>
<tr><td>North</td><td>29,104</td><td>74%</td></tr>
<tr><td>Central</td><td>31,877</td><td>69%</td></tr>
<tr><td>South</td><td>23,331</td><td>70%</td></tr>
</table>

<p>Election officials said early voting accounted for almost half of all ballots, and that mail ballots
postmarked by Election Day will be counted if they arrive by Monday.</p>
<p>The results will be certified by the county board on November 22.</p>
</div>
</div>
<div class="col-side">
<h3>Most read</h3>
<ol>
<li>
<a href="/a">Snow expected this weekend</a>
</li>
<li>
<a href="/b">New bakery opens downtown</a>
</li>
</ol>
</div>
</div>
<div id="colophon">Valley Times · 12 Market Square · <a href="/contact">Contact</a></div>
</body></html>
"""


def lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def test_a_chorus_the_page_sings_twice_is_read_twice():
    text = read_html(LYRICS_PAGE).text

    chorus = [line for line in lines(text) if line.startswith("So keep the harbour lights burning")]
    assert len(chorus) == 3
    assert lines(text)[-1].startswith("The song reached number four")


def test_a_paywall_notice_the_page_hides_is_not_read():
    text = read_html(NEWS_PAGE).text

    assert "free articles" not in text
    assert "Already a subscriber" not in text


def test_a_collapsed_section_the_browser_can_find_is_read():
    html = NEWS_PAGE.replace('<section class="paywall" hidden>', '<section class="faq" hidden="until-found">')

    assert "Already a subscriber? Log in to keep reading." in read_html(html).text


def test_teasers_to_other_stories_inside_the_article_are_not_read():
    text = read_html(NEWS_PAGE).text

    # The teaser cards are taken out before either extractor reads the page (extract_unseen.teaser_cards).
    assert lines(text) == [
        "City council approves new bus lanes on Main Street",
        "The Riverton city council voted 7 to 2 on Monday night to add dedicated bus lanes to a 2.4-mile stretch of "
        "Main Street, ending a two-year debate over the corridor.",
        "Construction is expected to begin in June and to cost about $4.8 million, most of it covered by a federal "
        "transit grant awarded last autumn.",
        "Transit officials say the lanes will cut average bus travel times on the route by about six minutes during "
        "the evening rush hour.",
        "Two council members who voted against the plan said they worried about the loss of 140 parking spaces used "
        "by shops along the street.",
        "The council will vote on the final design of the stations at its meeting on April 8.",
    ]


# The same teasers with a line before each headline, too long for a kicker: no teaser card is found,
# trafilatura reads them, and readability's reading is kept.
NEWS_PAGE_WITH_DATED_TEASERS = NEWS_PAGE.replace(
    '<div class="latest-box-item-headlines">',
    '<div class="latest-box-item-headlines"><span class="updated">Updated 2 hours ago</span>',
)


def test_teasers_trafilatura_keeps_are_left_out_by_keeping_readabilitys_reading():
    text = read_html(NEWS_PAGE_WITH_DATED_TEASERS).text

    assert "The council will vote on the final design of the stations at its meeting on April 8." in lines(text)
    assert "School board weighs budget cuts" not in text
    assert "Three options are on the table for next year" not in text


def test_a_news_page_keeps_its_title_and_date():
    reading = read_html(NEWS_PAGE)

    assert reading.title == "City council approves new bus lanes on Main Street"
    assert str(reading.published) == "2024-03-12"


def test_an_embedded_statement_and_a_table_readability_leaves_out_are_kept():
    text = read_html(RESULTS_PAGE).text

    assert (
        "Thank you to every poll worker who stayed late. 84,312 ballots counted, every one of them by hand-checked "
        "machine. A record for our county." in lines(text)
    )
    assert lines(text)[lines(text).index("North") :][:3] == ["North", "29,104", "74%"]
    assert lines(text)[-1] == "The results will be certified by the county board on November 22."


def test_paragraphs_outside_the_block_trafilatura_reads_are_kept():
    text = read_html(RESULTS_PAGE_IN_TWO_PARTS).text

    assert lines(text)[2:4] == [
        "Turnout in Tuesday's county election reached 71 percent of registered voters, the highest share since the "
        "county began keeping records in 1952, according to official results released by the county clerk on "
        "Wednesday.",
        "Officials had predicted a turnout of about 60 percent. Long lines formed at several polling places in the "
        "north of the county, where two sites stayed open past the 8 p.m. closing time for voters already in line.",
    ]
    assert (
        "The clerk's office counted 84,312 ballots, up from 69,870 in the previous midterm election four years ago."
        in lines(text)
    )


@pytest.mark.parametrize(
    ("html", "choice"),
    [
        (LYRICS_PAGE, Choice.READABILITY_FOR_REPEATS),
        (NEWS_PAGE_WITH_DATED_TEASERS, Choice.READABILITY_FOR_CHROME),
        (RESULTS_PAGE, Choice.TRAFILATURA),
        (RESULTS_PAGE_IN_TWO_PARTS, Choice.READABILITY_FOR_FRAGMENT),
    ],
    ids=["repeats", "chrome", "readability-fragment", "trafilatura-fragment"],
)
def test_it_keeps_the_reading_the_rule_expects(html, choice):
    assert read_main_text(parse_html(html))[1] is choice


def test_a_page_that_hides_its_body_until_a_script_runs_is_still_read():
    html = NEWS_PAGE.replace('<main id="content">', '<main id="content" style="display: none">')

    assert "The council will vote on the final design" in read_html(html).text
