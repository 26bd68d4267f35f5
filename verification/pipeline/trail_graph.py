"""A trail: the texts a generation process wrote, as a graph, checked before anything runs.

A node is a text: a source, an intermediate output (a section summary, a community report) or the
final text. `from` names the nodes that were the inputs of the step that wrote it; the sources
(roots) have none, the final node is the one no other node uses. VeriTrail (Metropolitansky &
Larson) calls this graph the generation process. A node's stage is its longest distance from a
root unless the trail gives one. Documents (a URL, an uploaded file) are read later, by the
reader documents mode uses: here a node only says which one it is."""

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import pairwise
from typing import Any

MAX_ID_CHARS = 200
MAX_STEP_CHARS = 200
# A stage given in the trail orders its columns; no generation process has a million steps, and a
# larger number would not fit the database's integer.
MAX_STAGE = 1_000_000
# Candidates named in one error: enough to find them, short enough to read in a 400.
MAX_NAMED = 5
_NODE_KEYS = frozenset({"id", "text", "document", "from", "step", "stage"})


class TrailError(ValueError):
    """What is wrong with a trail, naming the node (None when the trail as a whole is wrong)."""

    def __init__(self, node_id: str | None, problem: str) -> None:
        super().__init__(node_id, problem)
        self.node_id, self.problem = node_id, problem

    def __str__(self) -> str:
        return f"node {self.node_id!r}: {self.problem}" if self.node_id is not None else self.problem


@dataclass(frozen=True)
class DocumentRef:
    """A node's text to be read from a web address or from a file uploaded with the trail."""

    url: str = ""
    upload: str = ""


@dataclass(frozen=True)
class TrailNode:
    id: str
    text: str | None = None
    document: DocumentRef | None = None
    inputs: tuple[str, ...] = ()
    step: str | None = None
    # As the trail gives it; Trail.stage() computes the others.
    stage: int | None = None


@dataclass(frozen=True)
class Trail:
    """A validated trail (parse_trail makes one): acyclic, one final node, every input a node."""

    nodes: tuple[TrailNode, ...]

    @cached_property
    def _by_id(self) -> dict[str, TrailNode]:
        return {node.id: node for node in self.nodes}

    def node(self, node_id: str) -> TrailNode:
        return self._by_id[node_id]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._by_id)

    @cached_property
    def roots(self) -> tuple[str, ...]:
        return tuple(node.id for node in self.nodes if not node.inputs)

    @cached_property
    def final(self) -> str:
        used = {name for node in self.nodes for name in node.inputs}
        return next(node.id for node in self.nodes if node.id not in used)

    def inputs(self, node_id: str) -> tuple[str, ...]:
        return self._by_id[node_id].inputs

    def is_root(self, node_id: str) -> bool:
        return not self._by_id[node_id].inputs

    def stage(self, node_id: str) -> int:
        return self._stages[node_id]

    @cached_property
    def _stages(self) -> dict[str, int]:
        stages: dict[str, int] = {}
        for node_id in _topological(self.nodes):
            node = self._by_id[node_id]
            computed = 1 + max((stages[name] for name in node.inputs), default=-1)
            stages[node_id] = computed if node.stage is None else node.stage
        return stages

    def text(self, node_id: str) -> str:
        text = self._by_id[node_id].text
        if text is None:
            raise ValueError(f"node {node_id!r} has no text yet: read its document first")
        return text

    def with_texts(self, texts: Mapping[str, str]) -> "Trail":
        """The trail with its documents' texts read in (each keeps its document, for display)."""
        return Trail(tuple(replace(node, text=texts[node.id]) if node.id in texts else node for node in self.nodes))


def step_name(trail: Trail, node_id: str) -> str:
    """What the reader is told the step was: its name in the trail, else its stage's number."""
    return trail.node(node_id).step or f"stage {trail.stage(node_id)}"


