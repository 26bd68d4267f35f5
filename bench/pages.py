"""Realistic pages for the benchmark, generated and seeded (the same bytes on every run; no copy
of any real page): news articles, blog posts, wiki pages, journal papers and forum threads of
50 KB to 1 MB — most 100–300 KB, some ~50 KB, a few ~1 MB, like real search results — with an
article of 80 to 2,000 sentences. Around it, what real pages carry: dozens of meta tags,
JSON-LD, analytics and framework scripts, hydration JSON, CSS, menus, breadcrumbs, a cookie
banner, sidebars, comments, HTML comments, infobox and data tables, references, footers.

As on the small bench pages (bench/web.py), each page states the sentence to verify once and
restates it (or, on every fourth page, disputes it) further down, among prose about the same
topic, so verification finds evidence: here the extractor and the passage ranker have to dig
for it."""

import html
import math
import random
from dataclasses import dataclass

from bench import prose
from bench.chrome import SECTIONS, Chrome, json_script, site_chrome
from bench.web import KINDS
from tests.fakes import FakePage, FakeSite

LAYOUT_OF_KIND = {
    "Wiki encyclopedia": "wiki",
    "City News": "news",
    "travel blog": "blog",
    "Journal of Studies": "journal",
    "Gov portal": "news",
    "forum thread": "forum",
    "Daily News": "news",
    "Science Journal": "journal",
}
HEADINGS = {
    "news": ["What happened", "Background", "Reaction", "What comes next", "A long history", "Costs", "Voices"],
    "blog": ["Getting there", "First impressions", "What to see", "Where to eat", "Tips", "Was it worth it?"],
    "wiki": ["History", "Construction", "Design", "Later years", "Reception", "In popular culture", "Visiting"],
    "journal": ["1. Introduction", "2. Sources and methods", "3. Results", "4. Discussion", "5. Conclusions"],
    "forum": [],
}


@dataclass
class GeneratedPage(FakePage):
    """A whole generated document. `body` stays the short text the fake search engine indexes
    and quotes as the snippet (a search engine knows a page by its gist, not its markup)."""

    document: bytes = b""
    sentences: int = 0  # sentences of prose in the article (comments and chrome not counted)
    article: tuple[str, ...] = ()  # those sentences: what an extractor should find (bench/extraction.py)

    def html(self) -> bytes:
        return self.document


def page_shape(rng: random.Random) -> tuple[int, int]:
    """(target size in bytes, article sentences), drawn like real search results."""
    draw = rng.random()
    if draw < 0.15:
        return rng.randint(45_000, 60_000), rng.randint(80, 120)
    if draw < 0.85:
        return _log_uniform(rng, 100_000, 300_000), _log_uniform(rng, 80, 400)
    if draw < 0.95:
        return rng.randint(300_000, 600_000), rng.randint(200, 1000)
    return rng.randint(900_000, 1_100_000), rng.randint(1000, 2000)


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def _text(sentence: str, topic: prose.Topic, rng: random.Random) -> str:
    escaped = html.escape(sentence, quote=False)
    if rng.random() < 0.15 and topic.name in escaped:
        slug = topic.name.replace(" ", "_")
        escaped = escaped.replace(topic.name, f'<a href="/wiki/{slug}" title="{topic.name}">{topic.name}</a>', 1)
    return escaped


def _paragraphs(rng: random.Random, sentences: list[str], topic: prose.Topic, cite: bool = False) -> list[str]:
    result, at = [], 0
    while at < len(sentences):
        size = rng.choice([1, 2, 3, 3, 4, 4, 5, 6, 7])
        parts = []
        for sentence in sentences[at : at + size]:
            reference = f'<sup class="reference"><a href="#cite-{rng.randint(1, 90)}">[{rng.randint(1, 90)}]</a></sup>'
            parts.append(_text(sentence, topic, rng) + (reference if cite and rng.random() < 0.3 else ""))
        result.append(f"<p>{' '.join(parts)}</p>")
        at += size
    return result


