"""The benchmark keeps working (its numbers are read by people, not asserted here), its
realistic pages are what it says they are, and it leaves no process behind when stopped."""

import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench import report
from bench.pages import build_realistic_sites, describe, page_shape
from bench.prose import topic_of
from bench.services import postgres_binaries
from tests.conftest import ROOT
from verification.pipeline.extract import read_html
from verification.pipeline.passages import page_sentences, select_passages

# One worker, and no CPU process pool to warm up (sparse retrieval needs no model): the app's
# cold start is what the full benchmark measures, not what these tests check.
QUICK = [sys.executable, "bench/run.py", "--quick", "--workers", "1", "--app-env", "CPU_PROCESSES=0"]


def test_the_benchmark_runs_end_to_end_and_writes_its_results(tmp_path):
    out = tmp_path / "bench.json"
    command = [*QUICK, "--fault-runs", "2", "--fault-rate", "0.3", "--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr[-3000:]
    assert "| goal | result | detail |" in done.stdout
    assert (tmp_path / "bench.md").read_text() in done.stdout
    results = json.loads(out.read_text())
    assert results["pages"]["small"]["pages"] > 100
    assert [(r["pages"], r["state"], r["runs"]) for r in results["rows"]] == [
        ("small", "cold", 1),
        ("small", "warm", 1),
        ("small", "cold", 2),
        ("small", "warm", 2),
    ]
    for row in results["rows"]:
        assert row["all_done"], row["finished"]
        assert row["ratio"] == round(row["wall_s"] / results["bound_s"], 2)
        assert row["tasks"]["steps"]["fetch"]["count"] >= 5 * row["runs"]
    single = results["rows"][0]
    assert single["sentences"] == 7 and single["evidence"] > 0
    assert single["llm_calls"] < single["paper_llm_calls"]
    extras = results["extras"]["sqlite"]
    assert extras["edited_rerun"]["llm_calls"] < single["llm_calls"]
    assert extras["recompute"]["evidence"] == 900
    assert {g["goal"] for g in results["goals"]} >= {"2 concurrent runs all finish", "warm ratio ≤ 1.5 (1 run)"}
    faulty, clean = results["faults"]
    assert (clean["fail_rate"], faulty["fail_rate"], faulty["runs"]) == (0.0, 0.3, 2)
    assert clean["all_finished"] and faulty["all_finished"]
    # The failed answers were asked again: more requests for the answers used.
    assert faulty["llm_requests"] - faulty["llm_calls"] > clean["llm_requests"] - clean["llm_calls"]
    assert any(g["goal"].startswith("30% of LLM calls failing: 2 runs finish") for g in results["goals"])


def test_goals_grade_a_run_alone_by_its_ratio_and_runs_at_once_by_finishing():
    def row(state, runs, ratio, pages="realistic", db="sqlite", finished=True):
        wall = ratio * 3.0
        return {
            "db": db,
            "pages": pages,
            "state": state,
            "runs": runs,
            "ratio": ratio,
            "wall_s": wall,
            "all_done": finished,
            "all_finished": finished,
            "finished": f"{runs}/{runs} done",
        }

    rows = [row("warm", 1, 1.4), row("cold", 1, 2.3), row("warm", 20, 30.0), row("warm", 1, 9.0, pages="small")]
    faults = [
        {"fail_rate": 0.0, "wall_s": 40.0, "runs": 10, "all_finished": True, "finished": "10/10 done"},
        {"fail_rate": 0.2, "wall_s": 90.0, "runs": 10, "all_finished": True, "finished": "10/10 done"},
    ]
    verdicts = {g["goal"]: g["pass"] for g in report.goals(rows, 20, faults)}

    assert verdicts == {
        "warm ratio ≤ 1.5 (1 run)": True,  # the small pages' 9.0 is not graded
        "cold ratio ≤ 2.0 (1 run)": False,
        "20 concurrent runs all finish": True,
        "20% of LLM calls failing: 10 runs finish within 2× their fault-free time": False,  # 2.25×
    }


def test_realistic_pages_are_sized_like_search_results_and_the_same_on_every_run():
    shapes = [page_shape(random.Random(n)) for n in range(2000)]
    sizes = sorted(size for size, _ in shapes)
    assert sizes[0] >= 45_000 and sizes[-1] <= 1_100_000
    assert 0.6 < sum(100_000 <= s <= 300_000 for s in sizes) / len(sizes) < 0.8  # most
    assert 0.1 < sum(s < 60_001 for s in sizes) / len(sizes) < 0.2  # some ~50 KB
    assert 0.02 < sum(s > 900_000 for s in sizes) / len(sizes) < 0.08  # a few ~1 MB
    assert {n for _, n in shapes} <= set(range(80, 2001))
    sentence = "The Norbridge bridge number 12 was opened in 1789."
    pages = lambda: build_realistic_sites([(sentence, topic_of(sentence, sentence))], sites=8, pages_per_sentence=8)  # noqa: E731
    first, second = pages(), pages()

    assert [p.html() for s in first for p in s.pages.values()] == [p.html() for s in second for p in s.pages.values()]
    assert describe(first)["bytes_min"] > 45_000


def test_the_extractor_and_the_ranker_find_the_sentence_on_every_kind_of_page():
    sentence = "The Caldervale harbour number 7 was opened in 1845."
    web = build_realistic_sites([(sentence, topic_of(sentence, sentence))], sites=8, pages_per_sentence=8)
    layouts = set()
    for site in web:
        for page in site.pages.values():
            document = page.html().decode()
            assert document.count("<script") > 5 and "og:title" in document and "<nav" in document
            text = read_html(document).text
            excerpts = select_passages(sentence, page_sentences(text), top_k=3, context=1)
            assert any(sentence in excerpt.text for excerpt in excerpts), page.title
            layouts.add(document.split("layout-", 1)[1].split('"', 1)[0])
    assert layouts == {"news", "blog", "wiki", "journal", "forum"}


def test_it_stops_every_process_it_started_when_terminated_mid_run(tmp_path):
    database = "postgresql" if postgres_binaries() else "sqlite"
    command = [*QUICK, "--databases", database, "--json", str(tmp_path / "bench.json")]
    bench = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    started: dict[int, str] = {}
    try:
        for line in _lines(bench, until="the app's processes are ready", timeout=120):
            if match := re.search(r"started (.+) \(pid (\d+)\)", line):
                started[int(match[2])] = match[1]
        time.sleep(0.5)  # the first measurement is under way
        # Every process of their groups: a worker's pool processes too.
        doomed = {pid for pid in _pids() if _group(pid) in started} | set(started)
        assert {"redis-server", "celery worker 0", "measure"} <= set(started.values())
        assert database == "sqlite" or "postgres" in started.values()

        bench.send_signal(signal.SIGTERM)
        assert bench.wait(60) == 128 + signal.SIGTERM
    finally:
        if bench.poll() is None:
            bench.kill()
    survivors = {pid: _command(pid) for pid in doomed if _alive(pid)}
    assert not survivors, f"still running: {survivors}\n{bench.stderr.read()[-2000:]}"


def _lines(process: subprocess.Popen, *, until: str, timeout: float):
    """Lines of the process's stderr until one contains `until`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([process.stderr], [], [], 1)[0]:
            line = process.stderr.readline()
            assert line, f"the benchmark exited early ({process.poll()})"
            yield line
            if until in line:
                return
    raise AssertionError(f"no {until!r} within {timeout} s")


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _group(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return -1


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent (init) to collect it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except FileNotFoundError:
        return "?"
