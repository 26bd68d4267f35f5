"""`manage.py evaluate` on tiny samples we wrote (tests/data/evaluation/), against the fake model,
search and sites on 127.0.0.1, with every expected number worked out by hand below.

The favabench sample: 4 texts, 10 sentences, one invented subject per sentence, and one page per
subject (or none), so each sentence gets exactly its page. The fake judge calls a page that holds
the claim's words "supported", and "not_supported" when it also negates. So:

  text (model)  sentence                                        gold          page says         score  predicted
  1 (chatgpt)   Quorvin Bay hosts the annual kelp regatta.      factual       the same          1.0    factual      TN
                The Tallisk glacier feeds the Morrow river.     entity err    "does not feed"   0.0    not factual  TP
  2 (chatgpt)   Vendrick lighthouse guards the Osper strait.    factual       the same          1.0    factual      TN
                Fennimore cheese ripens inside basalt caves.    entity err    the same (wrong)  1.0    factual      FN
                Harlequin moths migrate across Drellin valley.  factual       (no page)         none   not factual  FP
  3 (llama)     Quillon pianos use cedar soundboards.           entity err    "never use"       0.0    not factual  TP
                Marwick orchards grow amber plums.              factual       the same          1.0    factual      TN
  4 (llama)     Zephyrine falls drop into Kessel gorge.         relation err  the same (wrong)  1.0    factual      FN
                Tobbin ferries cross Lake Ardent hourly.        unverifiable  "do not cross"    0.0    not factual  TP
                Corvell bridge spans the Idrin canal.           factual       the same          1.0    factual      TN
"""

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import ROOT, world_environment
from tests.fakes import FakePage, FakeSite
from verification.access import limits
from verification.evaluation import datasets
from verification.models import Verification

DATA = ROOT / "tests" / "data" / "evaluation"
FAVABENCH = DATA / "favabench.json"
CLAIM_STANCE = DATA / "claim-stance.jsonl"
SEGMENTS = DATA / "segments.jsonl"

PAGES = {
    "/quorvin": FakePage("Quorvin Bay", "Quorvin Bay hosts the annual kelp regatta every summer."),
    "/tallisk": FakePage("Tallisk glacier", "The Tallisk glacier does not feed the Morrow river; it feeds the Pellan."),
    "/vendrick": FakePage("Vendrick lighthouse", "Vendrick lighthouse guards the Osper strait."),
    "/fennimore": FakePage("Fennimore cheese", "Fennimore cheese ripens inside basalt caves for two winters."),
    "/quillon": FakePage("Quillon pianos", "Quillon pianos never use cedar soundboards; they use spruce."),
    "/marwick": FakePage("Marwick orchards", "Marwick orchards grow amber plums."),
    "/zephyrine": FakePage("Zephyrine falls", "Zephyrine falls drop into Kessel gorge."),
    "/tobbin": FakePage("Tobbin ferries", "Tobbin ferries do not cross Lake Ardent hourly; they sail twice daily."),
    "/corvell": FakePage("Corvell bridge", "Corvell bridge spans the Idrin canal."),
}


@pytest.fixture
def fava_world(world):
    """The fake world with only the sample's pages on the web."""
    site = FakeSite(pages=PAGES).start()
    world.serper.sites = [site]
    yield world
    site.stop()


def evaluate(*args) -> str:
    out = io.StringIO()
    call_command("evaluate", *map(str, args), stdout=out, stderr=io.StringIO())
    return out.getvalue()


def read_report(directory: Path) -> dict:
    return json.loads((directory / "report.json").read_text())


def journal_lines(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "items.jsonl").read_text().splitlines()]


# --- favabench through the engine


