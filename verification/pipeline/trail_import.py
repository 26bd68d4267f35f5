"""What users already have → a trail: the JSON object parse_trail reads (see trail_graph).

LangChain map-reduce summarisation
----------------------------------
`load_summarize_chain(llm, chain_type="map_reduce", return_intermediate_steps=True)` writes one map
summary per input document, then reduces the map summaries to one text. Invoked with
`{"input_documents": docs}` (not `return_only_outputs=True`, which drops the documents) it returns
inputs and outputs together. Saved as JSON, each Document as an object with its `page_content`
(`doc.dict()`, `model_dump()` and `langchain_core.load.dumpd` all do), that is:

    {"input_documents": [{"page_content": "...", "metadata": {...}}, ...],
     "intermediate_steps": ["<map summary of document 1>", ...],   # one per document, same order
     "output_text": "<the final summary>"}

`input_documents` may also be plain strings (the list-of-strings variant). The trail:

    doc-i     document i's page_content                        step "source document"
    map-i     intermediate_steps[i-1], from doc-i              step "map summary"
    final     output_text, from every map-i                    step "reduce"

Metadata is not carried: a trail node has no field for it. When the map summaries together pass
ReduceDocumentsChain's `token_max`, LangChain first collapses them in groups, level by level, and
returns none of those texts. Whoever recorded them (a callback on the collapse chain) adds them as

    "collapse_steps": [[{"text": "...", "from": ["map-1", "map-2"]}, ...], ...]

one list per level: collapse-L-k is level L's k-th text (step "collapse L"), written from nodes of
the level before it (the map summaries for level 1), each of which it uses; final is then written
from the last level. A node no text was written from would be a second final text.

Microsoft GraphRAG
------------------
An index's output folder holds parquet tables: text_units, communities and community_reports in
GraphRAG 1.x/2.x (create_final_text_units and so on in older versions). Read with pyarrow:

    text_units          id, text (human_readable_id when present)
    communities         community, text_unit_ids
    community_reports   community, full_content or summary (id when present)

The answer's own "[Data: …]" markers say what it was written from (GraphRAG's search prompts ask
for "[Data: Sources (15, 16), Reports (1), Entities (5); Relationships (23); Claims (2, +more)]",
ids being human_readable_id). Read by the text's citation recognition (trail_citations):

    Reports (c)         community c's report
    Sources (h)         text unit h, read by the answer directly (local search)
    Entities (e)        the text units entity e's description was written from (entities table,
    Relationships (r)   relationships table: text_unit_ids), read by the answer directly
    Claims, or none     nothing more; every report when the answer cites nothing it can follow,
                        or cuts its Reports short with "+more"

An id no record has (a model may write one) is left out, but an answer citing reports of which
the folder has none is refused (it was written from another index). `reports` given by hand
(community numbers, or report ids) replaces what the markers choose, and must all exist. The trail:

    text-unit-<h>   a text unit of a used report's community, or    step "text unit"
                    one the answer cites
    report-<c>      community c's report, from its text units       step "community report"
    answer          the answer, from the reports and the text       step "answer"
                    units it cites

h is the text unit's human_readable_id, or its row in the table from 1 without one. GraphRAG
writes entity and relationship descriptions between text units and reports, and global search a
partial answer per batch of reports; the trail skips both, so a claim that entered there shows
as entering at the community reports (or, for a cited entity, at the answer).

A file of any of these (json_trail)
-----------------------------------
The /trail form tells a JSON file's format from its content: factsite's trail (an object with
"nodes"), a factsite trail result (GET /api/trails/{id}: "kind": "trail", each node's "inputs",
its "text", null when withheld from the reader, and its "url"), or a LangChain run. A trail
result gives back the trail it checked: each node's text, or its web address to read again."""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from verification.pipeline.trail_citations import GraphragCited, graphrag_cited

SOURCE_STEP, MAP_STEP, REDUCE_STEP = "source document", "map summary", "reduce"
TEXT_UNIT_STEP, REPORT_STEP, ANSWER_STEP = "text unit", "community report", "answer"
# GraphRAG 1.x/2.x table names, then older versions'.
_PREFIXES = ("", "create_final_")
# Named in an error before "…": enough to find them.
_NAMED = 5


class TrailImportError(ValueError):
    """What the import cannot use, naming the document, table or column."""


