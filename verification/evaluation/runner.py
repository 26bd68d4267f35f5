"""`manage.py evaluate`: a dataset's items through factsite, each result kept as it finishes
(journal.py), then the metrics (metrics.py) gathered into the report (report.py).

- favabench: every output verified as a whole run (engine.py); per sentence, credibility from the
  scoring module against the annotation's error spans; with --grid, every combination of settings
  on the same items.
- claim-stance: the judge step alone on each (claim, evidence) pair.
- segments: our sentence splitter against the reference segments (no model, no search)."""

import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from tqdm import tqdm

from verification.evaluation import datasets, engine, metrics, report
from verification.evaluation.journal import Journal, file_digest, settings_key
from verification.evaluation.plan import EvaluationError, Plan
from verification.pipeline import segment


def evaluate(plan: Plan, items: list) -> list[Path]:
    """Runs what is not done yet of `items` (load_items), then writes the report; returns the
    report's files."""
    started_at = datetime.now(UTC).isoformat()
    journal = Journal.open(plan.out, manifest(plan), resume=plan.resume)
    keys = plan.combinations()
    total = len(items) * len(keys)
    already = sum(journal.is_done(key, item.id) for key in keys for item in items)
    with tqdm(total=total, initial=already, desc=plan.dataset, unit="item", file=sys.stderr, dynamic_ncols=True) as bar:
        failures = 0

        def finished(key: str, item_id: str, line: dict) -> None:
            nonlocal failures
            journal.record(key, item_id, line)
            failures += item_failed(line)
            bar.set_postfix(failed=failures, refresh=False)
            bar.update(1)

        _run(plan, items, journal, keys, finished)
    document = build_report(plan, items, journal, started_at=started_at)
    return report.write_report(plan.out, document)


def item_failed(line: dict) -> bool:
    """A run that failed or was refused, or a judgement that gave no verdict."""
    return bool(line["failures"]["runs_failed"]) or ("predicted" in line and line["predicted"] is None)


def load_items(plan: Plan) -> list:
    """The dataset's items, every problem in the file reported before anything runs."""
    items = datasets.load(plan.dataset, plan.path, plan.limit)
    if plan.dataset == "segments":
        for item in items:
            reference(item, plan.path)  # a segment missing from its response stops us here, not at the end
    return items


def manifest(plan: Plan) -> dict:
    return {
        "dataset": plan.dataset,
        "file": str(plan.path),
        "file_sha256": file_digest(plan.path),
        "settings": plan.settings,
        "grid": [dict(overrides) for overrides in plan.grid],
        "limit": plan.limit,
    }


def _run(plan: Plan, items: list, journal: Journal, keys: dict[str, dict], finished) -> None:
    todo = [(key, item) for key in keys for item in items if not journal.is_done(key, item.id)]
    if plan.dataset == "favabench":
        jobs = [
            engine.TextJob(key=key, item_id=item.id, text=item.output, settings=_run_settings(keys[key]))
            for key, item in todo
        ]
        engine.verify_texts(
            jobs,
            concurrency=plan.concurrency,
            score_rule=plan.score_rule,
            finished=lambda job, line: finished(job.key, job.item_id, line),
        )
    elif plan.dataset == "claim-stance":
        key = next(iter(keys))
        pairs = ((item.id, item.claim, item.evidence) for _, item in todo)
        for item_id, line in engine.judge_pairs(pairs, model=plan.run_settings["model"], concurrency=plan.concurrency):
            finished(key, item_id, line)
    else:
        key = next(iter(keys))
        for _, item in todo:
            finished(key, item.id, segments_line(item.response))


def _run_settings(combination: dict) -> dict:
    return {name: value for name, value in combination.items() if name != "score_rule"}


def segments_line(response: str) -> dict:
    """Where our splitter ends sentences (the end of the text left out, as in the reference)."""
    ends = sorted({s.end for s in segment.segment(response) if response[s.end :].strip()})
    return {
        "predicted": ends,
        "cost": dict.fromkeys(engine.COST_KEYS, 0),
        "failures": dict.fromkeys(engine.FAILURE_KEYS, 0),
    }


def reference(item: datasets.SegmentsItem, path: Path) -> set[int]:
    try:
        return metrics.reference_boundaries(item.response, item.segments)
    except ValueError as error:
        raise EvaluationError(f"{path}, item {item.id}: {error}") from None


# --- the report


def build_report(plan: Plan, items: list, journal: Journal, *, started_at: str) -> dict:
    main = journal.lines(settings_key(plan.settings))
    lines = [main[item.id] for item in items if item.id in main]
    document = {
        "dataset": plan.dataset,
        "file": str(plan.path),
        "settings": {
            **plan.settings,
            **({"threshold": plan.threshold} if plan.dataset == "favabench" else {}),
            **({"grid": " ".join(plan.grid_spec)} if plan.grid_spec else {}),
            "concurrency": plan.concurrency,
        },
        "items": len(items),
        "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(),
    }
    if plan.dataset == "favabench":
        document["favabench"] = favabench_section(plan, items, journal)
    elif plan.dataset == "claim-stance":
        document["claim_stance"] = claim_stance_section(items, main)
    else:
        document["segments"] = segments_section(items, main, plan.path)
    document["cost"] = cost_section(lines)
    document["failures"] = {key: sum(line["failures"][key] for line in lines) for key in engine.FAILURE_KEYS}
    return document


