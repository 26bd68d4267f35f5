"""The benchmark's results as Markdown (the README's table is pasted from it), its goals, and
where the time went, read from the workers' own task log (`Task … succeeded in 0.52s`)."""

import re
import statistics
import time
from collections import defaultdict
from pathlib import Path

GOAL_WARM = 1.5
GOAL_COLD = 2.0
GOAL_POSTGRES = 1.10
GOAL_FAULTS = 2.0
GOAL_FIRST_COLOURED = 2.0  # × the first claim's critical path
GOAL_TOKENS = 0.5  # × the baseline's tokens per answer
STEPS = {
    "verification_start": "start",
    "sentence_decompose": "decompose",
    "claim_search": "search",
    "source_fetch": "fetch",
    "evidence_judge": "judge",
    "host_categorize": "categorize",
    "hosts_categorize": "categorize",
}
MAIN_STEPS = ["decompose", "search", "fetch", "judge"]
_TASK_LINE = re.compile(
    r"^\[(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(?P<ms>\d{3}): \w+/[^\]]*\] Task (?P<task>[\w.]+)\[[^\]]+\] "
    r"(?:succeeded in (?P<runtime>[\d.e-]+)s|(?P<retry>retry)|(?P<failed>raised unexpected))"
)


def task_times(logs: list[Path], start: float, end: float) -> dict:
    """Per step, the tasks that ended within [start, end]: how many, their run times (p50, max,
    total) and when the last one ended (seconds after `start`); retries and failures."""
    runtimes: dict[str, list[float]] = defaultdict(list)
    last_end: dict[str, float] = {}
    retries = failures = 0
    for log in logs:
        if not log.exists():
            continue
        for line in log.read_text(errors="replace").splitlines():
            match = _TASK_LINE.match(line)
            if not match:
                continue
            at = time.mktime(time.strptime(match["at"], "%Y-%m-%d %H:%M:%S")) + int(match["ms"]) / 1000
            # Log times are to the millisecond; the end was polled (20 ms): nothing of the next
            # measurement can end within this slack.
            if not start - 0.05 <= at <= end + 0.05:
                continue
            if match["retry"]:
                retries += 1
                continue
            if match["failed"]:
                failures += 1
                continue
            step = STEPS.get(match["task"].rsplit(".", 1)[-1], match["task"].rsplit(".", 1)[-1])
            runtimes[step].append(float(match["runtime"]))
            last_end[step] = max(last_end.get(step, 0.0), at - start)
    steps = {
        step: {
            "count": len(values),
            "p50_s": round(statistics.median(values), 3),
            "max_s": round(max(values), 3),
            "total_s": round(sum(values), 1),
            "last_end_s": round(last_end[step], 2),
        }
        for step, values in sorted(runtimes.items())
    }
    return {"steps": steps, "retries": retries, "failures": failures}