def langchain_map_reduce_trail(run: Any) -> dict[str, Any]:
    """A map-reduce summarisation run, decoded from its JSON → the trail (see the module's doc)."""
    if not isinstance(run, dict):
        raise TrailImportError("a LangChain run is a JSON object with 'input_documents', 'intermediate_steps' …")
    documents = run.get("input_documents")
    if not isinstance(documents, list) or not documents:
        raise TrailImportError(
            "'input_documents' is missing or empty: save the chain's inputs with its outputs "
            "(invoke it without return_only_outputs=True)"
        )
    maps = run.get("intermediate_steps")
    if not isinstance(maps, list):
        raise TrailImportError("'intermediate_steps' is missing: run the chain with return_intermediate_steps=True")
    if len(maps) != len(documents):
        raise TrailImportError(
            f"{len(documents)} input documents but {len(maps)} intermediate steps: a map-reduce run writes one "
            "map summary per document"
        )
    nodes = [
        {"id": f"doc-{i}", "text": _text(_page_content(document, i), f"input document {i}"), "step": SOURCE_STEP}
        for i, document in enumerate(documents, start=1)
    ]
    level = [f"map-{i}" for i in range(1, len(maps) + 1)]
    nodes += [
        {"id": node, "text": _text(summary, f"intermediate step {i}"), "from": [f"doc-{i}"], "step": MAP_STEP}
        for i, (node, summary) in enumerate(zip(level, maps, strict=True), start=1)
    ]
    levels = run.get("collapse_steps") or []
    if not isinstance(levels, list):
        raise TrailImportError("'collapse_steps' is a list of levels, each a list of {'text', 'from'} objects")
    for number, texts in enumerate(levels, start=1):
        collapsed = _collapse_level(number, texts, level)
        nodes += collapsed
        level = [node["id"] for node in collapsed]
    final = _text(run.get("output_text"), "'output_text'")
    return {"nodes": [*nodes, {"id": "final", "text": final, "from": level, "step": REDUCE_STEP}]}


def _page_content(document: Any, number: int) -> Any:
    if isinstance(document, str):
        return document
    if isinstance(document, dict):
        # langchain_core.load.dumpd wraps a Document's fields in "kwargs".
        fields = document if "page_content" in document else document.get("kwargs")
        if isinstance(fields, dict) and "page_content" in fields:
            return fields["page_content"]
    raise TrailImportError(f"input document {number} is neither text nor an object with a 'page_content'")


def _collapse_level(number: int, texts: Any, previous: list[str]) -> list[dict[str, Any]]:
    where = f"collapse_steps level {number}"
    if not isinstance(texts, list) or not texts:
        raise TrailImportError(f"{where} is not a non-empty list of {{'text', 'from'}} objects")
    nodes, used = [], set()
    for k, item in enumerate(texts, start=1):
        inputs = item.get("from") if isinstance(item, dict) else None
        if not isinstance(inputs, list) or not inputs:
            raise TrailImportError(f"{where}, text {k}: 'from' is a non-empty list of node ids")
        if strangers := [name for name in inputs if name not in previous]:
            raise TrailImportError(
                f"{where}, text {k}: 'from' names {strangers[0]!r}, which is not a node of the level before "
                f"({_names(previous)})"
            )
        used.update(inputs)
        text = _text(item.get("text"), f"{where}, text {k}")
        inputs = list(dict.fromkeys(inputs))
        nodes.append({"id": f"collapse-{number}-{k}", "text": text, "from": inputs, "step": f"collapse {number}"})
    if unused := [name for name in previous if name not in used]:
        raise TrailImportError(f"{where}: no text is written from {_names(unused)}; every node of a level is collapsed")
    return nodes


