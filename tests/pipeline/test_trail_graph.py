import json
import pickle

import pytest

from tests.trail_fixtures import GRAPHRAG, HIERARCHY, book_trail_data, load
from verification.pipeline.trail_graph import (
    TRAIL_JSON_SCHEMA,
    DocumentRef,
    Trail,
    TrailError,
    TrailNode,
    parse_trail,
    step_name,
)

LIMITS = {"max_nodes": 20, "max_chars": 10_000}


def node(node_id: str, *inputs: str, **fields) -> dict:
    return {"id": node_id, "text": f"Text of {node_id}.", **({"from": list(inputs)} if inputs else {}), **fields}


def parse(*nodes: dict, **limits) -> Trail:
    return parse_trail({"nodes": list(nodes)}, **(LIMITS | limits))


DIAMOND = [node("a"), node("b"), node("mid", "a"), node("final", "mid", "b")]


def test_it_reads_roots_final_inputs_and_stages():
    trail = parse(*DIAMOND)

    assert trail.roots == ("a", "b")
    assert trail.final == "final"
    assert trail.inputs("final") == ("mid", "b")
    assert [trail.is_root(n) for n in trail.ids] == [True, True, False, False]
    # The longest distance from a root, not the shortest: "final" is 1 from "b" but 2 from "a".
    assert [trail.stage(n) for n in trail.ids] == [0, 0, 1, 2]


def test_a_given_stage_is_kept_and_counts_for_the_nodes_after_it():
    trail = parse(node("a"), node("mid", "a", stage=3), node("final", "mid"))

    assert (trail.stage("mid"), trail.stage("final")) == (3, 4)


def test_step_name_is_the_step_or_the_stage():
    trail = parse(node("a"), node("mid", "a", step="section summary"), node("final", "mid"))

    assert step_name(trail, "mid") == "section summary"
    assert step_name(trail, "final") == "stage 2"


def test_a_document_node_has_no_text_until_its_document_is_read():
    trail = parse(
        {"id": "web", "document": {"url": "https://example.org/a"}},
        {"id": "file", "document": {"upload": "report.pdf"}},
        node("final", "web", "file"),
    )

    assert trail.node("web").document == DocumentRef(url="https://example.org/a")
    assert trail.node("file").document == DocumentRef(upload="report.pdf")
    with pytest.raises(ValueError, match="no text yet"):
        trail.text("web")
    read = trail.with_texts({"web": "The page.", "file": "The report."})
    assert (read.text("web"), read.text("file"), read.node("web").document) == (
        "The page.",
        "The report.",
        DocumentRef(url="https://example.org/a"),
    )
    assert trail.node("web").text is None


@pytest.mark.parametrize(
    ("data", "message", "node_id"),
    [
        ([], "a trail is an object with a non-empty 'nodes' list", None),
        ({"nodes": []}, "a trail is an object with a non-empty 'nodes' list", None),
        ({"nodes": DIAMOND, "claims": []}, "unknown key 'claims' (a trail has only 'nodes')", None),
        ({"nodes": ["a"]}, "node 1 (counting from 1) is not an object", None),
        ({"nodes": [node("a"), {"text": "x"}]}, "node 2 (counting from 1) needs an 'id'", None),
        ({"nodes": [node("a"), node("a")]}, "node 'a': two nodes have this id", "a"),
        ({"nodes": [node("a"), node("sum-3", "x")]}, "node 'sum-3': 'from' names 'x', which is not a node", "sum-3"),
        ({"nodes": [node("a"), node("b", "a", "a")]}, "node 'b': 'from' names 'a' twice", "b"),
        ({"nodes": [node("a"), node("b", "b")]}, "node 'b': 'from' names the node itself", "b"),
        ({"nodes": [node("a"), node("b", from_="a")]}, "node 'b': unknown key 'from_'", "b"),
        ({"nodes": [node("a"), {"id": "b", "from": "a", "text": "x"}]}, "node 'b': 'from' is a list of node ids", "b"),
        (
            {"nodes": [node("a"), {"id": "b", "text": "x", "document": {"url": "https://e.org"}, "from": ["a"]}]},
            "node 'b': it has both 'text' and 'document': give one",
            "b",
        ),
        ({"nodes": [{"id": "a"}, node("b", "a")]}, "node 'a': it has neither 'text' nor 'document'", "a"),
        ({"nodes": [{"id": "a", "text": "  "}, node("b", "a")]}, "node 'a': its 'text' is empty or not text", "a"),
        (
            {"nodes": [{"id": "a", "document": {"url": "ftp://e.org/x"}}, node("b", "a")]},
            "node 'a': 'document' has a 'url' that is not an http(s) address",
            "a",
        ),
        (
            {"nodes": [{"id": "a", "document": {"url": "https://e.org", "upload": "x"}}, node("b", "a")]},
            "node 'a': 'document' is either",
            "a",
        ),
        ({"nodes": [node("a", stage=-1), node("b", "a")]}, "node 'a': 'stage' is a whole number from 0", "a"),
        ({"nodes": [node("a", stage=True), node("b", "a")]}, "node 'a': 'stage' is a whole number from 0", "a"),
        (
            {"nodes": [node("a", stage=2), node("b", "a", stage=1)]},
            "node 'b': its stage 1 comes before its input 'a'",
            "b",
        ),
        ({"nodes": [node("a", step=7), node("b", "a")]}, "node 'a': 'step' is a name", "a"),
        ({"nodes": [node("a", "b"), node("b", "a")]}, "every node has inputs ('from'), so none is a source", None),
        (
            {"nodes": [node("r"), node("a", "c"), node("b", "a"), node("c", "b"), node("final", "r", "c")]},
            "node 'a': 'from' goes round in a cycle: 'a' from 'c', 'c' from 'b', 'b' from 'a'",
            "a",
        ),
        (
            {"nodes": [node("a"), node("x", "a"), node("y", "a"), node("z", "a")]},
            "3 nodes are used by no other node ('x', 'y', 'z'); a trail has one final text",
            None,
        ),
        ({"nodes": [node("a")]}, "node 'a': the final text has no inputs ('from')", "a"),
    ],
)
def test_it_rejects_a_wrong_trail_naming_the_node_and_the_problem(data, message, node_id):
    with pytest.raises(TrailError) as raised:
        parse_trail(data, **LIMITS)

    assert str(raised.value).startswith(message)
    assert raised.value.node_id == node_id


