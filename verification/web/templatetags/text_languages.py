"""The `lang` and `dir` of outside text (the pasted text, a page's passage) and the run's language
line, for the templates: `{% load text_languages %}`."""

from django import template
from django.utils.html import format_html

from verification.selectors.languages import html_attributes, run_language

register = template.Library()


@register.simple_tag
def lang_attrs(code: str | None) -> str:
    """` lang="ar" dir="rtl"` for an element of text in that language; ` dir="auto"` when the
    language is not known (the browser then reads its direction from the text)."""
    lang, direction = html_attributes(code)
    if not lang:
        return format_html(' dir="{}"', direction)
    return format_html(' lang="{}" dir="{}"', lang, direction)


@register.simple_tag
def text_language(verification) -> dict | None:
    """The run's language as selectors.languages.run_language gives it (None when not told)."""
    return run_language(verification)
