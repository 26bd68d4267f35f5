"""`manage.py trail_import`: a saved LangChain run and a GraphRAG output folder written out as
trails that a trail run takes as they are (inputs.trails.trail_submission)."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.pipeline.test_trail_import import graphrag_folder, langchain_run
from verification.inputs.trails import trail_submission


def imported(*args) -> dict:
    out = io.StringIO()
    call_command("trail_import", *args, stdout=out)
    return json.loads(out.getvalue())


def test_a_langchain_run_becomes_a_trail_a_run_accepts(configured, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(langchain_run()))

    trail = imported("langchain", str(path))

    submission = trail_submission(trail)
    assert submission.trail.final == "final"
    assert {node.step for node in submission.trail.nodes} == {"source document", "map summary", "reduce"}


def test_a_graphrag_folder_and_its_answer_become_a_trail_written_to_a_file(configured, tmp_path):
    folder = tmp_path / "output"
    folder.mkdir()
    graphrag_folder(folder)
    answer = tmp_path / "answer.txt"
    answer.write_text("The lighthouse keeper counted the gulls every morning.")
    out = tmp_path / "trail.json"

    call_command("trail_import", "graphrag", str(folder), "--answer", str(answer), "-o", str(out))

    submission = trail_submission(json.loads(out.read_text()))
    assert submission.trail.node(submission.trail.final).step == "answer"
    assert any(node.step == "community report" for node in submission.trail.nodes)


def test_it_says_what_is_wrong_with_what_it_was_given(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("{not json")
    with pytest.raises(CommandError, match="is not JSON"):
        call_command("trail_import", "langchain", str(path), stdout=io.StringIO())
    with pytest.raises(CommandError, match="--answer"):
        call_command("trail_import", "graphrag", str(tmp_path), stdout=io.StringIO())
    with pytest.raises(CommandError, match="not a folder"):
        call_command("trail_import", "graphrag", str(path), "--answer", str(path), stdout=io.StringIO())


def test_graphrag_reports_are_chosen_by_the_answers_markers_and_report_overrides_them(configured, tmp_path):
    folder = graphrag_folder(tmp_path / "output")
    answer = tmp_path / "answer.txt"
    answer.write_text("Alpha and beta met [Data: Reports (0)]. Delta stayed [Data: Reports (2); Sources (12)].")

    err = io.StringIO()
    out = io.StringIO()
    call_command("trail_import", "graphrag", str(folder), "--answer", str(answer), stdout=out, stderr=err)
    trail = trail_submission(json.loads(out.getvalue())).trail
    assert trail.inputs("answer") == ("report-0", "report-2", "text-unit-12")
    assert "report-1" not in trail.ids
    assert err.getvalue().strip() == "the answer is written from 2 reports (0, 2) and 1 text unit it cites (12)"

    by_hand = imported("graphrag", str(folder), "--answer", str(answer), "--report", "1")
    assert [node["id"] for node in by_hand["nodes"] if node["step"] == "community report"] == ["report-1"]


def test_an_imported_graphrag_answer_is_checked_without_its_markers(configured, tmp_path):
    folder = graphrag_folder(tmp_path / "output")
    answer = tmp_path / "answer.txt"
    answer.write_text("Alpha and beta met [Data: Reports (0, 1)].\n\nDelta stayed [Data: Reports (2)].")

    submission = trail_submission(imported("graphrag", str(folder), "--answer", str(answer)))

    text = answer.read_text()
    assert [s.text for s in submission.segments] == ["Alpha and beta met.", "Delta stayed."]
    assert [text[s.start : s.end] for s in submission.segments] == [
        "Alpha and beta met [Data: Reports (0, 1)].",
        "Delta stayed [Data: Reports (2)].",
    ]
