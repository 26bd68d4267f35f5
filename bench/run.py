"""The factsite benchmark: full verifications through the real Celery path — `celery worker`
processes on a real Redis, SQLite or PostgreSQL — against simulated services on 127.0.0.1 with
set latencies (an OpenAI-compatible LLM, a Serper-compatible search, web sites), on small pages
and on realistic ones (50 KB–1 MB, bench/pages.py); one run alone and many at once; on fresh
workers (cold) and on the same workers right after (warm).

    .venv/bin/python bench/run.py                  # everything: a table, bench/results/latest.{json,md}
    .venv/bin/python bench/run.py --quick          # a fast pass with tiny latencies (the tests' smoke run)
    .venv/bin/python bench/run.py --databases sqlite --pages realistic --runs 5

Needs redis-server on PATH (scripts/test.sh installs it); PostgreSQL rows need its binaries
(Debian: /usr/lib/postgresql/<version>/bin), and are skipped with a message without them.
Whatever happens (an error, Ctrl-C, SIGTERM), every process it started is stopped."""

import argparse
import contextlib
import hashlib
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.app import App, Measurer, app_processes  # noqa: E402
from bench.calls import CallLog, critical_path, median, usage_by_kind  # noqa: E402
from bench.chat import chatbot_answers  # noqa: E402
from bench.laptop import PROFILE as LAPTOP  # noqa: E402
from bench.pages import build_realistic_sites, describe  # noqa: E402
from bench.prose import topic_of  # noqa: E402
from bench.services import (  # noqa: E402
    Services,
    group_cpu_seconds,
    machine_cpu_seconds,
    postgres_binaries,
    postgres_version,
    say,
    start_postgres,
    start_redis,
)
from bench.web import build_sites  # noqa: E402
from tests.fakes import FakeLLM, FakeSerper  # noqa: E402
from verification.pipeline.segment import segment  # noqa: E402