def parse_trail(data: Any, *, max_nodes: int, max_chars: int) -> Trail:
    """Decoded trail JSON → a Trail, or TrailError for the first problem found. `max_chars`
    bounds the characters of all texts together (the documents' bytes are bounded when read)."""
    items = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise TrailError(None, "a trail is an object with a non-empty 'nodes' list")
    if extra := set(data) - {"nodes"}:
        raise TrailError(None, f"unknown key {sorted(extra)[0]!r} (a trail has only 'nodes')")
    if len(items) > max_nodes:
        raise TrailError(None, f"the trail has {len(items)} nodes, more than the limit of {max_nodes}")
    nodes = tuple(_node(item, position) for position, item in enumerate(items, start=1))
    trail = Trail(nodes)
    _check_ids(nodes)
    _check_size(nodes, max_chars)
    _check_roots(nodes)
    _topological(nodes)
    _check_final(trail)
    _check_stages(trail)
    return trail


def _node(item: Any, position: int) -> TrailNode:
    if not isinstance(item, dict):
        raise TrailError(None, f"node {position} (counting from 1) is not an object")
    node_id = item.get("id")
    if not isinstance(node_id, str) or not node_id.strip() or len(node_id) > MAX_ID_CHARS:
        raise TrailError(
            None, f"node {position} (counting from 1) needs an 'id': text of 1 to {MAX_ID_CHARS} characters"
        )
    if extra := set(item) - _NODE_KEYS:
        raise TrailError(node_id, f"unknown key {sorted(extra)[0]!r}")
    text, document = item.get("text"), item.get("document")
    if text is not None and document is not None:
        raise TrailError(node_id, "it has both 'text' and 'document': give one")
    if text is None and document is None:
        raise TrailError(node_id, "it has neither 'text' nor 'document'")
    if text is not None and (not isinstance(text, str) or not text.strip()):
        raise TrailError(node_id, "its 'text' is empty or not text")
    return TrailNode(
        id=node_id,
        text=text,
        document=None if document is None else _document(node_id, document),
        inputs=_inputs(node_id, item.get("from", [])),
        step=_step(node_id, item.get("step")),
        stage=_given_stage(node_id, item.get("stage")),
    )


def _document(node_id: str, document: Any) -> DocumentRef:
    if not isinstance(document, dict) or len(document) != 1 or not set(document) <= {"url", "upload"}:
        raise TrailError(node_id, '\'document\' is either {"url": ...} or {"upload": <file name>}')
    ((kind, value),) = document.items()
    if not isinstance(value, str) or not value.strip():
        raise TrailError(node_id, f"'document' has an empty {kind!r}")
    if kind == "url" and not value.startswith(("http://", "https://")):
        raise TrailError(node_id, f"'document' has a 'url' that is not an http(s) address: {value[:80]!r}")
    return DocumentRef(**{kind: value})


def _inputs(node_id: str, names: Any) -> tuple[str, ...]:
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise TrailError(node_id, "'from' is a list of node ids")
    if node_id in names:
        raise TrailError(node_id, "'from' names the node itself")
    repeated = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if repeated is not None:
        raise TrailError(node_id, f"'from' names {repeated!r} twice")
    return tuple(names)


def _step(node_id: str, step: Any) -> str | None:
    if step is not None and (not isinstance(step, str) or len(step) > MAX_STEP_CHARS):
        raise TrailError(node_id, f"'step' is a name of at most {MAX_STEP_CHARS} characters")
    if step is None:
        return None
    return step.strip() or None


def _given_stage(node_id: str, stage: Any) -> int | None:
    if stage is not None and (isinstance(stage, bool) or not isinstance(stage, int) or not 0 <= stage <= MAX_STAGE):
        raise TrailError(node_id, f"'stage' is a whole number from 0 to {MAX_STAGE:,}")
    return stage


def _check_ids(nodes: tuple[TrailNode, ...]) -> None:
    seen: set[str] = set()
    for node in nodes:
        if node.id in seen:
            raise TrailError(node.id, "two nodes have this id")
        seen.add(node.id)
    for node in nodes:
        for name in node.inputs:
            if name not in seen:
                raise TrailError(node.id, f"'from' names {name!r}, which is not a node")


