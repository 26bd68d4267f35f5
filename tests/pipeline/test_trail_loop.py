import json
from dataclasses import replace

import pytest

from tests.trail_fixtures import (
    BOOK_CLAIMS,
    BRANNOCK,
    GRAPHRAG,
    GRAPHRAG_CLAIMS,
    HARLOW,
    HIERARCHY,
    HIERARCHY_CLAIMS,
    ORRIN,
    TOLLAND,
    WRENFIELD,
    book_trail_data,
    load,
)
from tests.trail_model import TrailTestModel
from verification.pipeline.trail_graph import parse_trail
from verification.pipeline.trail_loop import (
    UNDETERMINED,
    ErrorStage,
    Round,
    StopReason,
    SupportPath,
    check_claim,
    error_stage,
    first_candidates,
    next_candidates,
    next_step,
    run_round,
    stop_reason,
    supported_path,
)
from verification.pipeline.trail_select import NodeSelection, SelectionOptions, node_sentences
from verification.pipeline.trail_verdict import TrailVerdict
from verification.pipeline.types import StepError

FS = TrailVerdict.FULLY_SUPPORTED
NFS = TrailVerdict.NOT_FULLY_SUPPORTED
CON = TrailVerdict.CONTRADICTED
INC = TrailVerdict.INCONCLUSIVE

TRAILS = {"hierarchy": load(HIERARCHY), "graphrag": load(GRAPHRAG)}
PLANTED = [("hierarchy", p) for p in HIERARCHY_CLAIMS] + [("graphrag", p) for p in GRAPHRAG_CLAIMS]
PLANTED += [("book", p) for p in BOOK_CLAIMS]

# r3 is an input of "b" and of "final" too: a trail with a step skipped.
SMALL = parse_trail(
    {
        "nodes": [
            {"id": "r1", "text": "One."},
            {"id": "r2", "text": "Two."},
            {"id": "r3", "text": "Three."},
            {"id": "a", "text": "A.", "from": ["r1", "r2"]},
            {"id": "b", "text": "B.", "from": ["r2", "r3"]},
            {"id": "final", "text": "F.", "from": ["a", "b", "r3"]},
        ]
    },
    max_nodes=10,
    max_chars=1000,
)


def trail_named(name: str):
    return load(book_trail_data()) if name == "book" else TRAILS[name]


def a_round(candidates: str, evidence: str, verdict: TrailVerdict, index: int = 1) -> Round:
    """A round over the space-separated candidates, the `evidence` ones holding a sentence."""
    held = set(evidence.split())
    selections = tuple(
        NodeSelection(node, ("S1",) if node in held else (), {"S1": "x"} if node in held else {}, "", 1)
        for node in candidates.split()
    )
    return Round(index, tuple(candidates.split()), selections, verdict, "")


def rounds(*specs: tuple[str, str, TrailVerdict]) -> list[Round]:
    return [a_round(*spec, index=i) for i, spec in enumerate(specs, start=1)]


@pytest.mark.parametrize("q", [1, 3])
@pytest.mark.parametrize(("trail_name", "planted"), PLANTED, ids=[p.name for _, p in PLANTED])
def test_every_planted_claim_gets_its_verdict_error_stage_and_sources(trail_name, planted, q):
    trail = trail_named(trail_name)
    expected = planted.expect(q)

    result = check_claim(TrailTestModel(), trail, planted.claim, q=q)

    assert (result.verdict, result.stop, result.error) == (expected.verdict, expected.stop, expected.error)
    if expected.verdict is FS:
        assert result.path.sources == expected.sources
        assert result.path.nodes[0] == trail.final
        assert all(used in trail.inputs(made) for used, made in result.path.edges)
    else:
        assert result.path is None


def test_q1_gives_up_where_q3_looks_wider_and_finds_the_claim():
    trail = TRAILS["hierarchy"]

    wider = check_claim(TrailTestModel(), trail, BRANNOCK, q=3)
    at_once = check_claim(TrailTestModel(), trail, BRANNOCK, q=1)

    assert [r.verdict for r in wider.rounds] == [NFS, FS, FS]
    assert [r.verdict for r in at_once.rounds] == [NFS]
    assert wider.path == SupportPath(
        nodes=("final", "part-1", "sec-2", "src-3"),
        edges=(("part-1", "final"), ("sec-2", "part-1"), ("src-3", "sec-2")),
        sources=("src-3",),
    )
    assert at_once.error == ErrorStage("final_step", (3,), ("final",))


