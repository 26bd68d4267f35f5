"""What a site wraps around every article (its "chrome"), generated once per site and seeded:
inline CSS, a mega menu, a footer of link columns, an SVG icon sprite, analytics and consent
scripts, a cookie banner, and a pool of related-article teasers its pages embed in their
hydration JSON. Real pages spend most of their bytes on these, and the extractor has to read
through all of it to find the article."""

import functools
import html
import json
import random
import string
from dataclasses import dataclass, field

from bench import prose

SECTIONS = """News World Politics Business Culture Travel Science Health Sport Opinion Lifestyle Food
    History Local Weather Video Podcasts Events Guides Community""".split()
LINK_WORDS = """latest archive guides maps tickets history events reviews interviews photos weekend
    family outdoors transport museums markets heritage walks tours restaurants hotels""".split()
CSS_PROPERTIES = [
    "margin: {a}px {b}px",
    "padding: {a}px {b}px {c}px",
    "color: #{hex}",
    "background-color: #{hex}",
    "border: 1px solid #{hex}",
    "font-size: {rem}rem",
    "line-height: 1.{c}",
    "display: flex",
    "display: grid",
    "grid-template-columns: repeat({n}, minmax(0, 1fr))",
    "align-items: center",
    "justify-content: space-between",
    "position: relative",
    "z-index: {n}",
    "transition: opacity .{c}s ease-in-out",
    "box-shadow: 0 {n}px {a}px rgba(0,0,0,.{c})",
    "border-radius: {n}px",
    "max-width: {w}px",
]
JS_SNIPPETS = [
    "var {x}=function({a},{b}){{if(!{a})return {b};for(var {i}=0;{i}<{a}.length;{i}++){b}.push({a}[{i}]*{n});"
    "return {b}}};",
    "function {x}({a}){{return document.querySelector('[data-{y}=\"'+{a}+'\"]')}}",
    "window.{x}=window.{x}||{{q:[],push:function({a}){{this.q.push({a})}}}};",
    "{x}.addEventListener('{event}',function({a}){{{a}.preventDefault();{y}({a}.target,{n})}},{{passive:!0}});",
    "try{{localStorage.setItem('{y}',JSON.stringify({{t:Date.now(),v:{n}}}))}}catch({a}){{}}",
    "var {x}=new IntersectionObserver(function({a}){{{a}.forEach(function({b}){{{b}.isIntersecting&&{y}({b})}})}},"
    "{{rootMargin:'{n}px'}});",
    "!function({a},{b}){{var {i}={a}.createElement('script');{i}.async=!0;{i}.src='/static/js/{y}.{hex}.js';"
    "{b}.appendChild({i})}}(document,document.head);",
]
EVENTS = ["click", "scroll", "resize", "load", "keydown", "visibilitychange"]


def _ident(rng: random.Random) -> str:
    return rng.choice(string.ascii_lowercase + "_$") + "".join(rng.choices(string.ascii_lowercase + string.digits, k=2))


def _hex(rng: random.Random, digits: int = 6) -> str:
    return "".join(rng.choices("0123456789abcdef", k=digits))


def _css(rng: random.Random, rules: int) -> str:
    lines = []
    for n in range(rules):
        selector = f".{rng.choice(LINK_WORDS)}-{rng.choice(['card', 'grid', 'nav', 'btn', 'hero', 'teaser'])}__{n}"
        if rng.random() < 0.2:
            selector += f":hover,.{_ident(rng)}>{rng.choice(['a', 'li', 'span', 'svg'])}"
        props = ";".join(
            rng.choice(CSS_PROPERTIES).format(
                a=rng.randint(0, 48),
                b=rng.randint(0, 48),
                c=rng.randint(1, 9),
                n=rng.randint(1, 12),
                hex=_hex(rng),
                rem=round(rng.uniform(0.7, 2.4), 2),
                w=rng.choice([320, 640, 768, 960, 1140, 1280]),
            )
            for _ in range(rng.randint(2, 7))
        )
        lines.append(f"{selector}{{{props}}}")
        if n % 60 == 59:
            lines.append(f"@media (max-width:{rng.choice([480, 768, 1024])}px){{.{_ident(rng)}{{display:none}}}}")
    return "".join(lines)


def _javascript(rng: random.Random, snippets: int) -> str:
    return "".join(
        rng.choice(JS_SNIPPETS).format(
            x=_ident(rng),
            y=_ident(rng),
            a=_ident(rng),
            b=_ident(rng),
            i=_ident(rng),
            n=rng.randint(1, 999),
            hex=_hex(rng, 8),
            event=rng.choice(EVENTS),
        )
        for _ in range(snippets)
    )


def _menu(rng: random.Random) -> str:
    sections = rng.sample(SECTIONS, rng.randint(7, 12))
    items = []
    for section in sections:
        links = "".join(
            f'<li class="menu__item"><a class="menu__link" href="/{section.lower()}/{word}" '
            f'data-track="nav:{section.lower()}:{word}">{word.capitalize()}</a></li>'
            for word in rng.sample(LINK_WORDS, rng.randint(4, 10))
        )
        items.append(
            f'<li class="menu__section"><a href="/{section.lower()}" aria-haspopup="true">{section}</a>'
            f'<ul class="menu__sub" hidden>{links}</ul></li>'
        )
    return f'<nav class="menu" aria-label="Main"><ul class="menu__list">{"".join(items)}</ul></nav>'


