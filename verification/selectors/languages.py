"""The language a run was checked in, and each page's, as the result page, the JSON, the CLI and
the reports say it: "checked in German", or "checked in Hindi: less tested" for a language the
end-to-end tests do not run a text in (pipeline/languages.py)."""

from verification.models import Verification
from verification.pipeline import languages


def language_label(code: str | None) -> str:
    """The run's language in words: "checked in German", with ": less tested" after a language
    the tests do not run a text in; "" for none."""
    if not code:
        return ""
    found = languages.language(code)
    label = f"checked in {languages.name(code)}"
    return label if found is not None and found.tested else f"{label}: {languages.LESS_TESTED}"


def run_language(verification: Verification) -> dict | None:
    """The run's language for the JSON and the pages: {"code", "name", "own_name", "support",
    "dir", "label"}; None when its text's language was not told (too short, the detector unsure,
    or a run from before languages were read)."""
    described = languages.described(verification.language)
    if described is None:
        return None
    return {**described, "label": language_label(verification.language)}


def html_attributes(code: str | None) -> tuple[str, str]:
    """(lang, dir) for an element holding text in this language: ("", "auto") when it is not
    known, so the browser takes the direction from the text's first strong character."""
    found = languages.language(code)
    if found is None:
        return "", "auto"
    return found.code, found.direction