@pytest.mark.django_db(transaction=True)
def test_favabench_report_has_the_confusion_worked_out_by_hand(fava_world, celery_worker, settings, tmp_path):
    # An evaluation starts one run per text: RUNS_PER_HOUR must not refuse the second.
    settings.RUNS_PER_HOUR = 1
    out = tmp_path / "eval"

    printed = evaluate("favabench", "--file", FAVABENCH, "--out", out, "--mode", "sparse")

    assert str(out / "report.json") in printed and str(out / "report.md") in printed
    report = read_report(out)
    assert report["dataset"] == "favabench" and report["items"] == 4
    fava = report["favabench"]
    overall = fava["overall"]
    # TP 3, FP 1, FN 2, TN 4: precision 3/4, recall 3/5, F1 = 2·3 / (2·3 + 1 + 2) = 6/9.
    assert (overall["tp"], overall["fp"], overall["fn"], overall["tn"]) == (3, 1, 2, 4)
    assert overall["precision"] == pytest.approx(0.75)
    assert overall["recall"] == pytest.approx(0.6)
    assert overall["f1"] == pytest.approx(6 / 9)
    assert (overall["sentences"], overall["texts"]) == (10, 4)
    low, high = overall["interval"]
    assert 0 <= low <= overall["f1"] <= high <= 1
    # chatgpt (texts 1, 2): TP 1, FP 1, FN 1, TN 2 → P = R = F1 = 1/2.
    chatgpt = fava["by_model"]["chatgpt"]
    assert (chatgpt["tp"], chatgpt["fp"], chatgpt["fn"], chatgpt["tn"]) == (1, 1, 1, 2)
    assert chatgpt["f1"] == pytest.approx(0.5)
    # llama (texts 3, 4): TP 2, FP 0, FN 1, TN 2 → P 1, R 2/3, F1 = 4 / (4 + 0 + 1) = 0.8.
    llama = fava["by_model"]["llama"]
    assert (llama["tp"], llama["fp"], llama["fn"], llama["tn"]) == (2, 0, 1, 2)
    assert (llama["precision"], llama["recall"], llama["f1"]) == pytest.approx((1.0, 2 / 3, 0.8))
    assert (fava["threshold"], fava["score_rule"]) == (0.3, "all")
    # Entity errors: Tallisk and Quillon caught, Fennimore missed; the relation (Zephyrine) missed;
    # the unverifiable "hourly" (Tobbin) caught.
    assert fava["error_types"] == {
        "entity": {"caught": 2, "missed": 1},
        "relation": {"caught": 0, "missed": 1},
        "unverifiable": {"caught": 1, "missed": 0},
    }
    credibility = fava["credibility"]
    assert sorted(credibility["factual"]) == [1.0, 1.0, 1.0, 1.0]
    assert sorted(credibility["not_factual"]) == [0.0, 0.0, 0.0, 1.0, 1.0]
    assert credibility["unscored"] == {"factual": 1, "not_factual": 0}  # the Harlequin moths
    # Two searches per claim (one claim per sentence): each found one page of this small web, fewer
    # than SECOND_SEARCH_BELOW, and was searched again with its own words; pages: 2 + 2 + 2 + 3 sources.
    cost = report["cost"]
    assert cost["total"]["searches"] == len(fava_world.serper.queries) == 20
    assert cost["total"]["pages"] == 9 and cost["per_text"]["pages"] == pytest.approx(9 / 4)
    assert cost["total"]["llm_calls"] > 0 and cost["per_text"]["seconds"] > 0
    assert report["failures"] == {"sentences": 0, "claims": 0, "pages": 0, "evidence": 0, "runs_failed": 0}
    assert "grid" not in fava and "claim_stance" not in report and "segments" not in report
    assert (out / "report.md").exists() and list(out.glob("*.png"))
    # Every text was one run of the engine, stored under the evaluation's own client.
    runs = Verification.objects.all()
    assert sorted(run.text for run in runs) == sorted(item.output for item in datasets.load("favabench", FAVABENCH))
    assert {run.client for run in runs} == {limits.client_key(limits.EVALUATE_ADDRESS)}
    assert {run.settings["retrieval_mode"] for run in runs} == {"sparse"}


@pytest.mark.django_db(transaction=True)
def test_the_grid_evaluates_every_combination_on_the_same_texts(fava_world, celery_worker, tmp_path):
    out = tmp_path / "grid"

    evaluate(
        *("favabench", "--file", FAVABENCH, "--out", out, "--mode", "sparse", "--limit", "2"),
        *("--top-k-results", "1", "--grid", "top_k_results=1,2", "context_size=0,1"),
    )

    grid = read_report(out)["favabench"]["grid"]
    assert [row["settings"] for row in grid] == [
        {"top_k_results": 1, "context_size": 0},
        {"top_k_results": 1, "context_size": 1},
        {"top_k_results": 2, "context_size": 0},
        {"top_k_results": 2, "context_size": 1},
    ]
    # Each claim has at most one page, so every combination sees texts 1 and 2 alike:
    # TP 1 (Tallisk), FP 1 (Harlequin), FN 1 (Fennimore), TN 2.
    for row in grid:
        overall = row["overall"]
        assert (overall["tp"], overall["fp"], overall["fn"], overall["tn"]) == (1, 1, 1, 2), row["settings"]
        assert overall["texts"] == 2 and set(row["by_model"]) == {"chatgpt"}
    # The command line's settings (top_k_results 1, context 1) are one of the four: 2 texts × 4 runs.
    runs = Verification.objects.all()
    assert Counter((r.settings["top_k_results"], r.settings["context_size"]) for r in runs) == {
        (1, 0): 2,
        (1, 1): 2,
        (2, 0): 2,
        (2, 1): 2,
    }


