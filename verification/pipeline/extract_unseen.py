"""What a reader of a web page never reads as what the page says, taken out of the tree before
either extractor reads it (extract.py): what is not shown (scripts, styles, form controls, blocks
the page hides or collapses), and what is shown but is the page's machinery rather than its text
(navigation, sidebars, footers, menus and dialogs, a media player's controls, teasers to other
articles). Both extractors drop most of it too; taking it out once spares both the walk
(readability's time grows with the tree), and where trafilatura keeps some of it (a paywalled
block, a player's menus, a teaser's first sentence) the reading loses it at its source."""

import re
from collections import Counter

import lxml.etree
from lxml.html import HtmlElement

# Elements that show a reader no text of the page. A <video>'s or <audio>'s text is what a browser
# without them shows ("your browser does not support video").
UNSEEN_TAGS = (
    *"script style noscript template svg canvas iframe object embed link video audio".split(),
    *"button select option datalist input textarea label dialog menu".split(),
)
# The page's own chrome, dropped by trafilatura anyway; readability scores it low but walks it.
CHROME_TAGS = ("nav", "aside", "footer")
# The roles of controls: a player's settings menu, a cookie dialog, a slider or a button drawn with
# <div>s (their labels are not the page's text). Not the landmark roles ("complementary",
# "navigation"): a page's broken markup can leave its whole text inside one of those; nor "tablist",
# which an accordion of the article's own sections is.
CHROME_ROLES = frozenset(
    "search menu menubar menuitem menuitemradio menuitemcheckbox toolbar dialog alertdialog tooltip slider "
    "button".split()
)
# One walk finds the elements each rule looks at: a role, the hidden attribute, aria-hidden, a style.
_MARKED = lxml.etree.XPath("//body//*[@role or @hidden or @aria-hidden or @style]")
# Chrome around the article (a <nav> or a role that wraps the page's <main>) is a wrapper: it stays.
_WRAPS_ARTICLE = lxml.etree.XPath(".//main or .//article")
# What holds the page's own text, never a player or a teaser: its <main>, its headline, its
# schema.org articleBody. (An <article> may be a teaser card.)
_HOLDS_PAGE = lxml.etree.XPath(
    "self::main or self::h1 or @itemprop='articleBody' or .//main or .//h1 or .//*[@itemprop='articleBody']"
)


# Blocks not shown: the hidden attribute (but hidden="until-found", a collapsed section the browser
# opens to show what a reader searched for), aria-hidden, or a style. (Not class names: "collapse"
# is Bootstrap's for accordions whose panels are the article, and a page's CSS is not read.)
_HIDDEN_STYLE = re.compile(r"(display\s*:\s*none|visibility\s*:\s*hidden)", re.IGNORECASE)
# Classes that mark which of a gallery's slides or a tab set's panels is shown.
_PANEL_STATES = frozenset("hidden is-hidden d-none active is-active current selected show open".split())

# A media player: the block around a <video> or <audio> up to the article's paragraphs, holding its
# title, settings menus and "up next" (a paragraph of the page is a sentence this long or longer),
# and no more words than a player's labels (a post around a podcast's <audio> may have no <p>).
PARAGRAPH_WORDS = 10
PLAYER_MAX_WORDS = 80
_SENTENCE_END = re.compile(r"[.!?…][\"”’»)\]]*$")

# A teaser card to another article: a linked heading and at most a sentence or two beside it.
TEASER_MAX_WORDS = 50
# Words a card may show before its headline: a kicker ("Opinion", "Updated 2 hours ago" is one too many).
TEASER_KICKER_WORDS = 3
_NUMBERED = re.compile(r"#?\d{1,3}[.)]\s")
# What a teaser list's box says besides its cards: a title ("More stories", "Recommended for you").
TEASER_TITLE_WORDS = 8