def graphrag_trail(
    folder: str | Path,
    answer: str,
    *,
    reports: Sequence[str | int] | None = None,
    max_text_units: int | None = None,
) -> dict[str, Any]:
    """A GraphRAG output folder and an answer written from it → the trail (see the module's doc):
    what the answer's markers cite, or the `reports` given. `max_text_units` bounds the text units
    the trail would hold; the texts of only those are read."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TrailImportError(f"{folder}: not a folder (give GraphRAG's output folder)")
    answer = _text(answer, "the answer")
    cited = graphrag_cited(answer) if reports is None else GraphragCited()
    report_table = _Table.read(folder, "community_reports", ["community"], optional=["id", "full_content", "summary"])
    content = next((column for column in ("full_content", "summary") if column in report_table.columns), None)
    if content is None:
        raise TrailImportError(f"{report_table.name} has neither a 'full_content' nor a 'summary' column")
    communities = _Table.read(folder, "communities", ["community", "text_unit_ids"])
    units_of = dict(zip(map(str, communities["community"]), communities["text_unit_ids"], strict=True))
    unit_table = _Table.read(folder, "text_units", ["id"], optional=["human_readable_id"])
    numbers = unit_table.columns.get("human_readable_id") or range(1, len(unit_table["id"]) + 1)
    unit_node = {unit: f"text-unit-{number}" for unit, number in zip(unit_table["id"], numbers, strict=True)}
    direct = _cited_units(folder, cited, unit_table["id"], [str(number) for number in numbers])
    rows = _used_reports(report_table, reports)
    if reports is None and "reports" not in cited.more and (cited.reports or direct):
        # A model may cite a report that is not there: it is left out. An answer whose reports
        # are none of the folder's was written from another index, and is refused naming them.
        strict = not direct and not _used_reports(report_table, cited.reports, known_only=True)
        rows = _used_reports(report_table, cited.reports, known_only=not strict)
    report_nodes, needed = [], set(direct)
    for row in rows:
        community = str(report_table["community"][row])
        units = _community_units(community, units_of, communities.name, unit_node, unit_table.name)
        needed.update(units)
        report_nodes.append(
            {
                "id": f"report-{community}",
                "text": _text(report_table[content][row], f"the report of community {community} ({content})"),
                "from": list(dict.fromkeys(unit_node[unit] for unit in units)),
                "step": REPORT_STEP,
            }
        )
    if max_text_units is not None and len(needed) > max_text_units:
        raise TrailImportError(
            f"the reports are written from {len(needed):,} text units, more than max_text_units "
            f"({max_text_units:,}): name fewer reports, or raise the limit"
        )
    texts = _Table.read(folder, "text_units", ["id", "text"], only_ids=needed)
    text_of = dict(zip(texts["id"], texts["text"], strict=True))
    unit_nodes = [
        {"id": unit_node[unit], "text": _text(text_of[unit], f"text unit {unit!r}"), "step": TEXT_UNIT_STEP}
        for unit in unit_table["id"]
        if unit in needed
    ]
    inputs = [node["id"] for node in report_nodes] + [unit_node[unit] for unit in direct]
    answer_node = {"id": "answer", "text": answer, "from": list(dict.fromkeys(inputs)), "step": ANSWER_STEP}
    return {"nodes": [*unit_nodes, *report_nodes, answer_node]}


def _cited_units(folder: Path, cited: GraphragCited, units: list[Any], numbers: list[str]) -> list[Any]:
    """The text units the answer read directly, in the order cited: those its Sources name, then
    those its Entities' and Relationships' descriptions were written from (when the folder has
    those tables). Ids no record has are left out."""
    by_number = dict(zip(numbers, units, strict=True))
    found = [by_number[number] for number in cited.sources if number in by_number]
    known = set(units)
    for record, name in ((cited.entities, "entities"), (cited.relationships, "relationships")):
        if not record or not _Table.exists(folder, name):
            continue
        table = _Table.read(folder, name, ["human_readable_id", "text_unit_ids"])
        written_from = dict(zip(map(str, table["human_readable_id"]), table["text_unit_ids"], strict=True))
        found += [unit for number in record for unit in written_from.get(number) or [] if unit in known]
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class _Table:
    """Some columns of one parquet table, as lists, and its file's name for errors."""

    name: str
    columns: dict[str, list[Any]]

    def __getitem__(self, column: str) -> list[Any]:
        return self.columns[column]

    @classmethod
    def read(
        cls, folder: Path, name: str, required: list[str], *, optional: Sequence[str] = (), only_ids: set | None = None
    ) -> "_Table":
        """`only_ids`: the rows with those ids only, so a big index's texts are not all read."""
        path = cls._path(folder, name)
        if path is None:
            raise TrailImportError(f"{folder}: no {name}.parquet (nor create_final_{name}.parquet) in this folder")
        try:
            present = pq.read_schema(path).names
        except (OSError, ValueError) as error:
            raise TrailImportError(f"{path.name}: not a parquet table ({error})") from None
        if missing := [column for column in required if column not in present]:
            raise TrailImportError(f"{path.name} has no column {missing[0]!r} (its columns: {', '.join(present)})")
        wanted = [*required, *(column for column in optional if column in present)]
        filters = None if only_ids is None else [("id", "in", list(only_ids))]
        return cls(path.name, pq.read_table(path, columns=wanted, filters=filters).to_pydict())

    @classmethod
    def exists(cls, folder: Path, name: str) -> bool:
        return cls._path(folder, name) is not None

    @staticmethod
    def _path(folder: Path, name: str) -> Path | None:
        paths = [folder / f"{prefix}{name}.parquet" for prefix in _PREFIXES]
        return next((path for path in paths if path.is_file()), None)


