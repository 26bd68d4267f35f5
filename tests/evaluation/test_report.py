"""The written report: every file is there, the Markdown carries the numbers of the report dict,
and the plots are real PNG images — for each dataset, and for a run that evaluated nothing."""

import json

import pytest

from verification.evaluation.metrics import STANCE_TO_VERDICT
from verification.evaluation.report import write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

COST = {
    "per_text": {
        "llm_calls": 6.5,
        "prompt_tokens": 4200.0,
        "completion_tokens": 830.0,
        "searches": 4.0,
        "pages": 11.5,
        "seconds": 42.25,
    },
    "total": {
        "llm_calls": 13,
        "prompt_tokens": 8400,
        "completion_tokens": 1660,
        "searches": 8,
        "pages": 23,
        "seconds": 84.5,
    },
}
FAILURES = {"sentences": 1, "claims": 2, "pages": 7, "evidence": 3, "runs_failed": 0}


def base(dataset, items=2):
    return {
        "dataset": dataset,
        "file": f"samples/{dataset}.json",
        "settings": {"model": "gpt-4o-mini", "mode": "dense", "top_k_results": 3},
        "items": items,
        "started_at": "2026-11-22T05:00:00+00:00",
        "finished_at": "2026-11-22T05:10:00+00:00",
        "cost": COST,
        "failures": FAILURES,
    }


def scores(tp, fp, fn, tn, precision, recall, f1, interval, sentences, texts):
    return {
        "tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": precision, "recall": recall, "f1": f1,
        "interval": interval, "sentences": sentences, "texts": texts,
    }  # fmt: skip


FAVABENCH = {
    **base("favabench"),
    "favabench": {
        "overall": scores(3, 1, 2, 4, 0.75, 0.6, 2 / 3, [0.412, 0.857], 10, 2),
        "by_model": {
            "chatgpt": scores(2, 1, 0, 2, 2 / 3, 1.0, 0.8, [0.5, 1.0], 5, 1),
            "llama": scores(1, 0, 2, 2, 1.0, 1 / 3, 0.5, [0.0, 0.8], 5, 1),
        },
        "threshold": 0.3,
        "score_rule": "decisive",
        "error_types": {"entity": {"caught": 2, "missed": 1}, "invented": {"caught": 0, "missed": 2}},
        "credibility": {
            "factual": [0.9, 0.75, 1.0, 0.2, 0.66],
            "not_factual": [0.1, 0.0, 0.5],
            "unscored": {"factual": 1, "not_factual": 1},
        },
        "grid": [
            {
                "settings": {"top_k_results": 1},
                "overall": scores(1, 1, 4, 4, 0.5, 0.2, 0.286, [0.0, 0.6], 10, 2),
                "by_model": {},
            },
            {
                "settings": {"top_k_results": 5},
                "overall": scores(4, 1, 1, 4, 0.8, 0.8, 0.8, [0.55, 1.0], 10, 2),
                "by_model": {},
            },
        ],
    },
}


def assert_real_png(path):
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC), path.name
    # A blank or broken canvas encodes to a few hundred bytes; axes, bars and text take thousands.
    assert len(data) > 5000, (path.name, len(data))


def test_a_favabench_report_writes_json_markdown_and_plots(tmp_path):
    paths = write_report(tmp_path / "out", FAVABENCH)
    names = [p.name for p in paths]
    assert names == ["report.json", "report.md", "f1_by_model.png", "credibility.png", "grid_f1.png"]
    assert all(p.parent == tmp_path / "out" for p in paths)
    assert json.loads((tmp_path / "out" / "report.json").read_text()) == FAVABENCH
    for path in paths[2:]:
        assert_real_png(path)