def _body(rng: random.Random, layout: str, sentences: list[str], topic: prose.Topic, chrome: Chrome) -> str:
    """The article body: paragraphs under headings, with what publishers slot between them."""
    blocks, headings = [], list(HEADINGS[layout])
    for n, paragraph in enumerate(_paragraphs(rng, sentences, topic, cite=layout in ("wiki", "journal"))):
        if n and n % rng.randint(4, 9) == 0 and headings:
            blocks.append(f'<h2 id="s{n}">{headings.pop(0)}</h2>')
        blocks.append(paragraph)
        roll = rng.random()
        if layout == "news" and roll < 0.12:
            blocks.append(f'<!-- ad slot {n} --><div class="ad ad--inline" data-slot="inline-{n}">Advertisement</div>')
        elif layout in ("news", "blog") and roll < 0.18:
            links = "".join(
                f'<li><a href="{t["url"]}">{html.escape(t["headline"])}</a></li>' for t in rng.sample(chrome.teasers, 3)
            )
            blocks.append(f'<aside class="read-more"><h4>Read more</h4><ul>{links}</ul></aside>')
        elif layout == "blog" and roll < 0.24:
            items = "".join(f"<li>{html.escape(prose.sentence(rng, topic), quote=False)}</li>" for _ in range(4))
            blocks.append(f"<ul>{items}</ul>")
        elif roll < 0.27:
            blocks.append(f"<blockquote><p>{html.escape(prose.sentence(rng, topic), quote=False)}</p></blockquote>")
        elif layout in ("wiki", "journal") and roll < 0.30:
            blocks.append(_data_table(rng, topic))
    return "\n".join(blocks)


