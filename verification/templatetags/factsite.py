from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def percent(fraction: float | None) -> str:
    """0.666 → "67%"; no score → "—" (no evidence is not the same as 0%)."""
    return "—" if fraction is None else f"{fraction:.0%}"


@register.simple_tag
def sentence_link(part: dict, path: str, selected) -> str:
    """One sentence of the text, coloured by its band, with its score as text too (colour is
    never the only signal). Built in Python: a long text has hundreds of these, and the live
    recompute re-renders them all."""
    sentence, tally = part["sentence"], part["tally"]
    checking = sentence.status in ("pending", "running")
    is_selected = selected is not None and selected.index == sentence.index
    url = path + part["select_query"]
    if checking:
        title, badge = "Still being checked", "…"
    else:
        title = f"{percent(tally.score)} — {part['band_label']}: {tally.supported} of {tally.total} evidence supported"
        badge = percent(tally.score)
    classes = f"sentence band-{tally.band}" + (" selected" if is_selected else "") + (" checking" if checking else "")
    return format_html(
        '<a class="{}" id="sentence-{}" data-index="{}" data-band="{}" data-score="{}" href="{}" hx-get="{}" '
        'hx-target="#result-body" hx-swap="outerHTML" hx-push-url="true" title="{}"{}>'
        '{}<span class="score-badge">{}</span></a>',
        classes,
        sentence.index,
        sentence.index,
        tally.band,
        "" if tally.score is None else tally.score,
        url,
        url,
        title,
        mark_safe(' aria-current="true"') if is_selected else "",
        sentence.text,
        badge,
    )