def favabench_section(plan: Plan, items: list, journal: Journal) -> dict:
    scored = scored_texts(items, journal.lines(settings_key(plan.settings)))
    section = {
        **detection(scored, plan.threshold),
        "threshold": plan.threshold,
        "score_rule": plan.score_rule,
        "error_types": error_types(scored, plan.threshold),
        "credibility": credibility(scored),
    }
    if plan.grid:
        section["grid"] = [grid_entry(plan, items, journal, overrides) for overrides in plan.grid]
    return section


def grid_entry(plan: Plan, items: list, journal: Journal, overrides: dict) -> dict:
    lines = journal.lines(settings_key(plan.combination(overrides)))
    return {"settings": dict(overrides), **detection(scored_texts(items, lines), plan.threshold)}


def scored_texts(items: list, lines: dict[str, dict]) -> list[tuple[datasets.FavaItem, list]]:
    """(item, its sentences as [start, end, credibility]) for every text that was verified; a
    text the form refused has no sentences and is left out of the metrics (it is a failure)."""
    verified = [item for item in items if (lines.get(item.id) or {}).get("sentences") is not None]
    return [(item, lines[item.id]["sentences"]) for item in verified]


def labelled(item: datasets.FavaItem, sentences: list, threshold: float) -> list[tuple[bool, bool]]:
    """(gold not factual, predicted not factual) per sentence of one text."""
    return [
        (not metrics.sentence_is_factual(start, end, item.errors), metrics.predict_not_factual(score, threshold))
        for start, end, score in sentences
    ]


def detection(scored: list, threshold: float) -> dict:
    """Overall and per model (FavaBench's `model`: chatgpt, llama), each with its interval."""
    by_model: dict[str, list] = {}
    for item, sentences in scored:
        by_model.setdefault(item.model, []).append(labelled(item, sentences, threshold))
    every_text = [text for texts in by_model.values() for text in texts]
    return {"overall": summary(every_text), "by_model": {model: summary(texts) for model, texts in by_model.items()}}


def summary(texts: list[list[tuple[bool, bool]]]) -> dict:
    pairs = [pair for text in texts for pair in text]
    low, high = metrics.bootstrap_interval(texts)
    return {**metrics.binary(pairs).to_dict(), "interval": [low, high], "sentences": len(pairs), "texts": len(texts)}


def error_types(scored: list, threshold: float) -> dict:
    return metrics.error_types_caught(
        (
            span.type,
            metrics.span_caught(
                span, [(start, end, metrics.predict_not_factual(score, threshold)) for start, end, score in sentences]
            ),
        )
        for item, sentences in scored
        for span in item.errors
    )


def credibility(scored: list) -> dict:
    """Every scored sentence's credibility by gold label (for the plots), and how many had none."""
    found = {"factual": [], "not_factual": [], "unscored": {"factual": 0, "not_factual": 0}}
    for item, sentences in scored:
        for start, end, score in sentences:
            label = "factual" if metrics.sentence_is_factual(start, end, item.errors) else "not_factual"
            if score is None:
                found["unscored"][label] += 1
            else:
                found[label].append(score)
    return found


def claim_stance_section(items: list, lines: dict[str, dict]) -> dict:
    pairs = [
        (metrics.STANCE_TO_VERDICT[item.stance], lines[item.id]["predicted"]) for item in items if item.id in lines
    ]
    return {**metrics.classification(pairs), "mapping": dict(metrics.STANCE_TO_VERDICT)}


def segments_section(items: list, lines: dict[str, dict], path: Path) -> dict:
    """Boundaries pooled over texts (micro-averaged): each text's matches are counted apart,
    then summed."""
    done = [item for item in items if item.id in lines]
    totals = Counter()
    for item in done:
        scores = metrics.boundary_scores(set(lines[item.id]["predicted"]), reference(item, path))
        totals.update({name: scores[name] for name in ("tp", "fp", "fn")})
    pooled = metrics.Binary(tp=totals["tp"], fp=totals["fp"], fn=totals["fn"]).to_dict()
    del pooled["tn"]  # every other character of the texts: not a meaningful count
    return {**pooled, "texts": len(done)}


def cost_section(lines: list[dict]) -> dict:
    total = {key: sum(line["cost"][key] for line in lines) for key in engine.COST_KEYS}
    total["seconds"] = round(total["seconds"], 3)
    return {
        "per_text": {key: round(value / len(lines), 3) if lines else 0 for key, value in total.items()},
        "total": total,
    }
