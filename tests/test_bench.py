"""The benchmark keeps working (its numbers are read by people, not asserted here)."""

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_the_benchmark_runs_end_to_end_and_writes_its_json(tmp_path):
    out = tmp_path / "bench.json"
    command = [sys.executable, "bench/run.py", "--llm-latency", "0.05", "--search-latency", "0.02"]
    command += ["--page-latency", "0.02", "--runs", "3", "--recompute-requests", "5", "--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr[-2000:]
    assert "ratio wall / bound" in done.stdout
    results = json.loads(out.read_text())
    assert results["single"]["status"] == "done" and results["single"]["sentences"] == 7
    assert results["single"]["llm_calls"] < results["single"]["paper_llm_calls"]
    assert results["edited_rerun"]["llm_calls"] < results["single"]["llm_calls"]
    assert results["recompute"]["evidence"] == 900
    assert results["throughput"] == {"runs": 3, "finished": 3, "wall_s": results["throughput"]["wall_s"]}