EDIT = ("Around seven million people", "Around six million people")
RESULTS = ROOT / "bench" / "results"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--llm-first-token", type=float, default=0.3, help="seconds before an LLM answer's first token (default 0.3)"
    )
    parser.add_argument(
        "--llm-tokens-per-s",
        type=float,
        default=80,
        help="completion tokens the LLM writes per second (default 80; 0: instant)",
    )
    parser.add_argument(
        "--llm-prompt-tokens-per-s",
        type=float,
        default=5000,
        help="prompt tokens the LLM reads per second before its first token (default 5000; 0: instant)",
    )
    parser.add_argument(
        "--llm-profile",
        choices=["laptop"],
        help="a model server's profile: laptop = 0.3 s to the first token, 500 prompt and 30 completion tokens a "
        "second, one request at a time, the previous prompt's prefix reused (bench/laptop.py); the app is given "
        "the documented local settings, LLM_CONCURRENCY=1 and WRITE_SEARCH_QUERIES=false",
    )
    parser.add_argument(
        "--llm-latency", type=float, default=0.0, help="seconds every LLM call takes on top of those (default 0)"
    )
    parser.add_argument("--search-latency", type=float, default=0.5, help="seconds per search (default 0.5)")
    parser.add_argument("--page-latency", type=float, default=0.5, help="seconds per page (default 0.5)")
    parser.add_argument("--workers", type=int, default=2, help="`celery worker` processes (default 2)")
    parser.add_argument("--concurrency", type=int, default=32, help="threads per worker (default 32)")
    parser.add_argument(
        "--extra-command",
        action="append",
        default=[],
        metavar="CMD",
        help="another app process to run beside the workers, restarted with them, e.g. "
        "'celery -A factsite beat --loglevel=INFO' (repeatable; `celery` means this Python's)",
    )
    parser.add_argument(
        "--app-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the app's processes, e.g. CPU_PROCESSES=1 (repeatable)",
    )
    parser.add_argument("--runs", type=int, default=20, help="runs submitted at once (default 20)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="measure the run alone (cold, then warm) this many times, each a row graded on its own "
        "(default 1): one measurement of a run alone lands on either side of a goal's line",
    )
    parser.add_argument("--mode", choices=["sparse", "dense"], default="dense", help="retrieval (default dense)")
    parser.add_argument("--pages", default="small,realistic", help="page sets: small,realistic (default both)")
    parser.add_argument("--databases", default="sqlite,postgresql", help="sqlite,postgresql (default both)")
    parser.add_argument("--postgres-url", help="use this PostgreSQL instead of starting a throwaway cluster")
    parser.add_argument(
        "--fault-runs",
        type=int,
        help="runs submitted at once for the faults measurement (default 10; 0 with --quick): "
        "fault-free, then with --fault-rate of the LLM calls failing (429/500/503), on warm workers, "
        "on the first database and the last page set; 0 skips it",
    )
    parser.add_argument("--fault-rate", type=float, default=0.2, help="share of LLM calls that fail (default 0.2)")
    parser.add_argument("--recompute-requests", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=900, help="seconds a measurement may take (default 900)")
    parser.add_argument("--logs", help="keep the app processes' logs (Celery's task log included) in this directory")
    parser.add_argument("--json", dest="json_out", help="write the results here (default bench/results/latest.json)")
    parser.add_argument(
        "--baseline",
        metavar="JSON",
        help="an earlier run's results (e.g. bench/results/baseline.json): compare tokens and LLM calls per answer",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="check that it works, fast: an LLM of 0.02 s to the first token and 4,000 tokens a second, search "
        "and pages 0.02 s, 2 runs at once, sparse, 5 recomputes, a 120 s timeout; small pages and SQLite "
        "unless --pages or --databases say otherwise",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.llm_first_token, args.llm_tokens_per_s, args.llm_prompt_tokens_per_s = 0.02, 4000, 0
        args.llm_latency, args.search_latency, args.page_latency = 0.0, 0.02, 0.02
        args.runs, args.mode, args.recompute_requests, args.timeout = 2, "sparse", 5, 120
        args.databases = "sqlite" if args.databases == parser.get_default("databases") else args.databases
        args.pages = "small" if args.pages == parser.get_default("pages") else args.pages
    if args.llm_profile == "laptop":
        args.llm_first_token = LAPTOP["first_token_s"]
        args.llm_prompt_tokens_per_s, args.llm_tokens_per_s = LAPTOP["prompt_tokens_per_s"], LAPTOP["tokens_per_s"]
        args.app_env = ["LLM_CONCURRENCY=1", "WRITE_SEARCH_QUERIES=false", *args.app_env]
    if args.fault_runs is None:
        args.fault_runs = 0 if args.quick else 10
    args.pages = [p for p in args.pages.split(",") if p]
    args.databases = [d for d in args.databases.split(",") if d]
    return args


def main() -> None:
    args = parse_args()
    try:
        with Services() as services:
            results = benchmark(args, services)
    except KeyboardInterrupt:
        say("interrupted: every process it started is stopped")
        sys.exit(130)
    if args.baseline:
        results["baseline"] = report.compare(results["rows"], json.loads(Path(args.baseline).read_text()))
    results["goals"] = report.goals(results["rows"], args.runs, results["faults"], results.get("baseline"))
    text = report.markdown(results)
    print(text)
    out = Path(args.json_out) if args.json_out else RESULTS / "latest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    out.with_suffix(".md").write_text(text)
    say(f"wrote {out} and {out.with_suffix('.md')}")


def benchmark(args, services: Services) -> dict:
    sample = (ROOT / "sample.txt").read_text()
    edited = sample.replace(*EDIT)
    concurrent = chatbot_answers(args.runs)
    texts = [sample, edited, *concurrent]
    sentences = list(dict.fromkeys((s.text, topic_of(s.text, text)) for text in texts for s in segment(text)))
    calls = CallLog()
    llm = FakeLLM(
        latency=args.llm_latency,
        first_token_s=args.llm_first_token,
        tokens_per_s=args.llm_tokens_per_s,
        prompt_tokens_per_s=args.llm_prompt_tokens_per_s,
        **({"slots": LAPTOP["slots"], "prefix_cache": LAPTOP["prefix_cache"]} if args.llm_profile == "laptop" else {}),
    )
    calls.record(llm, "llm")
    llm.start()
    services.on_stop(llm.stop)
    webs, serpers = {}, {}
    for name in args.pages:
        if name == "small":
            webs[name] = build_sites([s for s, _ in sentences], latency=args.page_latency)
        elif name == "realistic":
            started = time.monotonic()
            webs[name] = build_realistic_sites(sentences, latency=args.page_latency)
            say(f"generated the {name} pages in {time.monotonic() - started:.1f} s")
        else:
            sys.exit(f"unknown page set {name!r} (small, realistic)")
        for site in webs[name]:
            calls.record(site, "page")
            site.start()
            services.on_stop(site.stop)
        serpers[name] = FakeSerper(sites=webs[name], latency=args.search_latency)
        calls.record(serpers[name], "search")
        serpers[name].start()
        services.on_stop(serpers[name].stop)
        serpers[name].results("index every page now", 1)  # not during the first measured search
    results = {
        "settings": {k: v for k, v in vars(args).items() if k != "json_out"},
        "environment": environment(),
        "pages": {name: describe(web) for name, web in webs.items()},
        "worker_commands": [_shown(p.command) for p in app_processes(args, Path("<logs>"), "run")],
        "rows": [],
        "faults": [],
        "extras": {},
        "skipped": [],
    }
    for database in args.databases:
        if database == "postgresql" and not args.postgres_url and postgres_binaries() is None:
            note = "PostgreSQL rows: no PostgreSQL binaries (/usr/lib/postgresql/*/bin or initdb/postgres on PATH)"
            say(f"skipped {note}")
            results["skipped"].append(note)
            continue
        if database not in ("sqlite", "postgresql"):
            sys.exit(f"unknown database {database!r} (sqlite, postgresql)")
        measure_database(args, services, database, llm, calls, serpers, sample, edited, concurrent, results)
    results["app_changed"] = app_fingerprint() != results["environment"]["app"]
    if results["app_changed"]:
        say("warning: the app's files changed while the benchmark ran; its rows may measure different code")
    return results


def _shown(command: list[str]) -> str:
    """A command as a person would type it: `celery …`, not this venv's python -m celery."""
    if command[:3] == [sys.executable, "-m", "celery"]:
        command = ["celery", *command[3:]]
    return " ".join(command)


def measure_database(args, services, database, llm, calls, serpers, sample, edited, concurrent, results) -> None:
    redis, redis_url = start_redis(services)
    system = [redis]  # what the app stands on: its CPU is the app's too
    if database == "sqlite":
        database_url = f"sqlite:///{services.workdir}/bench.sqlite3"
    elif args.postgres_url:
        database_url = args.postgres_url
    else:
        bin_dir = postgres_binaries()
        postgres, database_url = start_postgres(services, bin_dir)
        system.append(postgres)
        results["environment"]["postgresql"] = postgres_version(bin_dir)
    env = app_env(args, database_url, redis_url, llm)
    measurer = Measurer(services, env, services.workdir / f"measure-{database}.log")
    for pages, serper in serpers.items():
        serper_env = {"SERPER_API_KEY": serper.api_key, "SERPER_BASE_URL": serper.url}
        app = App(args, services, env | serper_env, f"{database}-{pages}")
        for texts in [[sample]] * max(1, args.repeat) + [concurrent]:
            app.restart()
            for state in ("cold", "warm"):
                request = {"texts": texts, "mode": args.mode, "timeout": args.timeout, "clear_caches": True}
                row = measure(args, app, measurer, system, calls, request)
                row |= {"db": database, "pages": pages, "state": state}
                row["workers_ready_s"] = app.ready_s() if state == "cold" else None
                results["rows"].append(row)
                say(f"{database}, {pages} pages, {state}, {len(texts)} run(s): {row['finished']}, {row['wall_s']} s")
                if database not in results["extras"] and state == "warm":
                    # Once per database, after a run on warm workers: an edited text (with the
                    # caches that run left) and the live recompute.
                    extra = {"texts": [], "mode": args.mode, "timeout": args.timeout, "edited": edited}
                    extra["recompute"] = args.recompute_requests
                    results["extras"][database] = measurer.measure(extra, args.timeout + 600) | {"pages": pages}
                if not row["all_finished"]:
                    app.restart()  # its unfinished tasks would slow down the next measurement
        if args.fault_runs and pages == list(serpers)[-1] and database == args.databases[0]:
            measure_faults(args, app, measurer, system, llm, calls, concurrent[: args.fault_runs], results)
        app.stop()
    services.stop(measurer.service, *system)


def measure_faults(args, app: App, measurer: Measurer, system: list, llm: FakeLLM, calls, texts, results) -> None:
    """The same runs on warm workers with a share of the LLM's answers failing (429/500/503 at
    random, the same draw for the same attempt), then without faults: retries must keep the
    runs' time within 2× and report what still failed. Faults first: the first batch after a
    restart measured ~20% slower whatever it was, so that order can only hide a gain."""
    app.restart()
    warm_up = {"texts": texts[:1], "mode": args.mode, "timeout": args.timeout, "clear_caches": True}
    measurer.measure(warm_up, timeout=args.timeout + 600)
    for rate in (args.fault_rate, 0.0):
        llm.fail_rate, requests_before = rate, sum(llm.calls.values())
        try:
            request = {"texts": texts, "mode": args.mode, "timeout": args.timeout, "clear_caches": True}
            row = measure(args, app, measurer, system, calls, request)
        finally:
            llm.fail_rate = 0.0
        row |= {"db": app.tag.split("-")[0], "pages": app.tag.split("-", 1)[1], "fail_rate": rate}
        # Requests the simulated LLM answered, failures included (llm_calls counts the answers used).
        row["llm_requests"] = sum(llm.calls.values()) - requests_before
        results["faults"].append(row)
        say(f"faults {rate:.0%}: {row['finished']}, {row['wall_s']} s, {row['llm_calls']} LLM calls")


def app_env(args, database_url: str, redis_url: str, llm: FakeLLM) -> dict:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "factsite.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": llm.url + "/v1",
        "LLM_MODELS": "bench-model",
        # The simulated Serper only: never on to Wikipedia (the internet) when it fails.
        "SEARCH_PROVIDERS": "serper",
        "ALLOW_PRIVATE_FETCH": "1",
        "DJANGO_ALLOWED_HOSTS": "testserver,127.0.0.1",
        "DJANGO_SECRET_KEY": "bench",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
        **dict(setting.split("=", 1) for setting in args.app_env),
    }


