"""A trail run's report in three formats (issue 26), from selectors.trail_result: Markdown and a
standalone HTML page, and a CSV with a row per node a claim's rounds read. Every claim, text,
step name and reasoning in them is outside content, made inert for its format here or in the
template (reports.py has the rules for each format)."""

import csv
import io

from django.template.loader import render_to_string

from verification.scoring import TRAIL_STATUS_WORDS, trail_verdict_words
from verification.web.reports import FORMULA_STARTS, markdown_text

CSV_COLUMNS = ("sentence", "claim", "verdict", "entered", "round", "round_verdict", "node", "selected", "summary")


def _claims_by_sentence(result: dict) -> list[dict]:
    claims = {(claim["sentence"], claim["index"]): claim for claim in result["claims"]}
    sentences = []
    for sentence in result["sentences"]:
        rows = [_with_marks(claims[(sentence["index"], index)]) for index in sentence["claims"]]
        sentences.append({**sentence, "number": sentence["index"] + 1, "claim_rows": rows})
    return sentences


def _with_marks(claim: dict) -> dict:
    """Each round's selections with the texts of their selected sentences, in order, and the
    verdicts in the reader's words (the page's), never their raw values."""
    rounds = [
        {
            **one,
            "verdict_words": trail_verdict_words(one["verdict"]),
            "selections": [
                {**selection, "marked": [selection["sentences"].get(i, "") for i in selection["sentence_ids"]]}
                for selection in one["selections"]
            ],
        }
        for one in claim["rounds"]
    ]
    return {**claim, "rounds": rounds, "verdict_words": claim["verdict_label"]}


def _facts(result: dict) -> str:
    """The run's status and usage in words, as the head of each report says them."""
    usage = result["usage"]
    reused = f" ({usage['llm_cached']} answers reused)" if usage.get("llm_cached") else ""
    status = TRAIL_STATUS_WORDS.get(result["status"], result["status"])
    return f"{status} · checked through {len(result['nodes'])} texts · {usage['llm_calls']} LLM calls{reused}"


def _title(result: dict, text: str) -> str:
    first = " ".join(text.split())
    return first[:80] + ("…" if len(first) > 80 else "")


def trail_report_markdown(result: dict, text: str, *, address: str) -> str:
    summary = result["summary"]
    lines = [
        f"# factsite trail report: “{markdown_text(_title(result, text))}”",
        "",
        f"{markdown_text(_facts(result))} · <{address}>",
        "",
        "## Where unsupported claims entered",
        "",
    ]
    entries = [f"- {entry['count']} at ‘{markdown_text(entry['step'])}’" for entry in summary["entered_at"]]
    if summary["entered_at_final_step"]:
        entries.append(f"- {summary['entered_at_final_step']} at the final step")
    if summary["entered_undetermined"]:
        entries.append(f"- {summary['entered_undetermined']} undetermined")
    lines += entries or ["- none"]
    lines += ["", "## Claims", ""]
    for sentence in _claims_by_sentence(result):
        score = "" if sentence["percent"] is None else f" ({sentence['percent']}% fully supported)"
        lines += [f"### S{sentence['number']}{score}", "", markdown_text(sentence["text"]), ""]
        for claim in sentence["claim_rows"]:
            lines.append(f"- **{markdown_text(claim['text'])}**: {markdown_text(claim['verdict_words'])}")
            if claim["entered"]:
                lines.append(f"  - {markdown_text(claim['entered']['words'])}")
            if claim["path"]:
                lines.append(f"  - supported down to: {markdown_text(', '.join(claim['path']['sources']))}")
            if claim["error"]:
                lines.append(f"  - {markdown_text(claim['error'])}")
            for one in claim["rounds"]:
                read = "; ".join(_selection_markdown(selection) for selection in one["selections"])
                lines.append(f"  - round {one['index']} ({markdown_text(one['verdict_words'])}): {read}")
        lines.append("")
    return "\n".join(lines)


def _selection_markdown(selection: dict) -> str:
    quoted = " ".join(f"“{markdown_text(text)}”" for text in selection["marked"])
    return f"{markdown_text(selection['node'])}: {quoted or 'nothing'}"


def trail_report_html(result: dict, text: str, *, address: str) -> str:
    context = {
        "result": result,
        "text": text,
        "title": _title(result, text),
        "address": address,
        "facts": _facts(result),
        "sentences": _claims_by_sentence(result),
    }
    return render_to_string("verification/reports/trail.html", context)


def trail_csv(result: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for sentence in _claims_by_sentence(result):
        for claim in sentence["claim_rows"]:
            entered = claim["entered"]["words"] if claim["entered"] else ""
            for one in claim["rounds"] or [{"index": "", "verdict_words": "", "selections": [{}]}]:
                for selection in one["selections"]:
                    row = (
                        sentence["number"],
                        claim["text"],
                        claim["verdict_words"],
                        entered,
                        one["index"],
                        one["verdict_words"],
                        selection.get("node", ""),
                        " ".join(selection.get("marked", [])),
                        selection.get("summary", ""),
                    )
                    writer.writerow([_cell(value) for value in row])
    return out.getvalue()


def _cell(value) -> str:
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
