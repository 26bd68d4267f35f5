from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from verification.scoring import shown_percent
from verification.selectors.result_claims import passage_parts

register = template.Library()


@register.filter
def percent(fraction: float | None) -> str:
    """0.666 → "67%", 0.297 → "29%" (red, as its colour); no score → "—" (no evidence is not
    the same as 0%)."""
    shown = shown_percent(fraction)
    return "—" if shown is None else f"{shown}%"


@register.filter
def highlighted(parts: list[tuple[str, bool]]) -> str:
    """A passage with its best-matching sentences in <mark>, every piece escaped."""
    return mark_safe("".join(f"<mark>{escape(text)}</mark>" if best else escape(text) for text, best in parts))


@register.simple_tag
def sentence_link(part: dict, path: str, selected) -> str:
    """One sentence of the text, coloured by its band, with its outcome's shape and its score as
    text too (colour is never the only signal). Its accessible name is the sentence, then its
    outcome and score in words: the badge's "0%" glued to the text said neither. Built in Python:
    a long text has hundreds of these, and the live recompute re-renders them all."""
    sentence, tally, words = part["sentence"], part["tally"], part["words"]
    # Its outcome, not its status: a cancelled run's unfinished sentences are not being checked.
    checking = words["outcome"] == "pending"
    is_selected = selected is not None and selected.index == sentence.index
    url = path + part["select_query"]
    icon = words["icon"]
    if checking:  # the badge's "…" is its shape already
        title, badge, said, icon = "Still being checked", "…", "being checked", ""
    else:
        title = f"{percent(tally.score)} — {words['text']}: {part['note']}"
        badge = percent(tally.score)
        said = words["text"] + ("" if tally.score is None else f", score {badge}")
    state = f"band-{tally.band}" + (" selected" if is_selected else "") + (" checking" if checking else "")
    classes = f"sentence {state}"
    # An f-string, not format_html: this runs once per sentence per render. Only the text,
    # title and URL can hold outside content; they are escaped. The rest are ints and our names.
    score = "" if tally.score is None else tally.score
    current = ' aria-current="true"' if is_selected else ""
    url = escape(url)
    text = escape(sentence.text)
    shared = (
        f'data-index="{sentence.index}" data-band="{tally.band}" data-outcome="{part["outcome"]}" '
        f'data-score="{score}" href="{url}" hx-get="{url}" hx-target="#result-body" hx-swap="morph" '
        f'hx-push-url="true" title="{escape(title)}"'
    )
    named = f'class="{classes}" id="sentence-{sentence.index}" {shared} aria-label="{text} ({escape(said)})"{current}'
    # The shape is drawn by CSS from data-icon (outside the text: copying the text copies only it).
    score_badge = f'<span class="score-badge" data-icon="{icon}" aria-hidden="true">{badge}</span>'
    pieces = part.get("pieces")
    if not pieces:
        return mark_safe(f"<a {named}>{text}{score_badge}</a>")
    return mark_safe(_split_sentence(pieces, named, f'class="sentence-part {state}" {shared}', score_badge, path))


def _split_sentence(pieces: list[dict], named: str, shared: str, score_badge: str, path: str) -> str:
    """A sentence with citation markers inside it ("Paris is big [1] and old [2]."): each badge
    stands where its marker stood, between pieces of the sentence's link, since a <details> cannot
    sit inside an <a>. Pieces rather than one link with badges laid over it from outside: no
    measuring script, the same place without script, and the text wraps as text does.
    The first piece is the sentence (`a.sentence`, its id): its one tab stop, its accessible name
    the whole sentence with its outcome, so a screen reader hears the sentence once and then its
    badges. The other pieces (`a.sentence-part`) carry the same link, data and classes, so a click
    on any word selects the sentence, coloured and outlined as its first piece is; they are hidden from
    assistive technology and out of the tab order (tabindex=-1: nothing hidden is focusable by
    keyboard). The score badge ends the last piece, where a sentence's score always stands. The
    group's span lets a hover on any piece light the whole sentence."""
    last = max(at for at, piece in enumerate(pieces) if "text" in piece)
    out, first = [], True
    for at, piece in enumerate(pieces):
        if "citations" in piece:
            out.append(citation_badges(piece["citations"], path))
            continue
        words = escape(piece["text"]) + (score_badge if at == last else "")
        if first:
            out.append(f"<a {named}>{words}</a>")
            first = False
        else:
            out.append(f'<a {shared} tabindex="-1" aria-hidden="true">{words}</a>')
    return f'<span class="sentence-group">{"".join(out)}</span>'


@register.simple_tag
def citation_badges(badges: list[dict], path: str) -> str:
    """A marker of the text's own citations (issue 34) as badges, one per source it cites: its name
    and outcome in words, with its outcome's shape, coloured by it (CSS). Each is a <details>: a
    click or Enter opens what the cited source said (its passage and the judge's rationale) or why
    it could not be read, with no script; and links to the passage among its sentence's evidence.
    Built in Python with no whitespace between tags: it sits in the text, where white space shows."""
    return mark_safe("".join(_citation_badge(badge, path) for badge in badges))


def _citation_badge(badge: dict, path: str) -> str:
    # Outside content: the marker, title, address, passage, claim and rationale; all escaped.
    name = escape(badge["name"])
    said = escape(badge["outcome_label"]) + (f": {escape(badge['reason'])}" if badge["reason"] else "")
    marker = badge["marker"] if len(badge["marker"]) <= 80 else badge["marker"][:79] + "…"
    panel = [f'<p class="citation-said"><span class="citation-marker">{escape(marker)}</span> {said}.</p>']
    title = escape(badge["title"] or badge["url"] or "")
    if badge["link"]:
        panel.append(
            f'<p class="citation-source"><a href="{escape(badge["link"])}" target="_blank" rel="noopener noreferrer">'
            f'{title}</a> <span class="host">{escape(badge["host"])}</span></p>'
        )
    elif title:
        panel.append(f'<p class="citation-source">{title}</p>')
    evidence = badge["evidence"]
    if evidence:
        passage = highlighted(passage_parts(evidence["passage"], evidence["highlights"]))
        panel.append(
            f'<p class="citation-claim">For the claim “<bdi lang="">{escape(evidence["claim"])}</bdi>”</p>'
            f'<blockquote class="passage" lang="" dir="auto">{passage}</blockquote>'
        )
        if evidence["rationale"]:
            panel.append(f'<p class="citation-rationale">Why: {escape(evidence["rationale"])}</p>')
        url = escape(f"{path}{badge['evidence_query']}#evidence-{evidence['id']}")
        panel.append(f'<p><a class="citation-evidence" href="{url}">See it with the sentence\'s evidence</a></p>')
    return (
        # One open at a time (`name`): a panel lies over the text, and two would lie over each other.
        # Its words are the page's (English), not the text's it stands in (an Arabic text is lang="ar"
        # dir="rtl"); the claim and the passage inside it are in their own language, not told here.
        f'<details class="citation" name="citation" id="citation-{badge["index"]}" data-outcome="{badge["outcome"]}"'
        ' lang="en" dir="ltr">'
        f'<summary class="citation-badge" data-icon="{badge["icon"]}"><span class="visually-hidden">Citation </span>'
        f'<span class="citation-name">{name}</span> <span class="citation-words">{escape(badge["words"])}</span>'
        f'</summary><div class="citation-panel">{"".join(panel)}</div></details>'
    )
