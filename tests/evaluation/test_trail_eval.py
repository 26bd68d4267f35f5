import json

import pytest

from tests.trail_fixtures import GRAPHRAG, GRAPHRAG_CLAIMS, HIERARCHY, HIERARCHY_CLAIMS, load
from tests.trail_model import TrailTestModel
from verification.evaluation.trail_eval import (
    LabelledTrailError,
    evaluate_trails,
    read_labelled,
    stage_found,
    trail_metrics,
)
from verification.pipeline.trail_loop import UNDETERMINED, ErrorStage, check_claim
from verification.pipeline.trail_verdict import TrailVerdict

FS, NFS, CON, INC = (
    TrailVerdict.FULLY_SUPPORTED,
    TrailVerdict.NOT_FULLY_SUPPORTED,
    TrailVerdict.CONTRADICTED,
    TrailVerdict.INCONCLUSIVE,
)
fs, nfs, inc = "fully_supported", "not_fully_supported", "inconclusive"


def binary_rows(*pairs):
    return [(label, verdict, None, None) for label, verdict in pairs]


@pytest.mark.parametrize(
    "pairs, macro_f1, balanced_accuracy, counts",
    [
        pytest.param([(fs, FS), (nfs, NFS)], 1.0, 1.0, (2, 2, 0, 0), id="all right"),
        # FS: tp 2, fp 0, fn 1 → F1 4/5; NFS: tp 1, fp 1, fn 0 → F1 2/3. Recalls 2/3 and 1.
        pytest.param([(fs, FS), (fs, FS), (fs, NFS), (nfs, NFS)], (4 / 5 + 2 / 3) / 2, (2 / 3 + 1) / 2, (4, 4, 0, 0)),
        # A predicted inconclusive is a miss for its class and a prediction of neither:
        # FS: tp 1, fn 1 → 2/3; NFS: tp 1 → 1. Recalls 1/2 and 1.
        pytest.param([(fs, INC), (fs, FS), (nfs, NFS)], (2 / 3 + 1) / 2, 3 / 4, (3, 3, 0, 1), id="inconclusive wrong"),
        pytest.param([(nfs, CON), (fs, FS)], 1.0, 1.0, (2, 2, 0, 0), id="contradicted is not fully supported"),
        pytest.param(
            [(inc, FS), (inc, NFS), (inc, INC), (fs, FS), (nfs, NFS)],
            1.0,
            1.0,
            (5, 2, 3, 0),
            id="inconclusive left out",
        ),
        # Only FS among gold labels: FS tp 1, fn 1 → 2/3; NFS tp 0, fp 1 → 0 (predicted, so counted).
        # Balanced accuracy over the gold classes: FS's recall 1/2 alone.
        pytest.param([(fs, FS), (fs, NFS)], 1 / 3, 1 / 2, (2, 2, 0, 0), id="one gold class"),
        pytest.param([(fs, FS), (fs, "fully_supported")], 1.0, 1.0, (2, 2, 0, 0), id="verdicts as text"),
        pytest.param([(inc, FS)], None, None, (1, 0, 1, 0), id="nothing to score"),
        pytest.param([], None, None, (0, 0, 0, 0), id="no claims"),
    ],
)
def test_macro_f1_and_balanced_accuracy(pairs, macro_f1, balanced_accuracy, counts):
    metrics = trail_metrics(binary_rows(*pairs))
    assert metrics.macro_f1 == pytest.approx(macro_f1)
    assert metrics.balanced_accuracy == pytest.approx(balanced_accuracy)
    assert (metrics.claims, metrics.scored, metrics.inconclusive_labels, metrics.inconclusive_predictions) == counts


@pytest.mark.parametrize(
    "gold, found, right",
    [
        (1, ErrorStage("stage", (1,), ("sec-2",)), True),
        (2, ErrorStage("stage", (1, 2), ("sec-2", "part-1")), True),
        (2, ErrorStage("stage", (1,), ("sec-2",)), False),
        ("final", ErrorStage("final_step", (3,), ("final",)), True),
        ("final", ErrorStage("stage", (3,), ("x",)), False),
        (3, ErrorStage("final_step", (3,), ("final",)), False),
        (1, UNDETERMINED, False),
        (1, None, False),
        (None, ErrorStage("stage", (1,), ("sec-2",)), False),
    ],
)
def test_the_error_stage_is_found_when_the_predicted_one_holds_the_labelled_one(gold, found, right):
    assert stage_found(gold, found) is right