def _used_reports(table: _Table, wanted: Sequence[str | int] | None, *, known_only: bool = False) -> list[int]:
    """Rows of the reports the answer used, in the table's order. `known_only`: names no report
    has are left out (the answer's markers), instead of refused (names given by hand)."""
    rows = range(len(table["community"]))
    if not rows:
        raise TrailImportError(f"{table.name} holds no reports")
    if wanted is None:
        return list(rows)
    ids = table.columns.get("id")
    known = [{str(table["community"][row]), *([str(ids[row])] if ids else [])} for row in rows]
    names = {str(name) for name in wanted}
    if known_only:
        return [row for row in rows if known[row] & names]
    if not names:
        raise TrailImportError("'reports' names no report: give at least one, or none at all to use every report")
    if unknown := sorted(names - set().union(*known)):
        raise TrailImportError(
            f"no report in {table.name} has the community number or id {_names(unknown)} "
            "(give community numbers, as '[Data: Reports (…)]' cites them, or report ids)"
        )
    return [row for row in rows if known[row] & names]


def _community_units(
    community: str, units_of: dict[str, Any], communities: str, unit_node: dict[Any, str], text_units: str
) -> list[Any]:
    if community not in units_of:
        raise TrailImportError(f"community {community} has a report but is not in {communities}")
    units = list(units_of[community] or [])
    if not units:
        raise TrailImportError(f"{communities}: community {community} has no text_unit_ids")
    if strangers := [unit for unit in units if unit not in unit_node]:
        raise TrailImportError(
            f"{communities}: community {community} names text unit {strangers[0]!r}, which is not in {text_units}"
        )
    return units


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TrailImportError(f"{what} is empty or not text")
    return value


def _names(names: Sequence[str]) -> str:
    return ", ".join(map(repr, names[:_NAMED])) + (" …" if len(names) > _NAMED else "")


# The formats a trail file may be in, as a refusal names them.
FORMATS = (
    "a factsite trail (an object with 'nodes'), a factsite trail result (GET /api/trails/{id}, the result "
    "page's JSON), a LangChain map-reduce run (with 'input_documents', 'intermediate_steps' and 'output_text'), "
    "or GraphRAG output (a zip of its output folder, or its parquet tables)"
)


def json_trail(data: Any) -> dict[str, Any]:
    """A decoded JSON file of any format a trail file may be in → the trail. A factsite trail is
    returned as it is, for parse_trail to say what is wrong with it."""
    if isinstance(data, dict) and data.get("kind") == "trail":
        return result_trail(data)
    if isinstance(data, dict) and "nodes" in data:
        return data
    if isinstance(data, dict) and {"input_documents", "intermediate_steps", "output_text"} & set(data):
        return langchain_map_reduce_trail(data)
    raise TrailImportError(f"it is JSON in no format a trail is read from; give {FORMATS}")


def result_trail(result: Any) -> dict[str, Any]:
    """A factsite trail result (trail_result's JSON) → the trail it checked: each node's text, or
    its web address when it was given one (a new run reads it again). A result whose texts were
    withheld (only the run's creator receives them) holds no trail."""
    nodes = result.get("nodes") if isinstance(result, dict) else None
    if not isinstance(nodes, list) or not nodes:
        raise TrailImportError("a trail result has a non-empty 'nodes' list")
    return {"nodes": [_result_node(node, position) for position, node in enumerate(nodes, start=1)]}


def _result_node(node: Any, position: int) -> dict[str, Any]:
    if not isinstance(node, dict) or not isinstance(node.get("id"), str):
        raise TrailImportError(f"node {position} of the result is not an object with an 'id'")
    name, url, text = node["id"], node.get("url"), node.get("text")
    if url and isinstance(url, str):
        given: dict[str, Any] = {"document": {"url": url}}
    elif isinstance(text, str) and text.strip():
        given = {"text": text}
    else:
        raise TrailImportError(
            f"the result holds no text for node {name!r}: a trail result carries its texts only for the person "
            "who ran it"
        )
    trail_node = {"id": name, **given, "from": node.get("inputs") or []}
    stage, step = node.get("stage"), node.get("step")
    # The result names a step the trail did not name by its stage: that name is not the trail's.
    if step and step != f"stage {stage}":
        trail_node["step"] = step
    if stage is not None:
        trail_node["stage"] = stage
    return trail_node