def _footer(rng: random.Random, name: str) -> str:
    columns = []
    for title in rng.sample(["About us", "Help", "Sections", "Follow", "Legal", "Partners", "Apps"], 5):
        links = "".join(
            f'<li><a href="/{title.split()[0].lower()}/{word}">{word.capitalize()}</a></li>'
            for word in rng.sample(LINK_WORDS, rng.randint(5, 9))
        )
        columns.append(f'<div class="footer__col"><h3>{title}</h3><ul>{links}</ul></div>')
    social = "".join(
        f'<a class="social" href="https://{net}.example/{name.split()[0].lower()}" aria-label="{net}">'
        f'<svg width="24" height="24"><use href="#icon-{net}"></use></svg></a>'
        for net in ["facebook", "x", "instagram", "youtube", "linkedin", "rss"]
    )
    legal = html.escape(" ".join(prose.sentence(rng, prose.Topic("site", name)) for _ in range(3)), quote=False)
    return (
        f'<footer class="site-footer"><div class="footer__grid">{"".join(columns)}</div>'
        f'<div class="footer__social">{social}</div><p class="footer__legal">{legal}</p>'
        f"<p>© {rng.randint(1998, 2012)}–2025 {html.escape(name)}. All rights reserved. "
        '<a href="/privacy">Privacy</a> · <a href="/terms">Terms</a> · <a href="/cookies">Cookies</a></p></footer>'
    )


def _sprite(rng: random.Random) -> str:
    symbols = []
    for name in ["search", "menu", "close", "share", "facebook", "x", "instagram", "youtube", "linkedin", "rss"] + [
        f"glyph-{n}" for n in range(rng.randint(0, 12))
    ]:
        points = " ".join(
            f"{rng.choice('MLCQ')}{rng.uniform(0, 24):.2f} {rng.uniform(0, 24):.2f}" for _ in range(rng.randint(10, 40))
        )
        symbols.append(f'<symbol id="icon-{name}" viewBox="0 0 24 24"><path d="{points}Z"/></symbol>')
    return f'<svg xmlns="http://www.w3.org/2000/svg" style="display:none">{"".join(symbols)}</svg>'


def _cookie_banner(rng: random.Random, name: str) -> str:
    purposes = "".join(
        f'<label class="consent__purpose"><input type="checkbox" name="{p.lower()}"'
        f"{' checked disabled' if i == 0 else ''}>"
        f"<strong>{p}</strong> {html.escape(prose.sentence(rng, prose.Topic('site', name)), quote=False)}</label>"
        for i, p in enumerate(["Necessary", "Preferences", "Statistics", "Marketing", "Personalised ads"])
    )
    return (
        '<div id="consent" class="consent" role="dialog" aria-live="polite"><h2>We value your privacy</h2>'
        f"<p>{html.escape(name)} and our 143 partners use cookies and similar technologies to store and access "
        "information on your device, to personalise content and ads and to measure audiences.</p>"
        f'<form class="consent__form">{purposes}<button type="submit" data-consent="all">Accept all</button>'
        '<button type="button" data-consent="none">Reject all</button>'
        '<button type="button" data-consent="settings">Manage settings</button></form></div>'
    )


def _teaser(rng: random.Random, topic: prose.Topic, n: int) -> dict:
    return {
        "id": 100000 + n,
        "headline": prose.headline(rng, topic),
        "url": f"/{rng.choice(SECTIONS).lower()}/{_hex(rng, 10)}",
        "teaser": prose.sentence(rng, topic),
        "image": {
            "src": f"/media/{_hex(rng, 12)}.jpg",
            "width": rng.choice([640, 800, 1200]),
            "height": rng.choice([360, 450, 675]),
            "alt": prose.sentence(rng, topic),
        },
        "author": rng.choice(prose.NAMES),
        "published": f"20{rng.randint(10, 25)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T08:00:00Z",
        "tags": rng.sample(LINK_WORDS, 3),
        "readMinutes": rng.randint(2, 15),
    }


@dataclass
class Chrome:
    name: str
    css: str
    menu: str
    footer: str
    sprite: str
    analytics: str
    banner: str
    scripts: list[str]
    teasers: list[dict] = field(default_factory=list)

    @functools.cached_property
    def teaser_bytes(self) -> int:
        """A teaser's average size in JSON, to pad a page to its size."""
        return len(json.dumps(self.teasers, ensure_ascii=False)) // len(self.teasers)


def site_chrome(name: str, seed: str) -> Chrome:
    rng = random.Random(f"chrome:{seed}")
    topic = prose.Topic(rng.choice(prose.NOUNS), name.split()[0])
    return Chrome(
        name=name,
        css=_css(rng, rng.randint(30, 120)),
        menu=_menu(rng),
        footer=_footer(rng, name),
        sprite=_sprite(rng),
        analytics=_javascript(rng, rng.randint(30, 150)),
        banner=_cookie_banner(rng, name),
        scripts=[f"/static/js/{word}.{_hex(rng, 8)}.js" for word in rng.sample(LINK_WORDS, rng.randint(6, 18))],
        teasers=[_teaser(rng, topic, n) for n in range(300)],
    )


def json_script(payload, *, script_id: str = "", kind: str = "application/json") -> str:
    """JSON inside <script>: '</' is escaped so the page's text cannot end the script early."""
    attributes = f' id="{script_id}"' if script_id else ""
    body = json.dumps(payload, ensure_ascii=False).replace("</", "<\\/")
    return f'<script{attributes} type="{kind}">{body}</script>'
