"""bench/citations.py keeps working (issue 34): a small run of it, one web answer and the GraphRAG
trail, on the real pipeline against the fakes on 127.0.0.1 (its numbers are read by people; what
is asserted here is what the bench must find whatever the timings)."""

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_the_citations_bench_finds_the_planted_outcomes_and_writes_its_report(tmp_path):
    out = tmp_path / "citations.md"
    command = [sys.executable, "bench/citations.py", "--fixtures", "perplexity,graphrag", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr[-3000:]
    assert out.read_text() in done.stdout
    results = json.loads(out.with_suffix(".json").read_text())
    (perplexity,) = results["web"]
    assert perplexity["fixture"] == "perplexity"
    for mode in ("also_search", "only"):
        run = perplexity[mode]
        assert run["status"] == "done"
        assert run["outcomes"] == perplexity["planted"], run["citations"]
        assert run["markers_in_claims"] == 0
        assert run["first_outcome_s"] is not None
    assert perplexity["baseline"]["citations"] == []
    assert perplexity["only"]["searches"] == 0 < perplexity["also_search"]["searches"]
    graphrag = results["graphrag"]
    assert graphrag["cited"]["markers_in_claims"] == 0
    assert graphrag["cited"]["cited_first"] == 3
    assert graphrag["cited"]["verdicts_right"] == 3
    assert "| perplexity | 5/5 | 5/5 |" in done.stdout