@pytest.mark.parametrize(
    ("claim", "candidates"),
    [
        (HARLOW, [("part-1", "part-2"), ("sec-1", "sec-2"), ("src-1", "src-2")]),
        (WRENFIELD, [("part-1", "part-2"), ("sec-3", "sec-4"), ("src-5", "src-6", "src-7", "src-8")]),
        (TOLLAND, [("part-1", "part-2"), ("sec-1", "sec-2", "sec-3", "sec-4"), tuple(f"src-{n}" for n in range(1, 9))]),
        (ORRIN, [("part-1", "part-2"), ("sec-3", "sec-4"), ("src-5", "src-6")]),
    ],
    ids=["follows-the-evidence", "looks-wider-after-not-supported", "looks-wider-every-round", "inconclusive-follows"],
)
def test_each_round_checks_the_candidates_its_rule_gives(claim, candidates):
    result = check_claim(TrailTestModel(), TRAILS["hierarchy"], claim, q=3)

    assert [r.candidates for r in result.rounds] == candidates


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        (("a b r3", "a", FS), ("r1", "r2")),
        (("a b r3", "a r3", FS), ("r1", "r2", "r3")),
        (("a b r3", "b", INC), ("r2", "r3")),
        (("a b r3", "a", NFS), ("r1", "r2", "r3")),
        (("a b r3", "", NFS), ("r1", "r2", "r3")),
        (("a b r3", "r3", CON), ("r1", "r2", "r3")),
        (("a", "a", CON), ("r1", "r2")),
        (("r1 r2", "r1", FS), ("r1",)),
        (("r1 r2", "r1 r2", INC), ("r1", "r2")),
        (("r1 r2", "r1", NFS), ()),
    ],
    ids=[
        "supported-follows-evidence",
        "a-source-with-evidence-stays",
        "inconclusive-follows-evidence",
        "not-supported-takes-every-input",
        "nothing-found-takes-every-input",
        "contradicted-takes-every-input",
        "contradicted-one-node",
        "sources-after-supported",
        "sources-after-inconclusive",
        "sources-after-not-supported",
    ],
)
def test_next_candidates(last, expected):
    assert next_candidates(SMALL, a_round(*last)) == expected


def test_the_first_candidates_are_the_final_texts_inputs():
    assert first_candidates(SMALL) == ("a", "b", "r3")
    assert next_step(SMALL, [], q=3) == (("a", "b", "r3"), None)


@pytest.mark.parametrize(
    ("done", "candidates", "q", "cap", "expected"),
    [
        ([], ("a", "b", "r3"), 3, 1, None),
        ([("a b r3", "r3", FS)], ("r3",), 3, None, StopReason.ONLY_CHECKED_ROOTS),
        ([("a b r3", "a r3", FS)], ("r1", "r2", "r3"), 3, None, None),
        ([("r1 r2", "", NFS)], (), 3, None, StopReason.NO_CANDIDATES),
        ([("a", "", NFS), ("r1 r2", "", NFS), ("r3", "", NFS)], ("x",), 3, None, StopReason.NOT_SUPPORTED_Q_TIMES),
        ([("a", "", NFS), ("r1 r2", "", CON), ("r3", "", NFS)], ("x",), 3, None, StopReason.NOT_SUPPORTED_Q_TIMES),
        ([("a", "", NFS), ("b", "b", FS), ("r3", "", NFS)], ("r2",), 3, None, None),
        ([("a", "", NFS), ("b", "b", INC)], ("r2",), 2, None, None),
        ([("a b r3", "r3", CON)], ("r1", "r2"), 1, None, StopReason.NOT_SUPPORTED_Q_TIMES),
        ([("a b", "a", FS)], ("r1", "r2"), 3, 3, StopReason.VISIT_CAP),
        ([("a b", "a", FS)], ("r1", "r2"), 3, 4, None),
        ([("a b r3", "r3", FS)], ("r3",), 3, 1, StopReason.ONLY_CHECKED_ROOTS),
    ],
    ids=[
        "the-first-round-always-runs",
        "only-checked-sources",
        "a-new-source-among-them",
        "no-candidates",
        "q-in-a-row",
        "contradicted-counts-toward-q",
        "not-in-a-row",
        "inconclusive-breaks-the-row",
        "q1-after-contradicted",
        "over-the-visit-cap",
        "at-the-visit-cap",
        "sources-read-before-the-cap",
    ],
)
def test_stop_reason(done, candidates, q, cap, expected):
    assert stop_reason(SMALL, rounds(*done), candidates, q=q, max_node_visits=cap) is expected