def measure(args, app: App, measurer: Measurer, system: list, calls: CallLog, request: dict) -> dict:
    """One measurement: caches emptied, the texts submitted at once, CPU counted around it, and
    the simulated services' calls it made priced into each run's critical path."""
    load = os.getloadavg()[0]
    before = _cpu(app, measurer, system)
    measured = measurer.measure(request, timeout=args.timeout + 600)
    after = _cpu(app, measurer, system)
    app.check()
    cpu = {k: round(after[k] - before[k], 1) for k in before}
    cpu["others_s"] = round(cpu.pop("machine_s") - sum(cpu.values()), 1)
    runs = measured["runs"]
    start = min(r["submitted_at"] for r in runs)
    made = calls.between(start - 0.05, max(r["finished_at"] or time.time() for r in runs) + 0.05)
    for run in runs:
        run |= critical_path(run.pop("claim_texts"), made)
    row = summarize(args, runs, cpu, made) | {"load_before": round(load, 2)}
    row["tasks"] = report.task_times(app.task_logs, min(r["submitted_at"] for r in runs), row["ended_at"])
    return row


def _cpu(app: App, measurer: Measurer, system: list) -> dict:
    """CPU seconds so far: the app's processes, what they stand on (Redis, PostgreSQL), this
    process (the simulated services), the measuring client, and the whole machine."""
    return {
        "workers_s": app.cpu_seconds(),
        "redis_db_s": sum(group_cpu_seconds(s.pid) for s in system),
        "bench_s": _own_cpu_seconds(),
        "client_s": measurer.cpu_seconds(),
        "machine_s": machine_cpu_seconds(),
    }


