import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.trail_fixtures import GRAPHRAG, GRAPHRAG_CLAIMS, load
from tests.trail_model import TrailTestModel
from verification.pipeline.trail_graph import Trail
from verification.pipeline.trail_import import (
    TrailImportError,
    graphrag_trail,
    json_trail,
    langchain_map_reduce_trail,
    result_trail,
)
from verification.pipeline.trail_loop import check_claim


def edges(trail: Trail) -> set[tuple[str, str]]:
    return {(name, node.id) for node in trail.nodes for name in node.inputs}


def steps(trail: Trail) -> dict[str, str | None]:
    return {node.id: node.step for node in trail.nodes}


def arrows(text: str) -> set[tuple[str, str]]:
    """The edges "a>b c>d" names: b written from a, d from c."""
    return {tuple(pair.split(">")) for pair in text.split()}


# --- LangChain map-reduce


DOCUMENTS = ["The mill ground barley.", "The river froze.", "The ferry carried wagons."]


def langchain_run(documents=None, **overrides) -> dict:
    return {
        "input_documents": documents or [{"page_content": text, "metadata": {"source": "a.txt"}} for text in DOCUMENTS],
        "intermediate_steps": ["Mill: barley.", "River: frozen.", "Ferry: wagons."],
        "output_text": "A mill, a frozen river and a ferry.",
        **overrides,
    }


def test_it_maps_each_document_to_its_map_summary_and_all_summaries_to_the_final_text():
    trail = load(langchain_map_reduce_trail(json.loads(json.dumps(langchain_run()))))
    assert trail.ids == ("doc-1", "doc-2", "doc-3", "map-1", "map-2", "map-3", "final")
    assert edges(trail) == arrows("doc-1>map-1 doc-2>map-2 doc-3>map-3 map-1>final map-2>final map-3>final")
    assert trail.final == "final"
    assert trail.roots == ("doc-1", "doc-2", "doc-3")
    assert steps(trail) == {
        **dict.fromkeys(["doc-1", "doc-2", "doc-3"], "source document"),
        **dict.fromkeys(["map-1", "map-2", "map-3"], "map summary"),
        "final": "reduce",
    }
    assert {trail.stage(node) for node in ("doc-1", "map-2", "final")} == {0, 1, 2}
    assert trail.text("doc-2") == "The river froze."
    assert trail.text("map-3") == "Ferry: wagons."
    assert trail.text("final") == "A mill, a frozen river and a ferry."


@pytest.mark.parametrize(
    "documents",
    [
        pytest.param(DOCUMENTS, id="plain strings"),
        pytest.param(
            [{"lc": 1, "type": "constructor", "kwargs": {"page_content": text, "metadata": {}}} for text in DOCUMENTS],
            id="langchain_core.load.dumpd",
        ),
    ],
)
def test_it_reads_the_other_shapes_of_a_document(documents):
    trail = load(langchain_map_reduce_trail(langchain_run(documents)))
    assert trail.text("doc-1") == "The mill ground barley."
    assert ("doc-3", "map-3") in edges(trail)


def test_collapse_levels_go_between_the_map_summaries_and_the_final_text():
    run = langchain_run(
        collapse_steps=[
            [
                {"text": "Mill and river.", "from": ["map-1", "map-2"]},
                {"text": "Ferry.", "from": ["map-3"]},
            ],
            [{"text": "Mill, river, ferry.", "from": ["collapse-1-1", "collapse-1-2"]}],
        ]
    )
    trail = load(langchain_map_reduce_trail(run))
    assert trail.inputs("collapse-1-1") == ("map-1", "map-2")
    assert trail.inputs("collapse-1-2") == ("map-3",)
    assert trail.inputs("collapse-2-1") == ("collapse-1-1", "collapse-1-2")
    assert trail.inputs("final") == ("collapse-2-1",)
    assert steps(trail)["collapse-1-2"] == "collapse 1"
    assert steps(trail)["collapse-2-1"] == "collapse 2"
    path = ("doc-1", "map-1", "collapse-1-1", "collapse-2-1", "final")
    assert [trail.stage(node) for node in path] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "run, message",
    [
        (["not", "an", "object"], "is a JSON object"),
        ({"intermediate_steps": [], "output_text": "x"}, "'input_documents' is missing or empty"),
        (langchain_run(intermediate_steps=None), "return_intermediate_steps=True"),
        (langchain_run(intermediate_steps=["one", "two"]), "3 input documents but 2 intermediate steps"),
        (langchain_run(["a", {"metadata": {}}, "c"]), "input document 2 is neither text nor an object"),
        (langchain_run(["a", "  ", "c"]), "input document 2 is empty"),
        (langchain_run(intermediate_steps=["a", 7, "c"]), "intermediate step 2 is empty or not text"),
        (langchain_run(output_text=""), "'output_text' is empty"),
        (langchain_run(collapse_steps={"level": 1}), "'collapse_steps' is a list of levels"),
        (langchain_run(collapse_steps=[[]]), "collapse_steps level 1 is not a non-empty list"),
        (
            langchain_run(collapse_steps=[[{"text": "x", "from": ["map-1", "doc-2"]}]]),
            "level 1, text 1: 'from' names 'doc-2', which is not a node of the level before",
        ),
        (
            langchain_run(collapse_steps=[[{"text": "x", "from": ["map-1", "map-2"]}]]),
            "no text is written from 'map-3'",
        ),
        (langchain_run(collapse_steps=[[{"text": "x"}]]), "text 1: 'from' is a non-empty list"),
    ],
)
def test_it_refuses_a_run_it_cannot_map(run, message):
    with pytest.raises(TrailImportError, match=message):
        langchain_map_reduce_trail(run)