def test_the_visit_cap_keeps_the_latest_verdict_and_leaves_the_error_undetermined():
    trail = TRAILS["hierarchy"]

    supported = check_claim(TrailTestModel(), trail, HARLOW, max_node_visits=4)
    unsupported = check_claim(TrailTestModel(), trail, TOLLAND, max_node_visits=4)

    assert (supported.stop, supported.verdict, len(supported.rounds)) == (StopReason.VISIT_CAP, FS, 2)
    assert supported.path.sources == () and supported.path.nodes == ("final", "part-1", "sec-1")
    assert (unsupported.stop, unsupported.verdict, unsupported.error) == (StopReason.VISIT_CAP, NFS, UNDETERMINED)


@pytest.mark.parametrize(
    ("done", "stop", "expected"),
    [
        ([("a b r3", "a", FS), ("r1 r2", "", NFS)], None, ErrorStage("stage", (1,), ("a",))),
        ([("a b r3", "a b", FS), ("r1 r2 r3", "r1", NFS)], None, ErrorStage("stage", (1,), ("a", "b"))),
        ([("a b r3", "a", FS), ("r1 r2", "r1", CON)], None, ErrorStage("stage", (1,), ("a",))),
        ([("a b r3", "", NFS), ("r1 r2 r3", "", NFS)], None, ErrorStage("final_step", (2,), ("final",))),
        ([("a b r3", "a", CON)], None, ErrorStage("final_step", (2,), ("final",))),
        ([("a b r3", "a", INC), ("r1 r2", "", NFS)], None, UNDETERMINED),
        ([("a b r3", "r3", FS), ("r3", "", NFS)], None, UNDETERMINED),
        ([("a b r3", "a", FS), ("r1 r2", "", NFS)], StopReason.VISIT_CAP, UNDETERMINED),
        ([("a b r3", "a", NFS), ("r1 r2", "r1", FS)], None, None),
        ([("a b r3", "a", FS), ("r1 r2", "r1 r2", INC)], None, None),
    ],
    ids=[
        "entered-where-the-last-supported-round-found-it",
        "several-nodes-of-a-stage",
        "contradicted-below",
        "never-supported-entered-at-the-final-step",
        "contradicted-at-once",
        "inconclusive-cannot-tell",
        "sources-said-it",
        "stopped-by-the-cap",
        "supported",
        "inconclusive",
    ],
)
def test_error_stage(done, stop, expected):
    assert error_stage(SMALL, rounds(*done), stop) == expected


def test_supported_path_follows_a_carried_source_and_a_skipped_step():
    path = supported_path(SMALL, rounds(("a b r3", "a r3", FS), ("r1 r2 r3", "r1 r3", FS)))

    assert path == SupportPath(
        nodes=("final", "a", "r1", "r3"),
        edges=(("a", "final"), ("r3", "final"), ("r1", "a")),
        sources=("r1", "r3"),
    )


def test_invented_ids_are_dropped_and_change_nothing():
    trail = TRAILS["hierarchy"]
    for planted in HIERARCHY_CLAIMS:
        honest = check_claim(TrailTestModel(), trail, planted.claim)
        inventive_model = TrailTestModel(invent_ids=True)
        inventive = check_claim(inventive_model, trail, planted.claim)

        # The same rounds but for the tokens: the invented ids made the answers longer.
        assert [replace(r, completion_tokens=0) for r in inventive.rounds] == [
            replace(r, completion_tokens=0) for r in honest.rounds
        ], planted.name
        for one in inventive.rounds:
            for selection in one.selections:
                count = len(node_sentences(trail.text(selection.node_id)))
                assert all(int(s[1:]) <= count for s in selection.sentence_ids)
        assert any("S999999" in str(call["answer"]) for call in inventive_model.calls)


def test_a_model_answering_in_plain_lines_reaches_the_same_results():
    trail = TRAILS["graphrag"]
    for planted in GRAPHRAG_CLAIMS:
        as_json = check_claim(TrailTestModel(), trail, planted.claim)
        plain = check_claim(TrailTestModel(plain=True), trail, planted.claim)

        assert (plain.verdict, plain.error, plain.path) == (as_json.verdict, as_json.error, as_json.path)


def test_a_book_length_source_split_over_prompts_still_yields_the_needle():
    trail = load(book_trail_data())
    claim = BOOK_CLAIMS[0].claim
    whole = SelectionOptions(rank_top_k=None)

    split = check_claim(TrailTestModel(), trail, claim, selection_options=whole)
    ranked = check_claim(TrailTestModel(), trail, claim)

    book_prompts = {r.selections[0].prompts for r in split.rounds if r.candidates == ("book",)}
    assert book_prompts == {67}
    assert split.verdict is ranked.verdict is FS
    assert split.path == ranked.path
    assert ranked.calls < split.calls / 10
    print(
        f"\nbook claim: {split.calls} calls, ~{split.prompt_tokens:,} tokens unranked; {ranked.calls} calls, "
        f"~{ranked.prompt_tokens:,} tokens ranked"
    )


