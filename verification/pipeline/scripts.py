"""The scripts a text is written in: each letter's, counted; and the scripts factsite cannot split
into sentences nor search in, which a text mostly written in is refused (pipeline/languages.py)."""

import unicodedata
from functools import cache

# The first word of a letter's Unicode name → its script, for the scripts factsite splits into
# sentences (pipeline/segment.py) and searches in; kana and Han apart, as detection reads them.
_SCRIPTS = {
    "LATIN": "latin",
    "CYRILLIC": "cyrillic",
    "GREEK": "greek",
    "GEORGIAN": "georgian",
    "ARABIC": "arabic",
    "HEBREW": "hebrew",
    "DEVANAGARI": "devanagari",
    "BENGALI": "bengali",
    "GURMUKHI": "gurmukhi",
    "GUJARATI": "gujarati",
    "ORIYA": "oriya",
    "TAMIL": "tamil",
    "TELUGU": "telugu",
    "KANNADA": "kannada",
    "MALAYALAM": "malayalam",
    "SINHALA": "sinhala",
    "THAI": "thai",
    "CJK": "han",
    "HIRAGANA": "kana",
    "KATAKANA": "kana",
    "HANGUL": "hangul",
}
# Letters of no script of their own, or shapes of another's: left out of the count.
_NEUTRAL = frozenset("FULLWIDTH HALFWIDTH MODIFIER MATHEMATICAL SUPERSCRIPT SUBSCRIPT IDEOGRAPHIC".split())
# Scripts whose texts end their sentences with marks of their own (Armenian ։, Ethiopic ።,
# Tibetan །, Khmer ។, Myanmar ။, …) or write no spaces between words (Lao, Khmer, Myanmar,
# Tibetan): factsite would take a paragraph for one sentence and could not rank a page's
# sentences by their words. Named as a person knows them.
UNSUPPORTED_SCRIPT_NAMES = {
    "ARMENIAN": "Armenian",
    "ETHIOPIC": "Ethiopic (Ge'ez)",
    "TIBETAN": "Tibetan",
    "KHMER": "Khmer",
    "MYANMAR": "Myanmar (Burmese)",
    "LAO": "Lao",
    "THAANA": "Thaana (Dhivehi)",
    "SYRIAC": "Syriac",
    "MONGOLIAN": "Mongolian (traditional)",
    "TIFINAGH": "Tifinagh",
    "NKO": "N'Ko",
    "CHEROKEE": "Cherokee",
    "CANADIAN": "Canadian Aboriginal syllabics",
    "YI": "Yi",
    "JAVANESE": "Javanese",
    "BALINESE": "Balinese",
    "OL": "Ol Chiki",
    "VAI": "Vai",
}
# A text is refused when at least this share of its letters (and at least `at_least`) are in
# scripts factsite does not support: a quotation in one inside a text factsite reads is fine.
UNSUPPORTED_SHARE = 0.5


@cache
def script_of(ch: str) -> str:
    """A letter's script: a key of _SCRIPTS's values, "neutral", or the upper-case first word
    of its Unicode name for any other script ("TIBETAN")."""
    try:
        first = unicodedata.name(ch).split(" ", 1)[0]
    except ValueError:
        return "neutral"
    if first in _NEUTRAL:
        return "neutral"
    return _SCRIPTS.get(first, first)


def script_counts(text: str) -> dict[str, int]:
    """How many of the text's letters are in each script (script_of)."""
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha():
            script = script_of(ch)
            counts[script] = counts.get(script, 0) + 1
    return counts


def unsupported(counts: dict[str, int], *, at_least: int) -> str | None:
    """The name of the unsupported script most of these letters (and at least `at_least` of them)
    are in ("Tibetan"); None when the text can be read."""
    counts = {script: n for script, n in counts.items() if script != "neutral"}
    letters = sum(counts.values())
    outside = {script: n for script, n in counts.items() if script not in _SCRIPTS.values()}
    total = sum(outside.values())
    if total < at_least or total < UNSUPPORTED_SHARE * letters:
        return None
    script = max(outside, key=outside.get)
    return UNSUPPORTED_SCRIPT_NAMES.get(script, script.title())