# --- GraphRAG

UNITS = {"u-a": "Alpha unit text.", "u-b": "Beta unit text.", "u-c": "Gamma unit text.", "u-d": "Delta unit text."}
COMMUNITIES = {0: ["u-a", "u-b"], 1: ["u-b", "u-c"], 2: ["u-d"]}


def write(folder, name, columns: dict) -> None:
    folder.mkdir(exist_ok=True)
    pq.write_table(pa.table(columns), folder / f"{name}.parquet")


def graphrag_folder(folder, *, prefix="", units=UNITS, communities=COMMUNITIES, reports=None, readable=True):
    text_units = {"id": list(units), "text": list(units.values()), "n_tokens": [3] * len(units)}
    if readable:
        text_units["human_readable_id"] = list(range(10, 10 + len(units)))
    write(folder, f"{prefix}text_units", text_units)
    write(
        folder,
        f"{prefix}communities",
        {
            "id": [f"uuid-{c}" for c in communities],
            "community": list(communities),
            "level": [0] * len(communities),
            "text_unit_ids": list(communities.values()),
        },
    )
    write(
        folder,
        f"{prefix}community_reports",
        reports
        or {
            "id": [f"report-uuid-{c}" for c in communities],
            "community": list(communities),
            "title": [f"Community {c}" for c in communities],
            "summary": [f"Summary {c}." for c in communities],
            "full_content": [f"# Community {c}\n\nFull report {c}." for c in communities],
        },
    )
    return folder


def test_text_units_feed_their_communities_reports_and_the_reports_the_answer(tmp_path):
    trail = load(graphrag_trail(graphrag_folder(tmp_path / "output"), "The answer."))
    assert trail.ids == tuple(
        "text-unit-10 text-unit-11 text-unit-12 text-unit-13 report-0 report-1 report-2 answer".split()
    )
    assert edges(trail) == arrows(
        "text-unit-10>report-0 text-unit-11>report-0 text-unit-11>report-1 text-unit-12>report-1 "
        "text-unit-13>report-2 report-0>answer report-1>answer report-2>answer"
    )
    assert trail.final == "answer"
    column = ("text-unit-13", "report-1", "answer")
    assert [(steps(trail)[node], trail.stage(node)) for node in column] == [
        ("text unit", 0),
        ("community report", 1),
        ("answer", 2),
    ]
    assert trail.text("text-unit-12") == "Gamma unit text."
    assert trail.text("report-2") == "# Community 2\n\nFull report 2."
    assert trail.text("answer") == "The answer."


@pytest.mark.parametrize("used", [[1], ["1"], ["report-uuid-1"]], ids=["number", "number as text", "report id"])
def test_only_the_reports_the_answer_used_and_their_text_units_are_kept(tmp_path, used):
    trail = load(graphrag_trail(graphrag_folder(tmp_path), "The answer.", reports=used))
    assert trail.ids == ("text-unit-11", "text-unit-12", "report-1", "answer")


def test_it_reads_the_create_final_tables_of_older_versions_and_a_summary_without_full_content(tmp_path):
    reports = {"community": [0, 1, 2], "summary": ["Summary 0.", "Summary 1.", "Summary 2."]}
    folder = graphrag_folder(tmp_path, prefix="create_final_", reports=reports, readable=False)
    trail = load(graphrag_trail(folder, "The answer.", reports=[2]))
    # Without human_readable_id a text unit is numbered by its row, from 1.
    assert trail.ids == ("text-unit-4", "report-2", "answer")
    assert trail.text("report-2") == "Summary 2."


def test_max_text_units_bounds_the_text_units_the_used_reports_need(tmp_path):
    folder = graphrag_folder(tmp_path)
    with pytest.raises(TrailImportError, match=r"written from 4 text units, more than max_text_units \(3\)"):
        graphrag_trail(folder, "The answer.", max_text_units=3)
    assert len(load(graphrag_trail(folder, "The answer.", reports=[0], max_text_units=2)).roots) == 2