def goals(rows: list[dict], concurrent: int, faults: list[dict] = (), baseline: list[dict] | None = None) -> list[dict]:
    """Pass/fail of each goal as issues 8 and 15 set them: on realistic pages (on small ones
    when only they were measured), the ratio goals for a run alone and its first coloured
    sentence within 2× its first claim's critical path, all runs finishing for the concurrent
    ones (their ratio is shown, but 20 runs' CPU on 2 cores cannot fit in one run's critical
    path), PostgreSQL within 10% of SQLite, faults within 2× the fault-free time, and, against
    a baseline, tokens per answer at most half of its."""
    result = []
    rows = [r for r in rows if r["pages"] == graded_pages(rows)]
    alone = [r for r in rows if r["runs"] == 1]
    result += _path_goals(alone, "ratio", "first_claim_path_s", "")
    # Again on the stricter path that starts a streamed claim's chain when its line was written,
    # not when its decompose call ended (bench/calls.py): with a streamed answer a claim's search
    # starts before that call ends, time the path still counts. For rows measured with it
    # (where no answer was streamed, the two paths are the same).
    measured = [r for r in alone if r.get("bound_written_s")]
    result += _path_goals(measured, "ratio_written", "first_claim_written_path_s", ", path from claims' lines written")
    scope = [r for r in rows if r["runs"] == concurrent and concurrent > 1]
    if scope:
        short = [r for r in scope if not r["all_done"]]
        result.append(
            {
                "goal": f"{concurrent} concurrent runs all finish",
                "pass": not short,
                "detail": "; ".join(f"{_where(r)}: {r['finished']}" for r in short) or f"{len(scope)} of {len(scope)}",
            }
        )
    pairs = []
    for pg in (r for r in rows if r["db"] == "postgresql"):
        lite = next((r for r in rows if r["db"] == "sqlite" and _key(r) == _key(pg)), None)
        if lite and lite["wall_s"] and pg["wall_s"]:
            pairs.append((pg["wall_s"] / lite["wall_s"], pg))
    if pairs:
        worst_ratio, worst = max(pairs, key=lambda p: p[0])
        over = [p for p in pairs if p[0] > GOAL_POSTGRES]
        result.append(
            {
                "goal": "PostgreSQL within 10% of SQLite",
                "pass": not over,
                "detail": f"worst {worst_ratio:.2f}× ({_where(worst)}); {len(over)} of {len(pairs)} over",
            }
        )
    clean = next((f for f in faults if not f["fail_rate"]), None)
    for faulty in (f for f in faults if f["fail_rate"]):
        slower = faulty["wall_s"] / clean["wall_s"] if clean and clean["wall_s"] and faulty["wall_s"] else None
        result.append(
            {
                "goal": f"{faulty['fail_rate']:.0%} of LLM calls failing: {faulty['runs']} runs finish within "
                f"{GOAL_FAULTS:g}× their fault-free time",
                "pass": bool(faulty["all_finished"] and slower is not None and slower <= GOAL_FAULTS),
                "detail": f"{faulty['finished']} in {_seconds(faulty['wall_s'])} against "
                f"{_seconds(clean and clean['wall_s'])} without faults" + (f" ({slower:.2f}×)" if slower else ""),
            }
        )
    compared = [c for c in baseline or [] if c["pages"] == graded_pages(rows) and c["tokens_ratio"] is not None]
    if compared:
        worst = max(compared, key=lambda c: c["tokens_ratio"])
        result.append(
            {
                "goal": f"tokens per answer ≤ {GOAL_TOKENS:.0%} of the baseline's",
                "pass": all(c["tokens_ratio"] <= GOAL_TOKENS for c in compared),
                "detail": f"worst {worst['tokens_ratio']:.2f}× ({_where(worst)}); calls {worst['calls_ratio']:.2f}×",
            }
        )
    return result


def _path_goals(rows: list[dict], ratio: str, first_path: str, which: str) -> list[dict]:
    """The ratio goals (warm, cold) and the first-colour goals of runs alone, with the ratio and
    the first claim's path of the row's keys `ratio` and `first_path`."""
    result = []
    for state, limit in (("warm", GOAL_WARM), ("cold", GOAL_COLD)):
        scope = [r for r in rows if r["state"] == state and r[ratio] is not None]
        if scope:
            worst = max(scope, key=lambda r: r[ratio])
            over = [r for r in scope if r[ratio] > limit]
            result.append(
                {
                    "goal": f"{state} ratio ≤ {limit} (1 run){which}",
                    "pass": not over and all(r["all_done"] for r in scope),
                    "detail": f"worst {worst[ratio]:.2f} ({_where(worst)}); {len(over)} of {len(scope)} over",
                }
            )
    for state in ("warm", "cold"):
        scope = [r for r in rows if r["state"] == state and r.get(first_path)]
        if scope:
            late = [r for r in scope if not _first_in_time(r, first_path)]
            worst = max(scope, key=lambda r: (r["first_coloured_s"] or float("inf")) / r[first_path])
            result.append(
                {
                    "goal": f"{state}: first coloured sentence ≤ {GOAL_FIRST_COLOURED:g}× the first claim's critical "
                    f"path (1 run){which}",
                    "pass": not late,
                    "detail": f"worst {_seconds(worst['first_coloured_s'])} against {worst[first_path]:.2f} s "
                    f"({_where(worst)}); {len(late)} of {len(scope)} over",
                }
            )
    return result


def _first_in_time(row: dict, path: str = "first_claim_path_s") -> bool:
    first = row.get("first_coloured_s")
    return first is not None and first <= GOAL_FIRST_COLOURED * row[path]


def _per_answer(row: dict) -> dict:
    """Calls and tokens per answer by kind; for results from before the calls were recorded,
    the runs' own totals (all kinds together)."""
    if "llm_per_answer" in row:
        return row["llm_per_answer"]
    runs = max(1, row["runs"])
    return {
        "all": {
            "calls": row["llm_calls"] / runs,
            "prompt_tokens": row["prompt_tokens"] / runs,
            "completion_tokens": row["completion_tokens"] / runs,
        }
    }


def _tokens(usage: dict) -> float:
    return usage["prompt_tokens"] + usage["completion_tokens"]


