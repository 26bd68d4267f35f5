from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from verification.scoring import OUTCOME_LABELS

register = template.Library()


@register.filter
def percent(fraction: float | None) -> str:
    """0.666 → "67%"; no score → "—" (no evidence is not the same as 0%)."""
    return "—" if fraction is None else f"{fraction:.0%}"


@register.filter
def outcome_label(outcome: str) -> str:
    return OUTCOME_LABELS.get(outcome, outcome)


@register.filter
def highlighted(parts: list[tuple[str, bool]]) -> str:
    """A passage with its best-matching sentences in <mark>, every piece escaped."""
    return mark_safe("".join(f"<mark>{escape(text)}</mark>" if best else escape(text) for text, best in parts))


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
        title = f"{percent(tally.score)} — {OUTCOME_LABELS[part['outcome']]}: {part['note']}"
        badge = percent(tally.score)
    classes = f"sentence band-{tally.band}" + (" selected" if is_selected else "") + (" checking" if checking else "")
    # An f-string, not format_html: this runs once per sentence per render. Only the text,
    # title and URL can hold outside content; they are escaped. The rest are ints and our names.
    score = "" if tally.score is None else tally.score
    current = ' aria-current="true"' if is_selected else ""
    url = escape(url)
    return mark_safe(
        f'<a class="{classes}" id="sentence-{sentence.index}" data-index="{sentence.index}" data-band="{tally.band}" '
        f'data-outcome="{part["outcome"]}" '
        f'data-score="{score}" href="{url}" hx-get="{url}" hx-target="#result-body" hx-swap="morph" '
        f'hx-push-url="true" title="{escape(title)}"{current}>{escape(sentence.text)}'
        f'<span class="score-badge">{badge}</span></a>'
    )