def test_only_the_texts_of_the_text_units_needed_are_read(tmp_path):
    folder = graphrag_folder(tmp_path, units={**UNITS, "u-d": ""})
    roots = load(graphrag_trail(folder, "The answer.", reports=[0, 1])).roots
    assert roots == ("text-unit-10", "text-unit-11", "text-unit-12")
    with pytest.raises(TrailImportError, match="text unit 'u-d' is empty"):
        graphrag_trail(folder, "The answer.")


def replaced(name, **columns):
    return lambda folder: write(folder, name, columns)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda folder: (folder / "communities.parquet").unlink(), "no communities.parquet"),
        (
            replaced("text_units", id=list(UNITS), body=list(UNITS.values())),
            r"text_units.parquet has no column 'text' \(its columns: id, body\)",
        ),
        (
            replaced("communities", community=[0], text_units=[["u-a"]]),
            "communities.parquet has no column 'text_unit_ids'",
        ),
        (
            replaced("community_reports", community=[0], title=["x"]),
            "has neither a 'full_content' nor a 'summary' column",
        ),
        (
            replaced("community_reports", community=[7], summary=["x"]),
            "community 7 has a report but is not in communities",
        ),
        (replaced("communities", community=[0, 1], text_unit_ids=[["u-a"], []]), "community 1 has no text_unit_ids"),
        (
            replaced("communities", community=[0, 1, 2], text_unit_ids=[["u-a"], ["u-b"], ["u-z"]]),
            "community 2 names text unit 'u-z', which is not in text_units.parquet",
        ),
        (
            replaced("community_reports", community=[0, 1, 2], summary=["x", " ", "z"]),
            r"the report of community 1 \(summary\) is empty",
        ),
        (lambda folder: (folder / "text_units.parquet").write_text("not parquet"), "text_units.parquet: not a parquet"),
    ],
)
def test_it_names_the_missing_table_or_column(tmp_path, change, message):
    folder = graphrag_folder(tmp_path)
    change(folder)
    with pytest.raises(TrailImportError, match=message):
        graphrag_trail(folder, "The answer.")


@pytest.mark.parametrize(
    "answer, reports, message",
    [
        ("", None, "the answer is empty"),
        ("The answer.", [1, 42, "nope"], r"no report in community_reports.parquet has .* '42', 'nope'"),
        ("The answer.", [], "'reports' names no report"),
    ],
)
def test_it_refuses_an_answer_or_report_list_it_cannot_use(tmp_path, answer, reports, message):
    with pytest.raises(TrailImportError, match=message):
        graphrag_trail(graphrag_folder(tmp_path), answer, reports=reports)


def test_a_folder_that_is_not_one_is_named(tmp_path):
    with pytest.raises(TrailImportError, match="not a folder"):
        graphrag_trail(tmp_path / "missing", "The answer.")


def test_the_planted_graphrag_trail_imported_from_parquet_finds_every_planted_verdict_and_stage(tmp_path):
    """The fixture's GraphRAG trail written as GraphRAG's tables: the import gives the same graph
    under GraphRAG's names, so the check finds what the fixture planted."""
    nodes = {node["id"]: node for node in GRAPHRAG["nodes"]}
    units = {node_id: node["text"] for node_id, node in nodes.items() if node["step"] == "text unit"}
    reports = {node_id: node for node_id, node in nodes.items() if node["step"] == "community report"}
    communities = {int(node_id.removeprefix("report-")): node["from"] for node_id, node in reports.items()}
    folder = graphrag_folder(
        tmp_path,
        units=units,
        communities=communities,
        reports={"community": list(communities), "full_content": [node["text"] for node in reports.values()]},
        readable=False,
    )
    trail = load(graphrag_trail(folder, nodes["answer"]["text"]))
    renamed = {f"text-unit-{n}": unit for n, unit in enumerate(units, start=1)}
    for planted in GRAPHRAG_CLAIMS:
        result = check_claim(TrailTestModel(), trail, planted.claim, q=3)
        assert result.verdict is planted.expected.verdict, planted.name
        assert result.error == planted.expected.error, planted.name
        sources = tuple(renamed[node] for node in result.path.sources) if result.path else ()
        assert sources == planted.expected.sources, planted.name


# --- a file of any format: told apart by its content (the /trail form's file)


def test_a_json_file_is_read_by_its_format():
    trail = {"nodes": [{"id": "a", "text": "A."}]}
    assert json_trail(trail) is trail
    assert load(json_trail(langchain_run())).final == "final"
    with pytest.raises(TrailImportError, match="JSON in no format a trail is read from; give a factsite trail"):
        json_trail({"summary": "A mill."})