def test_error_stage_accuracy_counts_labelled_stages_of_unsupported_claims_only():
    at_1 = ErrorStage("stage", (1,), ("sec-1",))
    final = ErrorStage("final_step", (3,), ("final",))
    metrics = trail_metrics(
        [
            (nfs, NFS, 1, at_1),  # right
            (nfs, CON, "final", final),  # right
            (nfs, NFS, 2, at_1),  # wrong stage
            (nfs, NFS, 1, UNDETERMINED),  # wrong: undetermined
            (nfs, FS, 1, None),  # wrong: not predicted unsupported, so no stage
            (nfs, NFS, None, at_1),  # stage unknown: not counted
            (fs, FS, None, None),  # supported: not counted
        ]
    )
    assert (metrics.stage_claims, metrics.stage_predicted, metrics.stage_correct) == (5, 4, 2)
    assert metrics.error_stage_accuracy == pytest.approx(2 / 5)
    assert trail_metrics(binary_rows((fs, FS))).error_stage_accuracy is None
    assert metrics.as_dict()["stage_correct"] == 2


# --- the JSON-lines format

TRAIL = {
    "nodes": [
        {"id": "r1", "text": "One."},
        {"id": "r2", "text": "Two."},
        {"id": "s1", "text": "One and two.", "from": ["r1", "r2"]},
        {"id": "final", "text": "All.", "from": ["s1"]},
    ]
}


def write_lines(path, *records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def test_a_directory_is_read_file_by_file_with_trails_inline_or_from_files_relative_to_the_lines(tmp_path):
    (tmp_path / "trails").mkdir()
    (tmp_path / "trails" / "t.json").write_text(json.dumps(TRAIL))
    write_lines(
        tmp_path / "b.jsonl",
        {"trail_file": "trails/t.json", "claim": "Two.", "label": nfs, "error_stage": 1},
        "",
        {"trail_file": "trails/t.json", "claim": "Three.", "label": nfs, "error_stage": "final", "id": "third"},
    )
    write_lines(tmp_path / "a.jsonl", {"trail": TRAIL, "claim": "One.", "label": fs, "error_stage": None})
    (tmp_path / "notes.txt").write_text("not read")
    claims = read_labelled(tmp_path)
    assert [(c.claim, c.label, c.error_stage) for c in claims] == [
        ("One.", fs, None),
        ("Two.", nfs, 1),
        ("Three.", nfs, "final"),
    ]
    assert claims[0].name == f"{tmp_path / 'a.jsonl'}, line 1"
    assert claims[2].name == "third"
    assert claims[1].trail == TRAIL
    # One trail file, read once, shared by the lines that name it.
    assert claims[1].trail is claims[2].trail
    assert [c.claim for c in read_labelled(tmp_path / "a.jsonl")] == ["One."]


@pytest.mark.parametrize(
    "record, message",
    [
        ("{not json", "line 2: not JSON"),
        ([1, 2], "line 2: a line is one JSON object"),
        ({"trail": TRAIL, "claim": "x", "label": fs, "stage": 1}, "line 2: unknown key 'stage'"),
        ({"trail": TRAIL, "label": fs}, "line 2: 'claim' is missing"),
        ({"trail": TRAIL, "claim": "x", "label": "supported"}, "line 2: 'label' is 'supported': one of"),
        ({"trail": TRAIL, "claim": "x", "label": fs, "id": 7}, "line 2: 'id' is text"),
        ({"claim": "x", "label": fs}, "line 2: give the trail as 'trail' or as 'trail_file'"),
        ({"trail": TRAIL, "trail_file": "t.json", "claim": "x", "label": fs}, "line 2: give the trail as"),
        ({"trail": {"nodes": []}, "claim": "x", "label": fs}, "line 2: not a valid trail: a trail is an object"),
        ({"trail_file": "missing.json", "claim": "x", "label": fs}, "line 2: trail_file 'missing.json': no such file"),
        ({"trail_file": "broken.json", "claim": "x", "label": fs}, "line 2: trail_file 'broken.json': not JSON"),
        (
            {"trail_file": "ghost.json", "claim": "x", "label": fs},
            "trail_file 'ghost.json': not a valid trail: node 'f': 'from' names 'ghost', which is not a node",
        ),
        ({"trail": TRAIL, "claim": "x", "label": fs, "error_stage": 1}, "for not_fully_supported claims only"),
        ({"trail": TRAIL, "claim": "x", "label": nfs, "error_stage": True}, r"'error_stage' is True: a stage"),
        ({"trail": TRAIL, "claim": "x", "label": nfs, "error_stage": "1"}, "'error_stage' is '1'"),
        (
            {"trail": TRAIL, "claim": "x", "label": nfs, "error_stage": 2},
            r"'error_stage' 2 is no intermediate text's stage in its trail \(theirs: 1\)",
        ),
    ],
)
def test_a_line_it_cannot_use_is_named_by_file_and_line(tmp_path, record, message):
    (tmp_path / "broken.json").write_text("{")
    ghost = {"nodes": [{"id": "r", "text": "R."}, {"id": "f", "text": "F.", "from": ["r", "ghost"]}]}
    (tmp_path / "ghost.json").write_text(json.dumps(ghost))
    path = write_lines(tmp_path / "set.jsonl", {"trail": TRAIL, "claim": "fine", "label": fs}, record)
    with pytest.raises(LabelledTrailError, match=message) as raised:
        read_labelled(tmp_path)
    assert str(raised.value).startswith(f"{path}, line 2: ")


def latin1(path):
    path.write_bytes('{"claim": "Café"}'.encode("latin-1"))
    return path


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp, "no \\*.jsonl files in this directory"),
        (lambda tmp: tmp / "nowhere", "no such file or directory"),
        (lambda tmp: latin1(tmp / "x.jsonl"), "x.jsonl: not UTF-8 text"),
    ],
)
def test_it_names_a_path_it_cannot_read(tmp_path, make, message):
    with pytest.raises(LabelledTrailError, match=message):
        read_labelled(make(tmp_path))