def _check_size(nodes: tuple[TrailNode, ...], max_chars: int) -> None:
    total = sum(len(node.text or "") for node in nodes)
    if total > max_chars:
        raise TrailError(None, f"the texts hold {total:,} characters, more than the limit of {max_chars:,}")


def _check_roots(nodes: tuple[TrailNode, ...]) -> None:
    if all(node.inputs for node in nodes):
        raise TrailError(None, "every node has inputs ('from'), so none is a source: a trail needs at least one")


def _topological(nodes: tuple[TrailNode, ...]) -> list[str]:
    """Node ids with every node after its inputs; TrailError naming a node on a cycle if any."""
    by_id = {node.id: node for node in nodes}
    order: list[str] = []
    state: dict[str, str] = {}
    for start in by_id:
        if start in state:
            continue
        state[start] = "open"
        stack = [(start, iter(by_id[start].inputs))]
        while stack:
            node_id, pending = stack[-1]
            name = next(pending, None)
            if name is None:
                state[node_id] = "done"
                order.append(node_id)
                stack.pop()
            elif state.get(name) == "open":
                path = [entry for entry, _ in stack]
                cycle = path[path.index(name) :] + [name]
                pairs = ", ".join(f"{made!r} from {used!r}" for made, used in pairwise(cycle))
                raise TrailError(name, f"'from' goes round in a cycle: {pairs}")
            elif name not in state:
                state[name] = "open"
                stack.append((name, iter(by_id[name].inputs)))
    return order


def _check_final(trail: Trail) -> None:
    used = {name for node in trail.nodes for name in node.inputs}
    finals = [node.id for node in trail.nodes if node.id not in used]
    if len(finals) > 1:
        named = ", ".join(map(repr, finals[:MAX_NAMED])) + (" …" if len(finals) > MAX_NAMED else "")
        raise TrailError(None, f"{len(finals)} nodes are used by no other node ({named}); a trail has one final text")
    if trail.is_root(finals[0]):
        raise TrailError(finals[0], "the final text has no inputs ('from'): a trail needs at least one step")


def _check_stages(trail: Trail) -> None:
    """A given stage may not come before an input's (the paper's stage(u) <= stage(v))."""
    for node in trail.nodes:
        for name in node.inputs:
            if trail.stage(node.id) < trail.stage(name):
                raise TrailError(
                    node.id,
                    f"its stage {trail.stage(node.id)} comes before its input {name!r} (stage {trail.stage(name)})",
                )


_DOCUMENT_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"url": {"type": "string", "format": "uri", "pattern": "^https?://"}},
            "required": ["url"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"upload": {"type": "string", "minLength": 1, "description": "an uploaded file's name"}},
            "required": ["upload"],
            "additionalProperties": False,
        },
    ]
}

# The format for the OpenAPI document. What JSON Schema cannot say (ids unique, every 'from' a
# node, acyclic, one final node) parse_trail checks and explains.
TRAIL_JSON_SCHEMA: dict[str, Any] = {
    "title": "Trail",
    "description": "The texts a generation process wrote: sources, intermediate outputs and the final text, "
    "each naming the nodes it was written from. The final node is the one no other node uses; claims are "
    "taken from it.",
    "type": "object",
    "properties": {
        "nodes": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS},
                    "text": {"type": "string", "minLength": 1},
                    "document": _DOCUMENT_SCHEMA,
                    "from": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                    "step": {"type": "string", "maxLength": MAX_STEP_CHARS, "examples": ["section summary"]},
                    "stage": {"type": "integer", "minimum": 0, "maximum": MAX_STAGE},
                },
                "required": ["id"],
                "oneOf": [{"required": ["text"]}, {"required": ["document"]}],
                "additionalProperties": False,
            },
        }
    },
    "required": ["nodes"],
    "additionalProperties": False,
}
