"""PNG plots of an evaluation report.

Figures are built with matplotlib's object API (`Figure`, never pyplot): no global state, no
display, and saving to PNG renders with the Agg backend, so this runs in a worker or on a server.
A plot with nothing to show is still written, saying so, so the report always has its files."""

from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

BINS = [i / 10 for i in range(11)]
# The report's key for each dataset name.
SECTION_KEYS = {"favabench": "favabench", "claim-stance": "claim_stance", "segments": "segments"}


def write_plots(out_dir: Path, report: dict) -> list[Path]:
    plots = []
    if (section := _section(report, "favabench")) is not None:
        plots.append(_save(f1_by_subset(section), out_dir / "f1_by_model.png"))
        plots.append(_save(credibility_histograms(section), out_dir / "credibility.png"))
        if section.get("grid"):
            plots.append(_save(grid_f1(section["grid"]), out_dir / "grid_f1.png"))
    if (section := _section(report, "claim_stance")) is not None:
        plots.append(_save(confusion_heat_map(section), out_dir / "confusion.png"))
    if (section := _section(report, "segments")) is not None:
        plots.append(_save(boundary_scores(section), out_dir / "boundaries.png"))
    return plots


def _section(report: dict, key: str) -> dict | None:
    """The dataset's section; empty (plots saying "no items") when a run with no items left it out."""
    if key in report:
        return report[key] or {}
    return {} if SECTION_KEYS.get(report.get("dataset", "")) == key else None


def _save(figure: Figure, path: Path) -> Path:
    figure.savefig(path, format="png", dpi=100)
    return path


def _nothing_to_show(figure: Figure, title: str) -> Figure:
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.text(0.5, 0.5, "no items", ha="center", va="center", fontsize=14)
    axes.set_axis_off()
    return figure


def _bars_with_intervals(axes, names: list[str], scores: list[dict]) -> None:
    values = [s.get("f1", 0.0) for s in scores]
    intervals = [s.get("interval") or [v, v] for s, v in zip(scores, values, strict=True)]
    # Error bars are distances from the bar top; clipped at 0 in case an interval misses its point.
    below = [max(v - lo, 0.0) for v, (lo, _) in zip(values, intervals, strict=True)]
    above = [max(hi - v, 0.0) for v, (_, hi) in zip(values, intervals, strict=True)]
    axes.bar(names, values, yerr=[below, above], capsize=6, color="#4477aa")
    for x, value in enumerate(values):
        axes.text(x, value / 2, f"{value:.2f}", ha="center", color="white")
    axes.set_ylim(0, 1)
    axes.set_ylabel("F1 (not factual), 95% interval")


def f1_by_subset(section: dict) -> Figure:
    figure = Figure(figsize=(6, 4))
    by_model = sorted((section.get("by_model") or {}).items())
    overall = section.get("overall") or {}
    if not overall.get("sentences") and not by_model:
        return _nothing_to_show(figure, "F1 by model")
    axes = figure.add_subplot()
    names = [name for name, _ in by_model] + ["overall"]
    _bars_with_intervals(axes, names, [scores for _, scores in by_model] + [overall])
    axes.set_title(f"Non-factual sentences found (credibility < {section.get('threshold', 0.3)})")
    figure.tight_layout()
    return figure


def credibility_histograms(section: dict) -> Figure:
    figure = Figure(figsize=(6, 4))
    credibility = section.get("credibility") or {}
    factual, not_factual = credibility.get("factual") or [], credibility.get("not_factual") or []
    unscored = credibility.get("unscored") or {}
    if not factual and not not_factual and not any(unscored.values()):
        return _nothing_to_show(figure, "Credibility of sentences")
    axes = figure.add_subplot()
    axes.hist(
        [factual, not_factual],
        bins=BINS,
        label=[f"factual ({len(factual)})", f"not factual ({len(not_factual)})"],
        color=["#228833", "#ee6677"],
    )
    axes.axvline(section.get("threshold", 0.3), color="black", linestyle="--", label="threshold")
    axes.set_xlabel("credibility")
    axes.set_ylabel("sentences")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylim(bottom=0, top=max(axes.get_ylim()[1], 1))
    axes.set_title(
        f"Credibility by gold label (unscored: {unscored.get('factual', 0)} factual, "
        f"{unscored.get('not_factual', 0)} not factual)",
        fontsize=10,
    )
    axes.legend()
    figure.tight_layout()
    return figure


def grid_f1(grid: list[dict]) -> Figure:
    figure = Figure(figsize=(max(6, 1.4 * len(grid)), 4.5))
    axes = figure.add_subplot()
    names = ["\n".join(f"{k}={v}" for k, v in (row.get("settings") or {}).items()) or "defaults" for row in grid]
    _bars_with_intervals(axes, names, [row.get("overall") or {} for row in grid])
    axes.set_title("F1 per setting (all texts)")
    axes.tick_params(axis="x", labelsize=8)
    figure.tight_layout()
    return figure


def confusion_heat_map(section: dict) -> Figure:
    figure = Figure(figsize=(6, 4.5))
    confusion = section.get("confusion") or {}
    if not confusion:
        return _nothing_to_show(figure, "Judge against gold stances")
    rows = list(confusion)
    columns = list(next(iter(confusion.values())))
    counts = [[confusion[row].get(column, 0) for column in columns] for row in rows]
    axes = figure.add_subplot()
    image = axes.imshow(counts, cmap="Blues")
    figure.colorbar(image, ax=axes)
    axes.set_xticks(range(len(columns)), labels=columns, rotation=30, ha="right")
    axes.set_yticks(range(len(rows)), labels=rows)
    axes.set_xlabel("the judge's verdict")
    axes.set_ylabel("gold (stance mapped to a verdict)")
    largest = max((n for row in counts for n in row), default=0)
    for y, row in enumerate(counts):
        for x, n in enumerate(row):
            axes.text(x, y, str(n), ha="center", va="center", color="white" if n > largest / 2 else "black")
    axes.set_title(f"Judge against gold stances (accuracy {section.get('accuracy', 0.0):.2f})")
    figure.tight_layout()
    return figure


def boundary_scores(section: dict) -> Figure:
    figure = Figure(figsize=(5, 4))
    if not section.get("texts"):
        return _nothing_to_show(figure, "Sentence boundaries")
    axes = figure.add_subplot()
    names = ["precision", "recall", "F1"]
    values = [section.get(key, 0.0) for key in ("precision", "recall", "f1")]
    axes.bar(names, values, color="#4477aa")
    for x, value in enumerate(values):
        axes.text(x, value / 2, f"{value:.2f}", ha="center", color="white")
    axes.set_ylim(0, 1)
    axes.set_title(f"Sentence boundaries ({section.get('texts', 0)} texts)")
    figure.tight_layout()
    return figure