@pytest.mark.django_db(transaction=True)
def test_texts_over_the_claim_budget_are_refused_and_left_out_of_the_metrics(
    fava_world, celery_worker, settings, tmp_path
):
    settings.MAX_CLAIMS_PER_RUN = 2  # texts 2 and 4 have 3 sentences each
    out = tmp_path / "eval"

    evaluate("favabench", "--file", FAVABENCH, "--out", out, "--mode", "sparse")

    report = read_report(out)
    # Texts 1 and 3 only: TN + TP, TP + TN → P = R = F1 = 1.
    overall = report["favabench"]["overall"]
    assert (overall["tp"], overall["fp"], overall["fn"], overall["tn"], overall["texts"]) == (2, 0, 0, 2, 2)
    assert overall["f1"] == 1.0
    assert report["items"] == 4 and report["failures"]["runs_failed"] == 2
    refused = [line for line in journal_lines(out) if line["status"] == "refused"]
    assert len(refused) == 2 and all("MAX_CLAIMS_PER_RUN" in line["error"] for line in refused)
    assert Verification.objects.count() == 2


def test_a_killed_evaluation_resumes_without_verifying_finished_texts_again(fava_world, tmp_path):
    fava_world.llm.latency = 0.3  # each text takes a few calls: the kill lands mid-way
    database = tmp_path / "evaluate.sqlite3"
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{database}",
        **world_environment(fava_world),
        "DJANGO_SECRET_KEY": "evaluate-test",
        "LOG_LEVEL": "WARNING",
        "CACHE_URL": "locmemcache://",
        # Pages parsed in the worker's threads: no process pool left behind by the kill.
        "CPU_PROCESSES": "0",
    }
    out = tmp_path / "eval"
    command = [sys.executable, "manage.py", "evaluate", "favabench", "--file", str(FAVABENCH), "--out", str(out)]
    command += ["--mode", "sparse", "--concurrency", "1"]
    with (tmp_path / "first.log").open("w") as log:
        first = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=log, stderr=log, start_new_session=True)
        try:
            wait_for_lines(out / "items.jsonl", first, at_least=1)
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(10)
    done_before = {line["id"] for line in journal_lines(out)}
    assert 1 <= len(done_before) < 4

    second = subprocess.run(
        [*command, "--resume"], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300
    )

    assert second.returncode == 0, second.stderr
    outputs = {item.id: item.output for item in datasets.load("favabench", FAVABENCH)}
    with sqlite3.connect(database) as db:
        verified = Counter(text for (text,) in db.execute("SELECT text FROM verification_verification"))
    for item_id in done_before:
        assert verified[outputs[item_id]] == 1, "a text finished before the kill was verified again"
    assert set(verified) == set(outputs.values())
    assert sorted(line["id"] for line in journal_lines(out)) == sorted(outputs)
    overall = read_report(out)["favabench"]["overall"]
    assert (overall["tp"], overall["fp"], overall["fn"], overall["tn"], overall["texts"]) == (3, 1, 2, 4, 4)
    assert "Report written to" in second.stdout