def result_node(node_id, text, inputs=(), step=None, stage=0, url="") -> dict:
    """A node as a trail result (selectors/trail_result) gives it."""
    return {
        "id": node_id,
        "text": text,
        "inputs": list(inputs),
        "step": step or f"stage {stage}",
        "stage": stage,
        "url": url,
        "status": "done",
        "error": "",
        "is_root": not inputs,
        "is_final": False,
    }


def test_a_trail_result_gives_back_the_trail_it_checked():
    result = {
        "kind": "trail",
        "status": "done",
        "nodes": [
            result_node("a", "Alpha.", step="chapter"),
            result_node("b", "Beta read from the web.", url="https://example.org/b"),
            result_node("s", "Alpha and beta.", ["a", "b"], stage=1),
            result_node("f", "Final.", ["s"], step="answer", stage=2),
        ],
        "claims": [],
    }

    assert json_trail(result) == {
        "nodes": [
            {"id": "a", "text": "Alpha.", "from": [], "step": "chapter", "stage": 0},
            {"id": "b", "document": {"url": "https://example.org/b"}, "from": [], "stage": 0},
            {"id": "s", "text": "Alpha and beta.", "from": ["a", "b"], "stage": 1},
            {"id": "f", "text": "Final.", "from": ["s"], "step": "answer", "stage": 2},
        ]
    }


def test_a_trail_result_without_its_texts_holds_no_trail():
    withheld = {**result_node("a", None), "text_withheld": True}
    with pytest.raises(TrailImportError, match="no text for node 'a': a trail result carries its texts only"):
        result_trail({"kind": "trail", "nodes": [withheld, result_node("f", "Final.", ["a"], stage=1)]})


def answer_inputs(trail: Trail) -> tuple[str, ...]:
    return trail.inputs("answer")


@pytest.mark.parametrize(
    ("answer", "inputs"),
    [
        ("Mills ground barley [Data: Reports (2, 0)]. Rivers froze [Data: Reports (0)].", ("report-0", "report-2")),
        ("Both [Data: Sources (13); Reports (1)].", ("report-1", "text-unit-13")),
        ("Only a text unit [Data: Sources (12, 99)].", ("text-unit-12",)),
        ("Many [Data: Reports (1, 2, +more)].", ("report-0", "report-1", "report-2")),
        ("One report no index has [Data: Reports (42, 2)].", ("report-2",)),
        ("No markers at all [1].", ("report-0", "report-1", "report-2")),
        ("In code: `[Data: Reports (1)]`.", ("report-0", "report-1", "report-2")),
    ],
    ids=["reports", "beside-sources", "sources-only", "cut-short", "unknown-id", "none", "in-code"],
)
def test_the_answers_markers_choose_what_it_was_written_from(tmp_path, answer, inputs):
    trail = load(graphrag_trail(graphrag_folder(tmp_path), answer))
    assert answer_inputs(trail) == inputs
    # The trail holds those inputs' text units, no others.
    needed = {unit for node in inputs for unit in trail.inputs(node)} | {n for n in inputs if n.startswith("text-")}
    assert set(trail.roots) == needed


def test_an_answer_citing_only_reports_the_folder_lacks_is_refused_as_written_from_another_index(tmp_path):
    with pytest.raises(TrailImportError, match=r"no report in community_reports.parquet has .* '42', '43'"):
        graphrag_trail(graphrag_folder(tmp_path), "Trams [Data: Reports (42)]. Buses [Data: Reports (43)].")


def test_cited_entities_and_relationships_bring_the_text_units_their_descriptions_were_written_from(tmp_path):
    folder = graphrag_folder(tmp_path)
    write(folder, "entities", {"id": ["e-5", "e-6"], "human_readable_id": [5, 6], "text_unit_ids": [["u-d"], ["u-c"]]})
    write(folder, "relationships", {"id": ["r-1"], "human_readable_id": [23], "text_unit_ids": [["u-a", "u-d"]]})

    trail = load(graphrag_trail(folder, "Owner [Data: Entities (5); Relationships (23); Reports (2)]."))

    assert answer_inputs(trail) == ("report-2", "text-unit-13", "text-unit-10")
    # Without those tables an entity names nothing the trail can hold.
    (folder / "entities.parquet").unlink()
    (folder / "relationships.parquet").unlink()
    assert answer_inputs(load(graphrag_trail(folder, "Owner [Data: Entities (5)]."))) == (
        "report-0",
        "report-1",
        "report-2",
    )


def test_reports_named_by_hand_replace_what_the_markers_cite(tmp_path):
    trail = load(graphrag_trail(graphrag_folder(tmp_path), "Mills [Data: Reports (1); Sources (13)].", reports=[2]))
    assert answer_inputs(trail) == ("report-2",)