def compare(rows: list[dict], baseline: dict) -> list[dict]:
    """Each row's tokens and LLM calls per answer against the baseline's row of the same
    database, pages, workers and runs: the ratios, in all and by kind."""
    theirs = {(r["db"], *_key(r)): r for r in baseline.get("rows", [])}
    result = []
    for row in rows:
        before = theirs.get((row["db"], *_key(row)))
        if not before:
            continue
        now, then = _per_answer(row), _per_answer(before)
        kinds = {}
        for kind in sorted(now.keys() & then.keys()):
            kinds[kind] = {
                "tokens": round(_tokens(now[kind]), 1),
                "baseline_tokens": round(_tokens(then[kind]), 1),
                "tokens_ratio": _ratio(_tokens(now[kind]), _tokens(then[kind])),
                "calls": now[kind]["calls"],
                "baseline_calls": then[kind]["calls"],
                "calls_ratio": _ratio(now[kind]["calls"], then[kind]["calls"]),
            }
        every = kinds.get("all", {})
        result.append(
            {
                "db": row["db"],
                "pages": row["pages"],
                "state": row["state"],
                "runs": row["runs"],
                "tokens_ratio": every.get("tokens_ratio"),
                "calls_ratio": every.get("calls_ratio"),
                "kinds": kinds,
                "baseline_commit": baseline.get("environment", {}).get("commit"),
            }
        )
    return result


def _ratio(now: float, then: float) -> float | None:
    return round(now / then, 2) if then else None


def graded_pages(rows: list[dict]) -> str:
    return "realistic" if any(r["pages"] == "realistic" for r in rows) else "small"


def _row_goal(row: dict, graded: str) -> str:
    """A run alone: its ratio goal; runs at once: that they all finish; other pages: none."""
    if row["pages"] != graded:
        return "–"
    if row["runs"] > 1:
        return "✓" if row["all_finished"] else "✗"
    limit = GOAL_WARM if row["state"] == "warm" else GOAL_COLD
    in_time = row["all_done"] and row["ratio"] is not None and row["ratio"] <= limit
    return "✓" if in_time and (not row.get("first_claim_path_s") or _first_in_time(row)) else "✗"


