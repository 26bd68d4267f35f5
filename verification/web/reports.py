"""The report in three formats to hand on (selectors.verification_report builds it): Markdown
and a standalone HTML page from templates, and a CSV of the evidence. Every title, URL, rationale
and sentence in them is outside content, made inert for its format here or in the templates."""

import csv
import io
import re
from urllib.parse import quote

from django.template.loader import render_to_string

from verification.selectors.report import Report

CSV_COLUMNS = (
    "sentence",
    "claim",
    "outcome",
    "title",
    "url",
    "host",
    "type",
    "date",
    "verdict",
    "rationale",
    "counted",
    "snippet_only",
    "unread_reason",
    # Quick mode: the row is the model's own label for its claim, not a source (verdict "says true").
    "from_model_knowledge",
)

# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection, OWASP):
# such a cell gets a leading apostrophe, which shows the text as it is. Full-width forms too:
# some spreadsheets read them as the ASCII ones.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")

# Markdown punctuation that could start markup anywhere in a line (links, images, emphasis, code,
# raw HTML, table cells, entities). What matters only at a line's start (#, >, 1.) cannot occur
# there: outside content is put on one line after words of ours.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&!])")
# What a link's destination keeps as it is; anything else (spaces, parentheses, angle brackets,
# quotes, backticks) is percent-encoded, so it cannot end the destination early.
_URL_SAFE = "/:?#&=+;,@$*%"


def markdown_text(value) -> str:
    """Text that Markdown shows as it is, on one line."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(value).split()))


def markdown_url(url: str) -> str:
    """A link destination that stays one (the report links http(s) addresses only)."""
    return quote(url, safe=_URL_SAFE)


def markdown_fence(text: str) -> str:
    """A code fence longer than any run of backticks in `text`: the text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def report_markdown(report: Report, *, address: str) -> str:
    """`address`: the view's absolute URL, which the report names as where it came from."""
    context = {"report": report, "address": address, "fence": markdown_fence(report.text)}
    return render_to_string("verification/reports/report.md", context)


def report_html(report: Report, *, address: str) -> str:
    return render_to_string("verification/reports/report.html", {"report": report, "address": address})


def spreadsheet_cell(value) -> str:
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def evidence_csv(report: Report) -> str:
    """One row per evidence item, in the report's footnote order. Starts with a byte order mark:
    without it, Excel reads UTF-8 as the local code page and garbles every non-ASCII title."""
    sentences = {sentence.number: sentence.text for sentence in report.sentences}
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for note in report.footnotes:
        row = (
            sentences[note.sentence],
            note.claim,
            note.claim_outcome,
            note.title,
            note.url,
            note.host,
            note.type_label,
            note.published.isoformat() if note.published else "",
            note.verdict,
            note.rationale,
            "yes" if note.counted else "no",
            "yes" if note.snippet_only else "no",
            note.unread_reason,
            "yes" if note.from_model_knowledge else "no",
        )
        writer.writerow([spreadsheet_cell(cell) for cell in row])
    return "\ufeff" + out.getvalue()