def _own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def summarize(args, runs: list[dict], cpu: dict, made: list) -> dict:
    done = sum(r["status"] == "done" for r in runs)
    failed = sum(r["status"] == "failed" for r in runs)
    unfinished = len(runs) - done - failed
    all_finished = unfinished == 0
    start = min(r["submitted_at"] for r in runs)
    ended = max((r["finished_at"] for r in runs if r["finished_at"]), default=start + args.timeout)
    wall = round(ended - start, 3) if all_finished else None
    # The runs at once end when the slowest chain of any of them could have ended.
    paths = [r["critical_path_s"] for r in runs if r["critical_path_s"]]
    bound = round(max(paths), 3) if paths else None
    # The same, with a streamed claim's chain from when its line was written (bench/calls.Chain).
    written = [r["critical_path_written_s"] for r in runs if r["critical_path_written_s"]]
    bound_written = round(max(written), 3) if written else None
    total = {k: sum(r[k] for r in runs) for k in ("llm_calls", "searches", "sources", "sentences", "claims")}
    total |= {k: sum(r[k] for r in runs) for k in ("evidence", "evidence_judged", "sources_failed", "paper_llm_calls")}
    total |= {k: sum(r[k] for r in runs) for k in ("prompt_tokens", "completion_tokens")}
    total |= {k: sum(r.get(k, 0) for r in runs) for k in ("sentences_failed", "claims_failed", "evidence_failed")}
    # What the simulated services' answers alone took, spread over every worker thread: with
    # more waiting than threads, no code could finish sooner than this.
    waiting = sum(call.seconds for call in made)
    finished = f"{done}/{len(runs)} done" + (f", {failed} failed" if failed else "")
    finished += f", {unfinished} unfinished after {args.timeout:g} s" if unfinished else ""
    walls = [r["wall_s"] for r in runs if r["wall_s"] is not None]
    return {
        "runs": len(runs),
        "wall_s": wall,
        "run_wall_p50_s": round(statistics.median(walls), 3) if walls else None,
        "bound_s": bound,
        "ratio": round(wall / bound, 2) if wall and bound else None,
        "thread_bound_s": round(max(bound or 0.0, waiting / (args.workers * args.concurrency)), 2),
        "first_coloured_s": median([r["first_coloured_s"] for r in runs]),
        "first_claim_path_s": median([r["first_claim_path_s"] for r in runs]),
        "bound_written_s": bound_written,
        "ratio_written": round(wall / bound_written, 2) if wall and bound_written else None,
        "first_claim_written_path_s": median([r["first_claim_written_path_s"] for r in runs]),
        "path_steps_s": max(runs, key=lambda r: r["critical_path_s"] or 0)["steps_s"],
        "cpu_per_run_s": round((cpu["workers_s"] + cpu["redis_db_s"]) / len(runs), 2),
        "llm_per_answer": usage_by_kind(made, len(runs)),
        "finished": finished,
        "all_finished": all_finished,
        "all_done": done == len(runs),
        "ended_at": ended,
        "cpu": cpu,
        **total,
        "errors": sorted({r["error"] for r in runs if r["error"]}),
        "per_run": [{k: r[k] for k in PER_RUN} for r in runs],
    }