def wait_for_lines(path: Path, process: subprocess.Popen, *, at_least: int, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= at_least:
            return
        assert process.poll() is None, "the evaluation ended before it could be killed"
        time.sleep(0.05)
    raise AssertionError(f"no line in {path} after {timeout} s")


# --- claim-stance and segments


def test_claim_stance_scores_the_judge_against_mapped_stances(world, tmp_path):
    world.llm.fail_words = {"Zanzibrook": 422}  # the 7th pair's judgement fails
    out = tmp_path / "stance"

    evaluate("claim-stance", "--file", CLAIM_STANCE, "--out", out)

    report = read_report(out)
    stance = report["claim_stance"]
    # gold (mapped) → judge: supported→supported ✓, supported→irrelevant, not_supported→not_supported ✓,
    # not_supported (partially-support)→supported, irrelevant→irrelevant ✓, irrelevant→not_supported,
    # supported→failed. Accuracy 3/7.
    assert stance["accuracy"] == pytest.approx(3 / 7)
    assert (stance["total"], stance["correct"], stance["failed"]) == (7, 3, 1)
    per_class = stance["per_class"]
    # supported: TP 1, FP 1 (pair 4), FN 2 (pairs 2, 7) → P 1/2, R 1/3, F1 = 2 / (2 + 1 + 2) = 0.4.
    assert (per_class["supported"]["precision"], per_class["supported"]["recall"]) == pytest.approx((0.5, 1 / 3))
    assert per_class["supported"]["f1"] == pytest.approx(0.4)
    # not_supported: TP 1 (3), FP 1 (6), FN 1 (4); irrelevant: TP 1 (5), FP 1 (2), FN 1 (6): F1 1/2 each.
    assert per_class["not_supported"]["f1"] == pytest.approx(0.5)
    assert per_class["irrelevant"]["f1"] == pytest.approx(0.5)
    assert stance["macro_f1"] == pytest.approx((0.4 + 0.5 + 0.5) / 3)
    assert stance["mapping"]["partially-support"] == "not_supported"
    assert report["failures"]["evidence"] == 1
    # The judge alone: one call per pair that answered, no search.
    assert report["cost"]["total"]["llm_calls"] == 6 and report["cost"]["total"]["searches"] == 0
    assert world.serper.queries == []


def test_segments_scores_our_sentence_boundaries_against_the_reference(tmp_path):
    out = tmp_path / "segments"

    evaluate("segments", "--file", SEGMENTS, "--out", out)

    # Text 1: both boundaries found (TP 2). Text 2: the reference keeps "…embassy. She likes tea."
    # whole, we split after "embassy." (TP 1, FP 1). Text 3: the reference splits after "fell;"
    # and "growth,", we do not (FN 2). Pooled: TP 3, FP 1, FN 2 → P 3/4, R 3/5, F1 6/9.
    segments = read_report(out)["segments"]
    assert (segments["tp"], segments["fp"], segments["fn"], segments["texts"]) == (3, 1, 2, 3)
    assert (segments["precision"], segments["recall"], segments["f1"]) == pytest.approx((0.75, 0.6, 6 / 9))


# --- resuming, and what is refused


def test_resume_refuses_another_file_or_other_settings(world, settings, tmp_path):
    out = tmp_path / "eval"
    evaluate("segments", "--file", SEGMENTS, "--out", out)

    with pytest.raises(CommandError, match="already holds an evaluation: add --resume"):
        evaluate("segments", "--file", SEGMENTS, "--out", out)
    other = tmp_path / "other.jsonl"
    other.write_text(SEGMENTS.read_text().splitlines()[0] + "\n")
    with pytest.raises(CommandError, match="another file"):
        evaluate("segments", "--file", other, "--out", out, "--resume")

    settings.LLM_MODELS = "fake-model,other-model"
    stance = tmp_path / "stance"
    evaluate("claim-stance", "--file", CLAIM_STANCE, "--out", stance, "--limit", "1")
    with pytest.raises(CommandError, match=r"model 'fake-model' \(now 'other-model'\)"):
        evaluate("claim-stance", "--file", CLAIM_STANCE, "--out", stance, "--resume", "--model", "other-model")


def test_resume_runs_only_the_items_not_done(world, tmp_path):
    out = tmp_path / "stance"
    evaluate("claim-stance", "--file", CLAIM_STANCE, "--out", out, "--limit", "2")
    calls = sum(world.llm.calls.values())

    evaluate("claim-stance", "--file", CLAIM_STANCE, "--out", out, "--limit", "3", "--resume")

    assert calls == 2 and sum(world.llm.calls.values()) == 3  # only the third pair was judged
    assert len(journal_lines(out)) == 3 and read_report(out)["claim_stance"]["total"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--top-k-results", "0"), "--top-k-results: Ensure this value is greater than or equal to 1"),
        (("--model", "nope"), "--model: Select a valid choice"),
        (("--grid", "top_k_results=1,11"), "--grid top_k_results=11: --top-k-results"),
        (("--grid", "depth=1,2"), "KEY one of top_k_results, top_k_passages, context_size, mode"),
        (("--grid", "top_k_results=one"), "takes whole numbers"),
        (("--threshold", "1.5"), "--threshold must be between 0 and 1"),
        (("--concurrency", "0"), "--concurrency must be 1 or more"),
        (("--resume",), "--resume needs --out DIR"),
    ],
)
def test_bad_options_are_refused_with_a_clear_message(world, tmp_path, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace("+", r"\+")):
        evaluate("favabench", "--file", FAVABENCH, *args)