def remove_unseen(tree: HtmlElement) -> None:
    """Remove what a reader of the page never reads as what it says (see the module's doc)."""
    players = _outermost([player for media in tree.iter("video", "audio") if (player := _player_of(media)) is not None])
    lxml.etree.strip_elements(tree, lxml.etree.Comment, lxml.etree.ProcessingInstruction, *UNSEEN_TAGS, with_tail=False)
    _drop(players)
    marked = _MARKED(tree)
    # Chrome first: a footer's paragraph is no sign that the page shows its text.
    _drop(element for element in tree.iter(*CHROME_TAGS) if not _WRAPS_ARTICLE(element))
    controls = (element for element in marked if element.get("role") in CHROME_ROLES)
    _drop(element for element in controls if not _WRAPS_ARTICLE(element) and not _HOLDS_PAGE(element))
    _drop(hidden_blocks(tree, [element for element in marked if element.getparent() is not None and _hides(element)]))
    _drop_teaser_lists(teaser_cards(tree))


def hidden_blocks(tree: HtmlElement, hidden: list[HtmlElement]) -> list[HtmlElement]:
    """Of the `hidden` elements, the blocks the page hides: a paywalled or collapsed part of the
    article, a dismissed dialog, a copy of the headline for search engines. Decided by what is
    hidden, not by how much: when every paragraph is hidden, the page is hidden whole until a script
    has run (an anti-flicker style on a wrapper, aria-hidden on the page behind a dialog), and a
    reader sees it once it has: the outermost hidden blocks that hold paragraphs are those
    wrappers, and are kept (the blocks hidden inside them are not)."""
    blocks = hidden
    while blocks and not _any_shown(tree, blocks):
        wrappers = {block for block in _outermost(blocks) if block.find(".//p") is not None}
        if not wrappers:
            break
        blocks = [block for block in blocks if block not in wrappers]
    return [block for block in _outermost(blocks) if not _is_slide(block)]


def _is_slide(block: HtmlElement) -> bool:
    """One of a gallery's or a tab set's panels, shown in turn: a sibling of the same kind is shown."""
    kind = (block.tag, _kind(block))
    parent = block.getparent()
    return parent is not None and any(
        sibling is not block and (sibling.tag, _kind(sibling)) == kind and not _hides(sibling) for sibling in parent
    )


def _kind(element: HtmlElement) -> frozenset[str]:
    """Its classes but those that say which panel is shown ("hidden", "active")."""
    return frozenset((element.get("class") or "").split()) - _PANEL_STATES


def _hides(element: HtmlElement) -> bool:
    return (
        element.get("hidden") not in (None, "until-found")
        or element.get("aria-hidden") == "true"
        or bool(_HIDDEN_STYLE.search(element.get("style") or ""))
    )


def _any_shown(tree: HtmlElement, dropped: list[HtmlElement]) -> bool:
    """Whether any paragraph of the page is outside the elements to be dropped."""
    dropping = set(dropped)
    return any(
        paragraph not in dropping
        and not any(ancestor in dropping for ancestor in paragraph.iterancestors())
        and paragraph.text_content().strip()
        for paragraph in tree.iter("p")
    )


def _player_of(media: HtmlElement) -> HtmlElement | None:
    """The largest block around a <video> or <audio> that holds no paragraph of the page."""
    player, parent = media, media.getparent()
    while (
        parent is not None
        and parent.tag != "body"
        and len(parent.text_content().split()) <= PLAYER_MAX_WORDS
        and not _HOLDS_PAGE(parent)
        and not _has_paragraph(parent)
    ):
        player, parent = parent, parent.getparent()
    return None if player is media else player


def _has_paragraph(element: HtmlElement) -> bool:
    return any(
        len(words := paragraph.text_content().split()) >= PARAGRAPH_WORDS and _SENTENCE_END.search(words[-1])
        for paragraph in element.iter("p")
        if not any(ancestor.tag in ("video", "audio") for ancestor in paragraph.iterancestors())
    )