# --- end to end: the planted claims, labelled as planted, score 1.0

LABEL_OF = {FS: fs, NFS: nfs, CON: nfs, INC: inc}


def planted_lines(trail_file, planted_claims):
    for planted in planted_claims:
        expected = planted.expected
        stage = None
        if expected.error is not None:
            stage = "final" if expected.error.kind == "final_step" else expected.error.stages[0]
        label = LABEL_OF[expected.verdict]
        yield {
            "trail_file": trail_file,
            "claim": planted.claim,
            "label": label,
            "error_stage": stage,
            "id": planted.name,
        }


def test_the_planted_claims_checked_down_their_trails_score_1(tmp_path):
    for name, data in (("hierarchy", HIERARCHY), ("graphrag", GRAPHRAG)):
        (tmp_path / "trails" / f"{name}.json").parent.mkdir(exist_ok=True)
        (tmp_path / "trails" / f"{name}.json").write_text(json.dumps(data))
    write_lines(tmp_path / "labelled" / "hierarchy.jsonl", *planted_lines("../trails/hierarchy.json", HIERARCHY_CLAIMS))
    write_lines(tmp_path / "labelled" / "graphrag.jsonl", *planted_lines("../trails/graphrag.json", GRAPHRAG_CLAIMS))

    evaluation = evaluate_trails(
        read_labelled(tmp_path / "labelled"),
        lambda trail, claim: check_claim(TrailTestModel(), load(trail), claim, q=3),
    )

    metrics = evaluation.metrics
    assert (metrics.macro_f1, metrics.balanced_accuracy, metrics.error_stage_accuracy) == (1.0, 1.0, 1.0)
    # 13 planted claims; the ambiguous one is labelled inconclusive and left out.
    assert (metrics.claims, metrics.scored, metrics.inconclusive_labels, metrics.inconclusive_predictions) == (
        13,
        12,
        1,
        0,
    )
    # Entered at the section summaries (2, one of them contradicted), at the part summaries, at the
    # final step (2), and at a community report.
    assert (metrics.stage_claims, metrics.stage_predicted, metrics.stage_correct) == (6, 6, 6)
    assert [claim.name for claim, _ in evaluation.results][:2] == [p.name for p in GRAPHRAG_CLAIMS[:2]]