def test_the_favabench_markdown_carries_the_numbers(tmp_path):
    write_report(tmp_path, FAVABENCH)
    markdown = (tmp_path / "report.md").read_text()
    # Subset rows: name, texts, sentences, precision, recall, F1, interval, TP, FP, FN, TN.
    assert "| chatgpt | 1 | 5 | 0.667 | 1.000 | 0.800 | [0.500, 1.000] | 2 | 1 | 0 | 2 |" in markdown
    assert "| llama | 1 | 5 | 1.000 | 0.333 | 0.500 | [0.000, 0.800] | 1 | 0 | 2 | 2 |" in markdown
    assert "| **overall** | 2 | 10 | 0.750 | 0.600 | 0.667 | [0.412, 0.857] | 3 | 1 | 2 | 4 |" in markdown
    assert "credibility < 0.3 (score rule `decisive`)" in markdown
    # entity: 2 of 3 caught = 0.667; invented: none of 2.
    assert "| entity | 2 | 1 | 0.667 |" in markdown
    assert "| invented | 0 | 2 | 0.000 |" in markdown
    assert "1 factual and 1 not-factual sentences got no score" in markdown
    assert "| top_k_results=5 | 0.800 | [0.550, 1.000] |" in markdown
    assert "| LLM calls | 6.5 | 13 |" in markdown
    assert "| seconds | 42.25 | 84.5 |" in markdown
    assert "| prompt tokens | 4200 | 8400 |" in markdown
    assert "| pages | 7 |" in markdown
    assert "model=gpt-4o-mini, mode=dense, top_k_results=3" in markdown
    assert "![f1_by_model.png](f1_by_model.png)" in markdown


def test_a_claim_stance_report_spells_out_the_mapping_and_draws_the_confusion(tmp_path):
    report = {
        **base("claim-stance", items=10),
        "claim_stance": {
            "labels": ["supported", "not_supported", "irrelevant"],
            "total": 10,
            "correct": 6,
            "failed": 1,
            "accuracy": 0.6,
            "per_class": {
                "supported": {"precision": 0.75, "recall": 0.6, "f1": 2 / 3, "support": 5},
                "not_supported": {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3},
                "irrelevant": {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2},
            },
            "macro_f1": 11 / 18,
            "confusion": {
                "supported": {"supported": 3, "not_supported": 1, "irrelevant": 0, "failed": 1},
                "not_supported": {"supported": 0, "not_supported": 2, "irrelevant": 1, "failed": 0},
                "irrelevant": {"supported": 1, "not_supported": 0, "irrelevant": 1, "failed": 0},
            },
            "mapping": STANCE_TO_VERDICT,
        },
    }
    paths = write_report(tmp_path, report)
    assert [p.name for p in paths] == ["report.json", "report.md", "confusion.png"]
    assert_real_png(paths[2])
    markdown = (tmp_path / "report.md").read_text()
    assert "Accuracy **0.600** over 10 pairs (1 judgements failed and count as wrong); macro F1 0.611." in markdown
    assert "| partially-support | not_supported |" in markdown
    assert "| supported | 0.750 | 0.600 | 0.667 | 5 |" in markdown
    assert "| supported | 3 | 1 | 0 | 1 |" in markdown


def test_a_segments_report_gives_boundary_scores(tmp_path):
    report = {
        **base("segments", items=3),
        "segments": {"precision": 0.8, "recall": 2 / 3, "f1": 8 / 11, "tp": 4, "fp": 1, "fn": 2, "texts": 3},
    }
    paths = write_report(tmp_path, report)
    assert [p.name for p in paths] == ["report.json", "report.md", "boundaries.png"]
    assert_real_png(paths[2])
    assert "| 0.800 | 0.667 | 0.727 | 4 | 1 | 2 | 3 |" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize(
    ("dataset", "section", "plots"),
    [
        ("favabench", {}, ["f1_by_model.png", "credibility.png"]),
        ("claim-stance", {"claim_stance": {}}, ["confusion.png"]),
        ("segments", {"segments": {"texts": 0}}, ["boundaries.png"]),
    ],
)
def test_a_run_with_no_items_still_writes_every_file(tmp_path, dataset, section, plots):
    report = {"dataset": dataset, "file": "empty.json", "settings": {}, "items": 0, **section}
    paths = write_report(tmp_path, report)
    assert [p.name for p in paths] == ["report.json", "report.md", *plots]
    assert "No items were evaluated" in (tmp_path / "report.md").read_text()
    for path in paths[2:]:
        assert path.read_bytes().startswith(PNG_MAGIC)