def test_the_grid_is_for_favabench_only(world, tmp_path):
    with pytest.raises(CommandError, match="for favabench only"):
        evaluate("segments", "--file", SEGMENTS, "--grid", "top_k_results=1,2", "--out", tmp_path / "x")


def test_a_malformed_line_is_named_with_its_file_and_line_number(tmp_path):
    bad = tmp_path / "stance.jsonl"
    lines = CLAIM_STANCE.read_text().splitlines()
    bad.write_text("\n".join([lines[0], lines[1], '{"claim": "x", "evidence": ', lines[3]]) + "\n")

    done = subprocess.run(
        [sys.executable, "manage.py", "evaluate", "claim-stance", "--file", str(bad), "--out", str(tmp_path / "o")],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "DJANGO_SECRET_KEY": "x", "LLM_MODELS": "m"},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode != 0
    assert f"{bad}, line 3: not JSON" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists()  # nothing started


def test_a_favabench_file_with_broken_json_names_line_3(tmp_path):
    bad = tmp_path / "fava.json"
    bad.write_text(
        '[\n{"prompt": "p", "output": "A b.", "annotated": "A b.", "model": "chatgpt"},\n'
        '{"prompt": "p", "output": oops}\n]\n'
    )

    with pytest.raises(CommandError, match=r"fava\.json, item 2: not JSON .*line 3"):
        evaluate("favabench", "--file", bad, "--out", tmp_path / "o")


def test_evaluate_trail_scores_labelled_claims_with_veritrails_metrics(world, tmp_path):
    """The example trail's claims, labelled, checked by the fake model over HTTP: every verdict and
    entry stage right, then one label flipped to show the metrics move."""
    trail_file = ROOT / "docs" / "examples" / "trail.json"
    labelled = [
        {"claim": "The Eiffel Tower opened in Paris in 1889.", "label": "fully_supported"},
        {"claim": "The tower was painted gold in 1920.", "label": "not_fully_supported", "error_stage": 1},
        {
            "claim": "The tower hosts a famous underwater aquarium.",
            "label": "not_fully_supported",
            "error_stage": "final",
        },
    ]
    folder = tmp_path / "labelled"
    folder.mkdir()
    lines = [json.dumps({"trail_file": str(trail_file), **row}) for row in labelled]
    (folder / "claims.jsonl").write_text("\n".join(lines))
    out = io.StringIO()
    call_command("evaluate", "trail", str(folder), "--out", str(tmp_path / "report"), stdout=out)

    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["metrics"]["macro_f1"] == 1.0 and report["metrics"]["balanced_accuracy"] == 1.0
    assert report["metrics"]["error_stage_accuracy"] == 1.0 and report["metrics"]["stage_claims"] == 2
    assert "macro-F1 1.000" in out.getvalue()

    labelled[0]["label"] = "not_fully_supported"  # now one claim is scored wrong
    (folder / "claims.jsonl").write_text("\n".join(json.dumps({"trail_file": str(trail_file), **r}) for r in labelled))
    call_command("evaluate", "trail", str(folder), "--out", str(tmp_path / "again"), stdout=io.StringIO())
    metrics = json.loads((tmp_path / "again" / "report.json").read_text())["metrics"]
    # All three labelled not fully supported, one found fully supported: that class's recall is 2/3.
    assert metrics["balanced_accuracy"] == pytest.approx(2 / 3)
    assert metrics["f1_not_fully_supported"] == pytest.approx(0.8) and metrics["macro_f1"] < 1


def test_evaluate_trail_names_the_file_and_line_of_a_bad_label(world, tmp_path):
    (tmp_path / "claims.jsonl").write_text(json.dumps({"trail": {"nodes": []}, "claim": "x", "label": "true"}))
    with pytest.raises(CommandError, match=r"claims\.jsonl, line 1"):
        call_command("evaluate", "trail", str(tmp_path), "--out", str(tmp_path / "out"), stdout=io.StringIO())
