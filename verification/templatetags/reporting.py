"""Filters for the Markdown report (verification/reports.py says why each escape is needed)."""

from django import template

from verification import reports

register = template.Library()


@register.filter
def md(value) -> str:
    return reports.markdown_text(value)


@register.filter
def md_url(url: str) -> str:
    return reports.markdown_url(url)
