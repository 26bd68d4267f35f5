"""The report in three formats to hand on (selectors.verification_report builds it): Markdown
and a standalone HTML page from templates, and a CSV of the evidence. Every title, URL, rationale
and sentence in them is outside content, made inert for its format here or in the templates."""

import csv
import io
import re
from collections import defaultdict
from urllib.parse import quote, urlsplit

from django.template.loader import render_to_string

from verification.selectors.report import CitationEntry, Report

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
    # The language the text was checked in, in words ("checked in Hindi: less tested"), and the
    # language of the row's page (an ISO 639-1 code; "" when not told) (issue 36).
    "text_language",
    "page_language",
    # The text's own citations (issue 34): whether the row's source is one the text cites, the markers
    # by which its sentence cites it, and what it turned out to say of that sentence. A citation
    # with no evidence row (its page does not exist, its marker points nowhere) is a row of its own.
    "cited_by_text",
    "citation",
    "citation_outcome",
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
    cited_urls = {citation.url for citation in report.citations if citation.url}
    citing: dict[tuple[int | None, str], list[CitationEntry]] = defaultdict(list)
    for citation in report.citations:
        citing[citation.sentence, citation.url].append(citation)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    shown: set[tuple[int | None, str]] = set()
    for note in report.footnotes:
        citations = citing.get((note.sentence, note.url), []) if note.url else []
        shown.add((note.sentence, note.url))
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
            report.facts["language"],
            note.language,
            "yes" if note.url in cited_urls else "no",
            *_citation_cells(citations),
        )
        writer.writerow([spreadsheet_cell(cell) for cell in row])
    for (sentence, url), citations in citing.items():
        # Citations giving no address are told apart by their markers: "[9]" points nowhere, a name is named.
        groups = [[citation] for citation in citations] if not url else [] if (sentence, url) in shown else [citations]
        for group in groups:
            row = _citation_row(group, sentences.get(sentence, ""), report.facts["language"])
            writer.writerow([spreadsheet_cell(cell) for cell in row])
    return "\ufeff" + out.getvalue()


def _citation_cells(citations: list[CitationEntry]) -> tuple[str, str]:
    """The markers by which a sentence cites one source ("[1] [3]"), and its citation's outcome (one
    per sentence and source: scoring/citations.py decides it from that source's verdicts)."""
    if not citations:
        return "", ""
    outcome = citations[0].words + (f": {citations[0].reason}" if citations[0].reason else "")
    return " ".join(dict.fromkeys(citation.marker for citation in citations)), outcome


def _citation_row(citations: list[CitationEntry], sentence: str, text_language: str) -> tuple:
    """A citation that has no evidence row (nothing of its source was judged for its sentence), in
    the evidence columns it has: its sentence, the source's title and address, why in `rationale`."""
    first = citations[0]
    try:
        host = urlsplit(first.url).hostname or ""
    except ValueError:
        host = ""
    return (
        sentence,
        "",
        "",
        first.title or first.url,
        first.url,
        host,
        "",
        "",
        "",
        first.reason,
        "no",
        "no",
        "",
        "no",
        text_language,
        "",
        "yes",
        *_citation_cells(citations),
    )