def _outermost(elements: list[HtmlElement]) -> list[HtmlElement]:
    """These elements but those inside another of them (dropped with it)."""
    chosen = set(elements)
    return [element for element in elements if not any(a in chosen for a in element.iterancestors())]


def teaser_cards(tree: HtmlElement) -> list[HtmlElement]:
    """Cards of a teaser list ("More stories", "Related", "Recommended"): two or more siblings that
    each begin with one linked headline — another article's — and say little more (its first
    sentence). A section heading of the article links nowhere; a list article's linked headings
    share one block with their paragraphs, or are numbered; and cards that are all the page has
    (a post that is a list of links) stay."""
    headings = _linked_headings(tree)
    if len(headings) < 2:
        return []
    holding = Counter(ancestor for heading in headings for ancestor in heading.iterancestors())
    siblings: dict[HtmlElement, list[HtmlElement]] = {}
    for heading in headings:
        card = _card_of(heading, holding)
        if card is not None:
            siblings.setdefault(card.getparent(), []).append(card)
    cards = [card for group in siblings.values() if len(group) >= 2 and not _numbered(group) for card in group]
    return cards if cards and _any_shown(tree, cards) else []


def _linked_headings(tree: HtmlElement) -> list[HtmlElement]:
    """Other articles' headlines: a heading with a link to another page, or a paragraph that is
    nothing but such a link (of a few words: a bare "More" is no headline)."""
    headings = [
        heading
        for heading in tree.iter("h2", "h3", "h4", "h5", "h6")
        if any(_links_away(a) for a in heading.iter("a")) or any(_links_away(a) for a in heading.iterancestors("a"))
    ]
    for link in tree.iter("a"):
        block = link.getparent()
        if (
            block is not None
            and block.tag in ("p", "div")
            and len(block) == 1
            and not (block.text or "").strip()
            and not (link.tail or "").strip()
            and _links_away(link)
            and len(link.text_content().split()) >= 3
        ):
            headings.append(block)
    return headings


def _links_away(link: HtmlElement) -> bool:
    href = link.get("href")
    return bool(href) and not href.startswith("#")


def _numbered(cards: list[HtmlElement]) -> bool:
    """A list article's items ("1. Sabrina Spellman", "2. Drake"): their headings are numbered."""
    numbered = sum(1 for card in cards if _NUMBERED.match(card.text_content().strip()))
    return numbered * 2 > len(cards)


def _card_of(heading: HtmlElement, holding: Counter) -> HtmlElement | None:
    """The largest block around this heading that holds no other linked heading, if it is not the
    heading alone and says little more than it."""
    card = heading
    for ancestor in heading.iterancestors():
        if holding[ancestor] > 1 or ancestor.tag == "body":
            break
        card = ancestor
    # A <figure>'s heading and caption are the page's own illustration.
    if card is heading or card.getparent() is None or card.tag == "figure" or _HOLDS_PAGE(card):
        return None
    # Words of each text node apart: text_content() runs a block's last word into the next one's first.
    text, headline = " ".join(card.itertext()).split(), " ".join(heading.itertext()).split()
    # It begins with the headline, or a kicker ("Opinion", "2 hours ago"); not a quotation and
    # its linked source, nor a byline and date before a title.
    if not any(text[start : start + len(headline)] == headline for start in range(TEASER_KICKER_WORDS + 1)):
        return None
    return card if len(text) - len(headline) <= TEASER_MAX_WORDS else None


def _drop_teaser_lists(cards: list[HtmlElement]) -> None:
    """Drop the cards, and the box around them when all it has left is its title."""
    lists = {card.getparent() for card in cards}
    _drop(cards)
    for element in lists:
        box = element
        while box.getparent() is not None and len(box.getparent().text_content().split()) <= TEASER_TITLE_WORDS:
            box = box.getparent()
        if len(box.text_content().split()) <= TEASER_TITLE_WORDS:
            _drop([box])


def _drop(elements) -> None:
    for element in list(elements):
        if element.getparent() is not None:
            element.drop_tree()
