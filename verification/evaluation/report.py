"""An evaluation's report dict (built by runner.py) → report.json, report.md and PNG plots.

Every section reads the dict with defaults, so a run that evaluated no items, or whose dataset
section is partial, still writes all its files and says so instead of failing at the end."""

import json
from collections.abc import Iterable
from pathlib import Path

from .plots import write_plots

COST_FIELDS = (
    ("llm_calls", "LLM calls"),
    ("prompt_tokens", "prompt tokens"),
    ("completion_tokens", "completion tokens"),
    ("searches", "searches"),
    ("pages", "pages read"),
    ("seconds", "seconds"),
)
FAILURE_FIELDS = (
    ("runs_failed", "runs that failed"),
    ("sentences", "sentences"),
    ("claims", "claims"),
    ("pages", "pages"),
    ("evidence", "evidence judgements"),
)
DATASET_TITLES = {"favabench": "FavaBench", "claim-stance": "claim-stance", "segments": "segments"}


def write_report(out_dir: Path, report: dict) -> list[Path]:
    """Writes the report's files into out_dir (created if needed); returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "report.json"
    json_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    plots = write_plots(out_dir, report)
    markdown_path = out_dir / "report.md"
    markdown_path.write_text(render_markdown(report, [p.name for p in plots]), encoding="utf-8")
    return [json_path, markdown_path, *plots]


def render_markdown(report: dict, plot_names: Iterable[str] = ()) -> str:
    dataset = report.get("dataset", "")
    lines = [f"# factsite accuracy on {DATASET_TITLES.get(dataset, dataset or 'an unnamed dataset')}", ""]
    lines += _overview(report)
    if not report.get("items"):
        lines += ["**No items were evaluated**: the file had none, or `--limit` was 0.", ""]
    if "favabench" in report:
        lines += _favabench(report["favabench"])
    if "claim_stance" in report:
        lines += _claim_stance(report["claim_stance"])
    if "segments" in report:
        lines += _segments(report["segments"])
    lines += _cost(report.get("cost") or {})
    lines += _failures(report.get("failures") or {})
    lines += ["## Plots", ""] + [f"![{name}]({name})" for name in plot_names] + [""]
    return "\n".join(lines)


def _number(value, digits: int = 3) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value) if value is not None else "–"


def _amount(value) -> str:
    """Counts and seconds without trailing zeros: 4200 tokens, 6.5 calls, 42.25 s."""
    return f"{value:.2f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _table(header: list[str], rows: Iterable[Iterable]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_number(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _overview(report: dict) -> list[str]:
    settings = report.get("settings") or {}
    rows = [
        ("file", f"`{report.get('file', '')}`"),
        ("items", report.get("items", 0)),
        ("started", report.get("started_at", "")),
        ("finished", report.get("finished_at", "")),
        ("settings", ", ".join(f"{key}={value}" for key, value in settings.items()) or "defaults"),
    ]
    return _table(["", ""], rows)


def _interval(scores: dict) -> str:
    low, high = (scores.get("interval") or [None, None])[:2]
    return f"[{_number(low)}, {_number(high)}]" if low is not None else "–"


def _detection_rows(section: dict) -> list[list]:
    subsets = [(name, scores) for name, scores in sorted((section.get("by_model") or {}).items())]
    subsets.append(("**overall**", section.get("overall") or {}))
    return [
        [
            name,
            scores.get("texts", 0),
            scores.get("sentences", 0),
            scores.get("precision", 0.0),
            scores.get("recall", 0.0),
            scores.get("f1", 0.0),
            _interval(scores),
            scores.get("tp", 0),
            scores.get("fp", 0),
            scores.get("fn", 0),
            scores.get("tn", 0),
        ]
        for name, scores in subsets
    ]


def _favabench(section: dict) -> list[str]:
    threshold, rule = section.get("threshold", 0.3), section.get("score_rule", "all")
    lines = [
        "## Detecting non-factual sentences (FavaBench)",
        "",
        "Protocol of the FACTS&EVIDENCE paper: a sentence of the output is **not factual** when it overlaps "
        f"an annotated error span; factsite predicts not factual when the sentence's credibility < {threshold} "
        f"(score rule `{rule}`), or when it has no score. Precision, recall and F1 are of the class "
        "*not factual*; intervals are 95% bootstrap intervals over texts.",
        "",
    ]
    header = ["subset", "texts", "sentences", "precision", "recall", "F1", "95% interval", "TP", "FP", "FN", "TN"]
    lines += _table(header, _detection_rows(section))
    types = section.get("error_types") or {}
    if types:
        lines += [
            "### Error types caught",
            "",
            "An error span is caught when a sentence it overlaps is predicted not factual.",
            "",
        ]
        rows = [
            [
                name,
                n["caught"],
                n["missed"],
                n["caught"] / (n["caught"] + n["missed"]) if n["caught"] + n["missed"] else 0.0,
            ]
            for name, n in types.items()
        ]
        lines += _table(["type", "caught", "missed", "share caught"], rows)
    unscored = (section.get("credibility") or {}).get("unscored") or {}
    lines += [
        "### Unscored sentences",
        "",
        f"{unscored.get('factual', 0)} factual and {unscored.get('not_factual', 0)} not-factual sentences got no score "
        "(no evidence counted) and were predicted not factual.",
        "",
    ]
    if section.get("grid"):
        lines += _grid(section["grid"])
    return lines


def _setting_label(settings: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in settings.items()) or "defaults"


def _grid(grid: list[dict]) -> list[str]:
    models = sorted({model for row in grid for model in (row.get("by_model") or {})})
    rows = []
    for row in grid:
        overall, by_model = row.get("overall") or {}, row.get("by_model") or {}
        cells = [(by_model.get(model) or {}).get("f1", 0.0) for model in models]
        rows.append([_setting_label(row.get("settings") or {}), *cells, overall.get("f1", 0.0), _interval(overall)])
    header = ["settings", *(f"F1 {model}" for model in models), "F1 overall", "95% interval"]
    return ["### Ablation grid", "", *_table(header, rows)]


def _claim_stance(section: dict) -> list[str]:
    mapping = section.get("mapping") or {}
    lines = [
        "## The judge against gold stances (claim-stance)",
        "",
        f"Accuracy **{_number(section.get('accuracy', 0.0))}** over {section.get('total', 0)} pairs "
        f"({section.get('failed', 0)} judgements failed and count as wrong); "
        f"macro F1 {_number(section.get('macro_f1', 0.0))}.",
        "",
        "Gold stances are mapped to our verdicts as follows "
        "(a claim only partly supported is not supported as a whole):",
        "",
        *_table(["gold stance", "our verdict"], mapping.items()),
    ]
    per_class = section.get("per_class") or {}
    rows = [[label, s["precision"], s["recall"], s["f1"], s["support"]] for label, s in per_class.items()]
    lines += _table(["verdict", "precision", "recall", "F1", "support"], rows)
    confusion = section.get("confusion") or {}
    columns = list(next(iter(confusion.values()), {}))
    lines += ["Confusion (rows: gold, columns: the judge's verdict):", ""]
    lines += _table(
        ["gold \\ judge", *columns], ([gold, *(row.get(c, 0) for c in columns)] for gold, row in confusion.items())
    )
    return lines


def _segments(section: dict) -> list[str]:
    row = [
        section.get(key, 0.0 if key in ("precision", "recall", "f1") else 0)
        for key in ("precision", "recall", "f1", "tp", "fp", "fn", "texts")
    ]
    return [
        "## Sentence boundaries (segments)",
        "",
        "A boundary is where a sentence ends; the end of each text is left out, as every splitter finds it.",
        "",
        *_table(["precision", "recall", "F1", "TP", "FP", "FN", "texts"], [row]),
    ]


def _cost(cost: dict) -> list[str]:
    per_text, total = cost.get("per_text") or {}, cost.get("total") or {}
    rows = [[label, _amount(per_text.get(key, 0)), _amount(total.get(key, 0))] for key, label in COST_FIELDS]
    return ["## Cost and time", "", *_table(["", "per text (mean)", "total"], rows)]


def _failures(failures: dict) -> list[str]:
    rows = [[label, failures.get(key, 0)] for key, label in FAILURE_FIELDS]
    return [
        "## Failures",
        "",
        "What failed along the way (failed parts count as finished, not as evidence):",
        "",
        *_table(["step", "count"], rows),
    ]