def test_it_rejects_a_trail_over_the_node_limit():
    with pytest.raises(TrailError, match="the trail has 4 nodes, more than the limit of 3"):
        parse(*DIAMOND, max_nodes=3)


def test_it_rejects_a_trail_over_the_character_limit_but_not_at_it():
    total = sum(len(n["text"]) for n in DIAMOND)

    assert parse(*DIAMOND, max_chars=total).final == "final"
    with pytest.raises(TrailError, match=f"the texts hold {total} characters, more than the limit of {total - 1}"):
        parse(*DIAMOND, max_chars=total - 1)


def test_many_final_candidates_are_named_up_to_a_few():
    nodes = [node("a")] + [node(f"n{i}", "a") for i in range(8)]

    with pytest.raises(TrailError) as raised:
        parse(*nodes)

    assert str(raised.value) == (
        "8 nodes are used by no other node ('n0', 'n1', 'n2', 'n3', 'n4' …); a trail has one final text"
    )


def test_a_trail_error_survives_pickling():
    error = pickle.loads(pickle.dumps(TrailError("sum-3", "'from' names 'x', which is not a node")))

    assert (str(error), error.node_id) == ("node 'sum-3': 'from' names 'x', which is not a node", "sum-3")


def test_the_schema_describes_the_keys_the_parser_reads():
    item = TRAIL_JSON_SCHEMA["properties"]["nodes"]["items"]

    assert set(item["properties"]) == {"id", "text", "document", "from", "step", "stage"}
    assert item["required"] == ["id"] and item["additionalProperties"] is False
    assert [one["required"] for one in item["oneOf"]] == [["text"], ["document"]]
    assert TRAIL_JSON_SCHEMA["required"] == ["nodes"]
    json.dumps(TRAIL_JSON_SCHEMA)


@pytest.mark.parametrize(
    ("data", "final", "stages"),
    [(HIERARCHY, "final", {0: 8, 1: 4, 2: 2, 3: 1}), (GRAPHRAG, "answer", {0: 6, 1: 3, 2: 1})],
    ids=["hierarchy", "graphrag"],
)
def test_the_fixtures_are_valid_trails_of_the_expected_shape(data, final, stages):
    trail = load(data)

    assert trail.final == final
    counted: dict[int, int] = {}
    for node_id in trail.ids:
        counted[trail.stage(node_id)] = counted.get(trail.stage(node_id), 0) + 1
    assert counted == stages


def test_the_book_is_over_a_hundred_thousand_tokens():
    text = load(book_trail_data()).text("book")

    # Four characters and three quarters of a word a token are the usual English estimates.
    assert len(text) / 4 >= 100_000
    assert len(text.split()) / 0.75 >= 100_000


def test_a_trail_built_by_hand_answers_the_same():
    trail = Trail((TrailNode("a", text="A."), TrailNode("final", text="F.", inputs=("a",))))

    assert (trail.roots, trail.final, trail.stage("final")) == (("a",), "final", 1)