def _number(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def _llm_timing(settings: dict) -> str:
    text = f"LLM {settings['llm_first_token']} s to the first token"
    if settings.get("llm_prompt_tokens_per_s"):
        text += f" plus the prompt at {settings['llm_prompt_tokens_per_s']:g} tokens/s"
    if settings.get("llm_tokens_per_s"):
        text += f", then {settings['llm_tokens_per_s']:g} tokens/s"
    if settings.get("llm_latency"):
        text += f", plus {settings['llm_latency']} s a call"
    return text


def _seconds(value) -> str:
    return "–" if value is None else f"{value:.1f} s"


def _key(row: dict) -> tuple:
    return row["pages"], row["state"], row["runs"]


def _runs(runs: int) -> str:
    return "1 run" if runs == 1 else f"{runs} concurrent runs"


def _where(row: dict) -> str:
    return f"{row['db']}, {row['pages']} pages, {row['state']}, {_runs(row['runs'])}"


def _kb(size: int) -> str:
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    return f"{size / 1000:.0f} KB" if size >= 1000 else f"{size} B"


def _others(results: dict) -> str:
    return f"{sum(max(0.0, r['cpu']['others_s']) for r in results['rows']):.0f}"


def _step(step: dict, ends: bool = True) -> str:
    text = f"{step['p50_s']:.2f} / {step['max_s']:.2f} ({step['count']})"
    return text + (f", ends {step['last_end_s']:.1f}" if ends else "")


def markdown(results: dict) -> str:
    s, env = results["settings"], results["environment"]
    lines = []
    if results.get("app_changed"):
        lines += ["**The app's files changed while this ran: its rows may measure different code.**", ""]
    lines += [
        f"Measured {env['date']} at commit {env['commit']}{' with uncommitted app changes' if env['dirty'] else ''}: "
        f"{env['cores']} cores ({env['cpu']}), {env['memory_gb']} GB, Python {env['python']}, {env['redis']}, "
        f"SQLite {env['sqlite']}, {env.get('postgresql') or 'no PostgreSQL'}; load average {env['load_average']} at "
        f"the start, and other processes on the machine used {_others(results)} CPU seconds while it measured. "
        f"{len(results['worker_commands'])} app process(es): "
        + "; ".join(f"`{c}`" for c in results["worker_commands"])
        + f". Retrieval mode {s['mode']}; simulated services: {_llm_timing(s)}; search "
        f"{s['search_latency']} s, page {s['page_latency']} s.",
        "",
        "Pages served by the simulated web sites:",
        "",
        "| pages | count | size (min / median / max) | article sentences (min / median / max) |",
        "| --- | ---: | --- | --- |",
    ]
    for name, p in results["pages"].items():
        lines.append(
            f"| {name} | {p['pages']} | {_kb(p['bytes_min'])} / {_kb(p['bytes_median'])} / {_kb(p['bytes_max'])} | "
            f"{p['sentences_min']} / {p['sentences_median']} / {p['sentences_max']} |"
        )
    lines += [
        "",
        "Critical path: for each claim, the chain of calls it waited on — the decompose call that produced it, "
        "the search for its query, the slowest fetch of its pages, the slowest judge call about it — priced at "
        "the seconds those calls took in the simulated services (matched by their text: prompt, query, URL). A "
        "run's critical path is its longest chain (nothing could finish it sooner, with no CPU and nothing "
        "waiting; for runs at once, the longest of any); ratio = wall ÷ critical path. First coloured: "
        "seconds from submission until a judged evidence item of the run is in the database (polled every "
        "20 ms; a sentence has a score from its first judged item), against the first claim's path, the "
        "shortest chain up to its first judge call (medians over the runs when several). The goal column "
        "grades the rows the issues set goals for (realistic pages): a run alone against the ratio goals "
        "(warm ≤ 1.5, cold ≤ 2.0) and first coloured ≤ 2× the first claim's path, runs at once on finishing "
        "at all; small pages are for comparison. Cold: fresh worker processes, the runs submitted as soon as "
        "they are started, so their start-up is in the wall time (when the last worker logged `ready` is "
        "shown); warm: the same workers, right after. Caches are emptied before every measurement. CPU s per "
        "run: the workers', Redis's and the database server's, ÷ runs. Where the model's answers were "
        "streamed, the ratio and the first claim's path are also given (after them) on the stricter path "
        "that starts a claim's chain when its line was written rather than when its decompose call ended.",
        "",
        "| database | pages | workers | runs | wall s (median run) | critical path s | ratio | first coloured s "
        "(first claim's path s) | finished | CPU s per run | LLM calls | evidence | pages failed | "
        "workers ready after s | goal |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | :---: |",
    ]
    graded = graded_pages(results["rows"])
    for r in results["rows"]:
        wall = "–" if r["wall_s"] is None else f"{r['wall_s']:.2f}"
        if r["runs"] > 1 and r["run_wall_p50_s"] is not None:
            wall += f" ({r['run_wall_p50_s']:.2f})"
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.2f}"
        mark = _row_goal(r, graded)
        first = f"{_number(r['first_coloured_s'])} ({_number(r['first_claim_path_s'])})"
        if r.get("bound_written_s"):  # the stricter path (the same for answers that were not streamed)
            ratio += f" ({_number(r['ratio_written'])} / {_number(r['bound_written_s'])})"
            first = first[:-1] + f" / {_number(r['first_claim_written_path_s'])})"
        lines.append(
            f"| {r['db']} | {r['pages']} | {r['state']} | {r['runs']} | {wall} | {_number(r['bound_s'])} | {ratio} | "
            f"{first} | {r['finished']} | {r['cpu_per_run_s']:.1f} | {r['llm_calls']} | {r['evidence']} | "
            f"{r['sources_failed']} | {'–' if r.get('workers_ready_s') is None else r['workers_ready_s']} | {mark} |"
        )
    lines += [
        "",
        "LLM calls and tokens per answer (a submitted text), by kind, as the simulated LLM counted them "
        "(a token is 4 characters; failed attempts count as calls); the critical path's steps (seconds) of "
        "the row's longest chain:",
        "",
        "| database | pages | workers | runs | kind | calls | prompt tokens | completion tokens | "
        "critical path: decompose / search / page / judge s |",
        "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for r in results["rows"]:
        steps = r.get("path_steps_s") or {}
        shown = " / ".join(f"{steps[k]:.2f}" for k in ("decompose", "search", "page", "judge")) if steps else "–"
        for kind, usage in sorted(r["llm_per_answer"].items(), key=lambda item: item[0] == "all"):
            lines.append(
                f"| {r['db']} | {r['pages']} | {r['state']} | {r['runs']} | {kind} | {usage['calls']:g} | "
                f"{usage['prompt_tokens']:g} | {usage['completion_tokens']:g} | {shown if kind == 'all' else ''} |"
            )
    if results.get("baseline"):
        lines += [
            "",
            f"Against the baseline (commit {results['baseline'][0]['baseline_commit']}): tokens (prompt + "
            "completion) and LLM calls per answer, now ÷ then:",
            "",
            "| database | pages | workers | runs | kind | tokens now / then | ratio | calls now / then | ratio |",
            "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: |",
        ]
        for c in results["baseline"]:
            for kind, k in sorted(c["kinds"].items(), key=lambda item: item[0] == "all"):
                lines.append(
                    f"| {c['db']} | {c['pages']} | {c['state']} | {c['runs']} | {kind} | {k['tokens']:g} / "
                    f"{k['baseline_tokens']:g} | {_number(k['tokens_ratio'])} | {k['calls']:g} / "
                    f"{k['baseline_calls']:g} | {_number(k['calls_ratio'])} |"
                )
    if results.get("faults"):
        lines += [
            "",
            "Faults: the same runs at once on warm workers, first with a share of the LLM's answers failing (HTTP "
            "429, 500 or 503, drawn at random per attempt), then without faults; what still failed after the "
            "retries is counted per item:",
            "",
            "| database | pages | runs | LLM calls failing | wall s (median run) | finished | LLM requests (answers "
            "used) | sentences / claims / evidence failed |",
            "| --- | --- | ---: | ---: | ---: | --- | ---: | --- |",
        ]
        for f in results["faults"]:
            wall = "–" if f["wall_s"] is None else f"{f['wall_s']:.2f} ({f['run_wall_p50_s']:.2f})"
            lines.append(
                f"| {f['db']} | {f['pages']} | {f['runs']} | {f['fail_rate']:.0%} | {wall} | {f['finished']} | "
                f"{f['llm_requests']} ({f['llm_calls']}) | "
                f"{f['sentences_failed']} / {f['claims_failed']} / {f['evidence_failed']} |"
            )
    lines += ["", "| goal | result | detail |", "| --- | :---: | --- |"]
    lines += [f"| {g['goal']} | {'PASS' if g['pass'] else 'FAIL'} | {g['detail']} |" for g in results["goals"]]
    lines += [
        "",
        "Where the time went: each step's task run time in the workers (median / max seconds, and how many), "
        "when the step's last task ended (seconds after submission), Celery retries and failures; CPU seconds "
        "used by the workers (by Redis and the database server / the measuring client / the simulated services / "
        "other processes on the machine), and the app's share of the cores over the wall time:",
        "",
        "| database | pages | workers | runs | " + " | ".join(MAIN_STEPS) + " | other | retries / failures | CPU s | "
        "app's share of the cores |",
        "| --- | --- | --- | ---: |" + " --- |" * len(MAIN_STEPS) + " --- | ---: | --- | ---: |",
    ]
    for r in results["rows"]:
        steps = r["tasks"]["steps"]
        cells = [_step(steps[m]) if m in steps else "–" for m in MAIN_STEPS]
        other = ", ".join(f"{k} {_step(v, ends=False)}" for k, v in steps.items() if k not in MAIN_STEPS)
        cpu = r["cpu"]
        app = cpu["workers_s"] + cpu["redis_db_s"]
        busy = app / (r["wall_s"] * results["environment"]["cores"]) if r["wall_s"] else 0
        lines.append(
            f"| {r['db']} | {r['pages']} | {r['state']} | {r['runs']} | {' | '.join(cells)} | {other or '–'} | "
            f"{r['tasks']['retries']} / {r['tasks']['failures']} | {cpu['workers_s']:.1f} ({cpu['redis_db_s']:.1f} / "
            f"{cpu['client_s']:.1f} / {cpu['bench_s']:.1f} / {cpu['others_s']:.1f}) | {busy:.0%} |"
        )
    for db, extra in results.get("extras", {}).items():
        e, c = extra.get("edited_rerun"), extra.get("recompute")
        if e:
            lines.append(
                f"\n{db}, {extra['pages']} pages, warm: an edited text (one sentence changed, caches kept) made "
                f"{e['llm_calls']} LLM calls and {e['searches']} searches in {e['wall_s']:.2f} s."
            )
        if c:
            lines.append(
                f"{db}: live recompute of a run with {c['evidence']} evidence items, server-side: "
                f"p50 {c['p50_ms']} ms, p95 {c['p95_ms']} ms."
            )
    for note in results.get("skipped", []):
        lines.append(f"\nSkipped: {note}")
    return "\n".join(lines) + "\n"