def _data_table(rng: random.Random, topic: prose.Topic) -> str:
    start = rng.randint(1900, 1990)
    rows = "".join(
        f"<tr><td>{start + i}</td><td>{rng.randint(1000, 900000):,}</td><td>{rng.uniform(-20, 20):+.1f}%</td>"
        f"<td>{rng.choice(prose.ADJECTIVES)}</td></tr>"
        for i in range(rng.randint(8, 40))
    )
    caption = f"{rng.choice(prose.UNITS).capitalize()} at {topic.full} by year"
    return (
        f'<table class="wikitable sortable"><caption>{caption}</caption><thead><tr><th>Year</th>'
        f"<th>Count</th><th>Change</th><th>Note</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _infobox(rng: random.Random, topic: prose.Topic) -> str:
    rows = [
        ("Location", topic.place),
        ("Opened", rng.randint(1700, 1990)),
        ("Architect", rng.choice(prose.NAMES)),
        ("Style", f"{rng.choice(prose.ADJECTIVES).capitalize()} revival"),
        ("Height", f"{rng.randint(8, 400)} m"),
        ("Visitors", f"{rng.randint(10, 9000) * 1000:,} (2019)"),
        ("Owner", f"{topic.place} {rng.choice(['council', 'trust', 'foundation'])}"),
        ("Coordinates", f"{rng.uniform(-60, 60):.4f}°N {rng.uniform(-120, 120):.4f}°E"),
    ]
    cells = "".join(f'<tr><th scope="row">{k}</th><td>{html.escape(str(v))}</td></tr>' for k, v in rows)
    return (
        f'<table class="infobox"><caption>{topic.name}</caption><tr><td colspan="2">'
        f'<img src="/media/{rng.randint(1, 10**6)}.jpg" alt="{topic.name}" width="250"></td></tr>{cells}</table>'
    )


def _comments(rng: random.Random, topic: prose.Topic, count: int) -> str:
    items = []
    for n in range(count):
        text = " ".join(prose.sentence(rng, topic) for _ in range(rng.randint(1, 4)))
        items.append(
            f'<li class="comment" id="c{n}"><div class="comment__meta"><a class="comment__author" href="/u/{n}">'
            f"{rng.choice(prose.NAMES)}</a> <time>{rng.randint(1, 23)} hours ago</time></div>"
            f'<div class="comment__body"><p>{html.escape(text, quote=False)}</p></div>'
            f'<div class="comment__actions"><button>Reply</button> <button>Like ({rng.randint(0, 300)})</button>'
            "<button>Report</button></div></li>"
        )
    return f'<section class="comments" id="comments"><h2>{count} comments</h2><ol>{"".join(items)}</ol></section>'


def _forum_posts(rng: random.Random, sentences: list[str], topic: prose.Topic) -> str:
    posts, at, n = [], 0, 0
    while at < len(sentences):
        size = rng.randint(1, 6)
        body = "".join(_paragraphs(rng, sentences[at : at + size], topic))
        quote = ""
        if n and rng.random() < 0.25:
            quoted = _text(sentences[at - 1], topic, rng)
            quote = f"<blockquote><cite>Post #{rng.randint(1, n)}</cite>{quoted}</blockquote>"
        posts.append(
            f'<li class="post" id="post-{n}"><div class="post__user"><a class="username" href="/members/{n}">'
            f'{rng.choice(prose.NAMES).split()[0].lower()}{rng.randint(1, 999)}</a><span class="rank">'
            f"{rng.choice(['Newbie', 'Member', 'Regular', 'Moderator'])}</span><span>Joined {rng.randint(2004, 2024)}"
            f'</span><span>Posts: {rng.randint(1, 9000)}</span></div><div class="post__body">{quote}{body}</div>'
            f'<div class="post__sig">-- {html.escape(rng.choice(prose.GROUPS))} fan</div>'
            '<div class="post__actions"><a href="#reply">Reply</a> <a href="#quote">Quote</a></div></li>'
        )
        at, n = at + size, n + 1
    return f'<ol class="posts">{"".join(posts)}</ol><nav class="pagination">Page 1 of {rng.randint(1, 40)}</nav>'


def _references(rng: random.Random, topic: prose.Topic, count: int) -> str:
    items = "".join(
        f'<li id="cite-{n}"><cite>{rng.choice(prose.NAMES)} ({rng.randint(1850, 2024)}). '
        f"<i>{html.escape(prose.headline(rng, topic))}</i>. {topic.place}: {rng.choice(prose.GROUPS)}. "
        f"p. {rng.randint(1, 600)}.</cite></li>"
        for n in range(1, count + 1)
    )
    return f'<h2 id="references">References</h2><ol class="references">{items}</ol>'


def _sidebar(rng: random.Random, layout: str, chrome: Chrome) -> str:
    teasers = "".join(
        f'<li><a href="{t["url"]}"><img src="{t["image"]["src"]}" alt="" loading="lazy">'
        f"{html.escape(t['headline'])}</a></li>"
        for t in rng.sample(chrome.teasers, 10)
    )
    if layout == "wiki":
        languages = "".join(f'<li><a hreflang="x{n}" href="/x{n}/">Language {n}</a></li>' for n in range(60))
        return f'<div id="mw-panel"><h3>Tools</h3><ul>{teasers}</ul><h3>Languages</h3><ul>{languages}</ul></div>'
    tags = " ".join(f'<a class="tag" href="/tag/{w}">{w}</a>' for w in rng.sample(SECTIONS, 12))
    return (
        f'<aside class="sidebar"><section><h3>Most read</h3><ol>{teasers}</ol></section>'
        '<!-- ad slot sidebar --><div class="ad ad--mpu" data-slot="sidebar-1">Advertisement</div>'
        '<section class="newsletter"><h3>Get our newsletter</h3><form><input type="email" '
        'placeholder="you@example.com"><button>Sign up</button></form></section>'
        f'<section class="tags"><h3>Topics</h3>{tags}</section></aside>'
    )


def _head(rng: random.Random, title: str, description: str, layout: str, chrome: Chrome, url: str) -> str:
    meta = [
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f'<meta name="description" content="{html.escape(description)}">',
        f'<meta property="og:title" content="{html.escape(title)}">',
        f'<meta property="og:description" content="{html.escape(description)}">',
        f'<meta property="og:type" content="{"article" if layout != "forum" else "website"}">',
        f'<meta property="og:url" content="{url}">',
        f'<meta property="og:site_name" content="{html.escape(chrome.name)}">',
        f'<meta property="og:image" content="{url}/social.jpg">',
        '<meta name="twitter:card" content="summary_large_image">',
        f'<meta name="twitter:title" content="{html.escape(title)}">',
        '<meta name="robots" content="index, follow, max-image-preview:large">',
        f'<meta property="article:published_time" content="20{rng.randint(10, 25)}-0{rng.randint(1, 9)}-12">',
        f'<link rel="canonical" href="{url}">',
    ]
    meta += [f'<meta name="app:{w}" content="{rng.randint(0, 10**9)}">' for w in rng.sample(prose.NOUNS, 25)]
    meta += [f'<link rel="alternate" hreflang="x{n}" href="{url}?lang=x{n}">' for n in range(rng.randint(5, 30))]
    meta += [f'<link rel="preload" as="script" href="{src}">' for src in chrome.scripts]
    scripts = "".join(f'<script src="{src}" defer></script>' for src in chrome.scripts)
    return (
        f"<head>{''.join(meta)}<style>{chrome.css}</style>"
        f"<script>window.dataLayer=window.dataLayer||[];{chrome.analytics}</script>{scripts}</head>"
    )


def generated_page(
    *, title: str, claim: str, restated: str, topic: prose.Topic, kind: str, chrome: Chrome, url: str, seed: str
) -> GeneratedPage:
    rng = random.Random(seed)
    layout = LAYOUT_OF_KIND[kind]
    target, count = page_shape(rng)
    article = [prose.sentence(rng, topic) for _ in range(count - 2)]
    article.insert(rng.randint(len(article) * 11 // 20, len(article) * 19 // 20), restated)
    article.insert(rng.randint(len(article) // 20, len(article) * 2 // 5), claim)
    heading = title.rsplit(" - ", 1)[0]
    description = prose.sentence(rng, topic)
    crumbs = ["Home", *rng.sample(SECTIONS, rng.randint(1, 3))]
    breadcrumbs = " › ".join(f'<a href="/{crumb.lower()}">{crumb}</a>' for crumb in crumbs)
    if layout == "forum":
        main = f'<div class="thread"><h1>{html.escape(heading)}</h1>{_forum_posts(rng, article, topic)}</div>'
    else:
        lead = ""
        if layout == "wiki":
            lead = f'<div id="siteSub">From {chrome.name}</div>{_infobox(rng, topic)}'
        elif layout == "journal":
            authors = ", ".join(rng.sample(prose.NAMES, rng.randint(2, 6)))
            lead = f'<p class="authors">{authors}</p><section class="abstract"><h2>Abstract</h2><p>{description}</p>'
            lead += "</section>"
        else:
            lead = (
                f'<p class="standfirst">{html.escape(description, quote=False)}</p><div class="byline">By '
                f'<a rel="author" href="/authors/{rng.randint(1, 99)}">{rng.choice(prose.NAMES)}</a> · '
                f"{rng.randint(2, 25)} min read</div>"
            )
        tail = ""
        if layout in ("wiki", "journal"):
            tail = _references(rng, topic, rng.randint(10, 120))
        main = (
            f'<article class="article article--{layout}"><h1>{html.escape(heading)}</h1>{lead}'
            f'<div class="article__body">{_body(rng, layout, article, topic, chrome)}</div>{tail}</article>'
        )
        if layout in ("news", "blog"):
            main += _comments(rng, topic, rng.choice([0, 3, 12, 40, 120] if target > 100_000 else [0, 2, 5]))
    json_ld = {
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "Organization", "name": chrome.name, "sameAs": [f"https://social.example/{n}" for n in range(6)]},
            {"@type": "BreadcrumbList", "itemListElement": [{"position": n, "name": s} for n, s in enumerate(crumbs)]},
            {
                "@type": "Article",
                "headline": heading,
                "description": description,
                "wordCount": count * 17,
                "articleBody": " ".join(article) if layout == "news" else " ".join(article[:20]),
            },
        ],
    }
    document = [
        "<!DOCTYPE html>",
        f'<html lang="en" class="no-js layout-{layout}">',
        _head(rng, title, description, layout, chrome, url),
        f'<body class="{layout}">',
        f"<!-- page built by render-{rng.randint(1, 64)} in {rng.randint(20, 900)} ms -->",
        '<a class="skip-link" href="#main">Skip to content</a>',
        chrome.sprite,
        chrome.banner,
        f'<header class="site-header"><a class="logo" href="/">{html.escape(chrome.name)}</a>{chrome.menu}'
        '<form role="search" action="/search"><input name="q" placeholder="Search"></form></header>',
        f'<nav class="breadcrumbs" aria-label="Breadcrumb">{breadcrumbs}</nav>',
        f'<div class="layout"><main id="main">{main}</main>{_sidebar(rng, layout, chrome)}</div>',
        f'<!-- <div class="promo">{html.escape(prose.sentence(rng, topic), quote=False)}</div> -->',
        chrome.footer,
        json_script(json_ld, kind="application/ld+json"),
    ]
    document.append(_state(rng, chrome, article, target - sum(map(len, document))))
    document.append("</body></html>")
    return GeneratedPage(
        title=title,
        body=f"{claim}\n\n{restated}",
        document="\n".join(document).encode(),
        sentences=count,
        article=tuple(article),
    )


def _state(rng: random.Random, chrome: Chrome, article: list[str], room: int) -> str:
    """Hydration JSON (as Next.js and Nuxt sites ship it): the article's blocks when there is
    room for them, then related teasers until the page reaches its size."""
    state = {"buildId": f"{rng.getrandbits(64):x}", "props": {"article": {"blocks": article[:300]}}, "related": []}
    if len(json_script(state)) > room:
        state["props"]["article"]["blocks"] = []
    room -= len(json_script(state, script_id="__NEXT_DATA__"))
    state["related"] = [{"slot": n, **rng.choice(chrome.teasers)} for n in range(max(0, room) // chrome.teaser_bytes)]
    return json_script(state, script_id="__NEXT_DATA__")


def build_realistic_sites(
    sentences: list[tuple[str, prose.Topic]],
    *,
    sites: int = 8,
    pages_per_sentence: int = 5,
    latency: float = 0.0,
    seed: int = 7,
    refusing: float = 0.0,
    hang_s: float = 15.0,
) -> list[FakeSite]:
    """Like bench.web.build_sites (the same sites, titles and statements, the same pages
    refusing), with whole pages."""
    web = [FakeSite(latency=latency, refusing=refusing, hang_s=hang_s) for _ in range(sites)]
    chromes = [site_chrome(KINDS[n % len(KINDS)], f"{seed}:{n}") for n in range(sites)]
    for i, (sentence, topic) in enumerate(sentences):
        for j in range(pages_per_sentence):
            site_index = (i + j) % sites
            kind = KINDS[site_index % len(KINDS)]
            lowered = sentence[0].lower() + sentence[1:]
            restated = f"Contrary to reports, it is false that {lowered}" if j % 4 == 3 else f"In short, {lowered}"
            title = " ".join(sentence.split()[:6]).rstrip(".,") + f" - {kind}"
            web[site_index].pages[f"/s{i}/p{j}"] = generated_page(
                title=title,
                claim=sentence,
                restated=restated,
                topic=topic,
                kind=kind,
                chrome=chromes[site_index],
                url=f"https://{kind.split()[0].lower()}.example/s{i}/p{j}",
                seed=f"{seed}:{i}:{j}",
            )
    return web


def describe(web: list[FakeSite]) -> dict:
    """How many pages, and the ranges of their sizes and article sentences (for the report)."""
    pages = [page for site in web for page in site.pages.values()]
    sizes = sorted(len(page.html()) for page in pages)
    counts = sorted(getattr(page, "sentences", 0) or len(page.body.split("\n\n")) for page in pages)
    return {
        "pages": len(pages),
        "bytes_min": sizes[0],
        "bytes_median": sizes[len(sizes) // 2],
        "bytes_max": sizes[-1],
        "bytes_total": sum(sizes),
        "sentences_min": counts[0],
        "sentences_median": counts[len(counts) // 2],
        "sentences_max": counts[-1],
    }
