"""Template helpers of the reports: Markdown escapes (verification/web/reports.py says why each is
needed) and the HTML footnotes."""

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from verification.selectors.report import Footnote
from verification.web import reports

register = template.Library()


@register.filter
def md(value) -> str:
    return reports.markdown_text(value)


@register.filter
def md_url(url: str) -> str:
    return reports.markdown_url(url)


@register.simple_tag
def report_footnotes(footnotes: list[Footnote]) -> str:
    """The evidence as numbered footnotes, for the HTML report and the printed page. Built in
    Python, as factsite.sentence_link is: a large run has hundreds, the page renders them again
    on every change of the view, and the template loop took ten times the rest of the page."""
    return mark_safe("".join(_footnote(note) for note in footnotes))


def _footnote(note: Footnote) -> str:
    # Every value that is not ours is escaped; a link is made only to an http(s) address (`link`).
    title = escape(note.title)
    if note.link:
        title = f'<a href="{escape(note.link)}">{title}</a>'
    url = f'<span class="report-url">{escape(note.url)}</span>' if note.url else ""
    meta = [escape(note.host), escape(note.type_label)] if note.type_label else [escape(note.host)]
    # Quick mode's item is the model's own label: "the model says true", not "it supports".
    said_by = "the model" if note.from_model_knowledge else "it"
    published = f"published {note.published.isoformat()}" if note.published else "no date"
    meta += [published, f"{said_by} {escape(note.verdict)}"]
    if note.snippet_only:
        meta.append(f"snippet only: the page could not be read ({escape(note.unread_reason)})")
    meta.append(_counted_words(note))
    rationale = f'<span class="report-rationale">{escape(note.rationale)}</span>' if note.rationale else ""
    return (
        f'<li id="report-fn{note.number}" value="{note.number}" data-counted="{"yes" if note.counted else "no"}">'
        f'<strong class="report-title">{title}</strong> {url} <span class="report-meta">{" · ".join(meta)}</span> '
        f'<span class="report-cites">S{note.sentence}, “{escape(note.claim)}”</span> {rationale}</li>'
    )


def _counted_words(note: Footnote) -> str:
    if not note.counted:
        return "not counted in this view"
    return f"counted once with [{note.copy_of}], the same text" if note.copy_of else "counted"