PER_RUN = ("status", "wall_s", "critical_path_s", "first_coloured_s", "first_claim_path_s", "claims_judged")
PER_RUN += ("critical_path_written_s", "first_claim_written_path_s")
PER_RUN += ("llm_calls", "evidence", "sources_failed")

# Not the app: what the benchmark, the tests and the docs change does not change what is measured.
NOT_APP = ("bench/", "tests/", "docs/", ".ci/", "scripts/", "README.md")
GIT = ["git", "--no-optional-locks", "-C", str(ROOT)]  # read-only: never touches the index


def _git(*args: str) -> str:
    return subprocess.run([*GIT, *args], capture_output=True, text=True).stdout


def app_fingerprint() -> str:
    """A hash of the app's files as they are on disk (committed or not): equal at the start and
    the end means every measurement ran the same app."""
    digest = hashlib.sha1()
    for name in sorted(_git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")):
        if name and not name.startswith(NOT_APP):
            digest.update(name.encode())
            with contextlib.suppress(OSError):
                digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()[:12]


def environment() -> dict:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line), platform.processor())
    memory = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if "MemTotal" in line)
    redis = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()
    # Porcelain lines are "XY path"; only the app's own files make the measured code differ from the commit.
    changed = [line[3:] for line in _git("status", "--porcelain").splitlines() if not line[3:].startswith(NOT_APP)]
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git("rev-parse", "--short", "HEAD").strip() or "unknown",
        "dirty": bool(changed),
        "cores": os.cpu_count(),
        "cpu": cpu,
        "memory_gb": round(memory / 1024 / 1024),
        "python": platform.python_version(),
        "redis": f"Redis {redis[2].removeprefix('v=')}" if len(redis) > 2 else "Redis",
        "sqlite": sqlite3.sqlite_version,
        "load_average": round(os.getloadavg()[0], 2),
        "app": app_fingerprint(),
    }


if __name__ == "__main__":
    main()