def test_calls_and_tokens_are_counted_per_round_and_for_the_claim():
    model = TrailTestModel()

    result = check_claim(model, TRAILS["hierarchy"], HARLOW)

    assert result.calls == model.usage.calls == len(model.calls)
    assert result.prompt_tokens == model.usage.prompt_tokens > 0
    assert result.completion_tokens == model.usage.completion_tokens > 0
    # Two parts, two sections, two sources and a verdict each round.
    assert [r.calls for r in result.rounds] == [3, 3, 3]


def test_a_selection_is_reused_from_the_cache_for_the_same_claim_and_node():
    trail = parse_trail(
        {
            "nodes": [
                {"id": "src-a", "text": "Bread is cheap. Rain fell."},
                {"id": "src-b", "text": "The Harlow mill ground barley for the abbey."},
                {"id": "sum", "text": HARLOW, "from": ["src-a", "src-b"]},
                {"id": "final", "text": HARLOW, "from": ["sum", "src-a"]},
            ]
        },
        max_nodes=10,
        max_chars=1000,
    )
    cache = {}

    first = check_claim(TrailTestModel(), trail, HARLOW, cache=cache)
    again_model = TrailTestModel()
    again = check_claim(again_model, trail, HARLOW, cache=cache)

    # Round 2 reads src-a again (an input of "sum" as of the final text) without asking again.
    assert [r.candidates for r in first.rounds] == [("sum", "src-a"), ("src-a", "src-b")]
    assert [r.calls for r in first.rounds] == [3, 2]
    assert first.rounds[1].selections[0] is first.rounds[0].selections[1]
    assert set(cache) == {(HARLOW, "sum"), (HARLOW, "src-a"), (HARLOW, "src-b")}
    assert [call["schema_name"] for call in again_model.calls] == ["trail_verdict", "trail_verdict"]
    assert again.verdict is first.verdict is FS


class Dies(TrailTestModel):
    """A worker that is killed after `calls` calls."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.left = calls

    def complete(self, **request):
        if self.left == 0:
            raise StepError("the worker was killed")
        self.left -= 1
        return super().complete(**request)


# BRANNOCK's rounds take 2 calls (two parts, nothing found, no verdict), 5 and 3.
@pytest.mark.parametrize(("killed_after", "rounds_stored"), [(1, 0), (4, 1), (8, 2)])
def test_a_claim_killed_mid_trail_resumes_from_its_stored_rounds(killed_after, rounds_stored):
    trail = TRAILS["hierarchy"]
    uninterrupted = check_claim(TrailTestModel(), trail, BRANNOCK)
    stored: list[str] = []

    with pytest.raises(StepError):
        check_claim(Dies(killed_after), trail, BRANNOCK, on_round=lambda r: stored.append(json.dumps(r.as_dict())))
    resumed_model = TrailTestModel()
    resumed = check_claim(resumed_model, trail, BRANNOCK, rounds=[Round.from_dict(json.loads(s)) for s in stored])

    assert resumed == uninterrupted
    assert len(resumed_model.calls) == uninterrupted.calls - sum(Round.from_dict(json.loads(s)).calls for s in stored)
    assert len(stored) == rounds_stored


def test_rounds_can_be_run_one_at_a_time_from_the_pure_pieces():
    trail, done = TRAILS["hierarchy"], []
    model = TrailTestModel()
    while True:
        candidates, stop = next_step(trail, done, q=3)
        if stop is not None:
            break
        done.append(run_round(model, trail, HARLOW, candidates, index=len(done) + 1))

    assert done == list(check_claim(TrailTestModel(), trail, HARLOW).rounds)
    assert stop is StopReason.ONLY_CHECKED_ROOTS


def test_q_below_one_is_refused():
    with pytest.raises(ValueError, match="q is at least 1"):
        check_claim(TrailTestModel(), SMALL, "x", q=0)


def test_a_round_survives_a_json_round_trip():
    one = replace(a_round("a b", "a", CON), reasoning="Says otherwise.", calls=3, prompt_tokens=10, completion_tokens=2)

    assert Round.from_dict(json.loads(json.dumps(one.as_dict()))) == one


@pytest.mark.parametrize(("trail_name", "planted"), PLANTED, ids=[p.name for _, p in PLANTED])
def test_every_planted_claim_is_in_its_final_text(trail_name, planted):
    trail = trail_named(trail_name)

    assert planted.claim in trail.text(trail.final)
