"""One claim checked down a trail, round by round (VeriTrail's loop), and what its rounds tell:
the verdict, the path a supported claim came down by, the step an unsupported one entered at.

Round 1 checks the final text's inputs. Each round selects evidence in every candidate node
(trail_select) and gives a verdict on what it found (trail_verdict); its verdict chooses the next
round's candidates, until a stop rule ends the claim. Everything here but `run_round` and
`check_claim` is pure over the rounds so far: a worker can persist each round, and whoever
picks the claim up again computes the next step from the stored rounds alone."""

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from verification.pipeline.trail_citations import cited_first
from verification.pipeline.trail_graph import Trail
from verification.pipeline.trail_select import NodeSelection, SelectionOptions, select_evidence
from verification.pipeline.trail_verdict import TrailVerdict, judge_round
from verification.pipeline.types import Embedder, JsonLLM

SelectionCache = MutableMapping[tuple[str, str], NodeSelection]


class StopReason(StrEnum):
    # The candidates are sources already read: the trail goes no further (the latest verdict stands).
    ONLY_CHECKED_ROOTS = "only_checked_roots"
    # A round of sources found it not fully supported: nothing is left to look at.
    NO_CANDIDATES = "no_candidates"
    # q rounds in a row found it not fully supported.
    NOT_SUPPORTED_Q_TIMES = "not_supported_q_times"
    # The next round would read more nodes than a claim may (the latest verdict stands).
    VISIT_CAP = "visit_cap"


@dataclass(frozen=True)
class Round:
    index: int
    candidates: tuple[str, ...]
    # One per candidate, in the same order.
    selections: tuple[NodeSelection, ...]
    verdict: TrailVerdict
    reasoning: str
    # The model calls and tokens the round cost (a selection found in the cache costs none).
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def evidence_nodes(self) -> tuple[str, ...]:
        return tuple(selection.node_id for selection in self.selections if selection.sentence_ids)

    def as_dict(self) -> dict[str, Any]:
        """The round as JSON-ready data, to store it; from_dict reads it back."""
        return {
            **{name: getattr(self, name) for name in _PLAIN_FIELDS},
            "candidates": list(self.candidates),
            "selections": [selection.as_dict() for selection in self.selections],
            "verdict": self.verdict.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Round":
        return cls(
            **{name: data[name] for name in _PLAIN_FIELDS},
            candidates=tuple(data["candidates"]),
            selections=tuple(NodeSelection.from_dict(selection) for selection in data["selections"]),
            verdict=TrailVerdict(data["verdict"]),
        )


_PLAIN_FIELDS = ("index", "reasoning", "calls", "prompt_tokens", "completion_tokens")


@dataclass(frozen=True)
class ErrorStage:
    """Where an unsupported claim entered. kind "stage": at `stages`, in `nodes` (they state it,
    their inputs do not); "final_step": when the final text was written; "undetermined": the
    rounds cannot tell (see error_stage)."""

    kind: Literal["stage", "final_step", "undetermined"]
    stages: tuple[int, ...] = ()
    nodes: tuple[str, ...] = ()


UNDETERMINED = ErrorStage("undetermined")


@dataclass(frozen=True)
class SupportPath:
    """How a supported claim came down: `edges` (input, node written from it) from the final text
    to `sources`. A node checked in a Not Fully Supported round links nodes without holding evidence."""

    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    sources: tuple[str, ...]


@dataclass(frozen=True)
class ClaimTrailResult:
    verdict: TrailVerdict
    reasoning: str
    rounds: tuple[Round, ...]
    stop: StopReason
    error: ErrorStage | None
    path: SupportPath | None
    calls: int
    prompt_tokens: int
    completion_tokens: int


def first_candidates(trail: Trail) -> tuple[str, ...]:
    return trail.inputs(trail.final)


def _basis(last: Round) -> tuple[str, ...]:
    """The nodes the next round goes on from: after Not Fully Supported every node checked (look
    wider before giving up), else those that held evidence (follow the evidence)."""
    return last.candidates if last.verdict.not_fully_supported else last.evidence_nodes


def next_candidates(trail: Trail, last: Round) -> tuple[str, ...]:
    """The inputs of the basis nodes. A source that held evidence for a supported or
    inconclusive verdict stays a candidate (it is as far as the trail goes, and its evidence
    still counts); after Not Fully Supported, sources have nothing more to give."""
    carry_sources = not last.verdict.not_fully_supported
    found: list[str] = []
    for node in _basis(last):
        if trail.is_root(node):
            found += [node] if carry_sources else []
        else:
            found += trail.inputs(node)
    return tuple(dict.fromkeys(found))


def visited(rounds: Sequence[Round]) -> set[str]:
    return {node for one in rounds for node in one.candidates}


def stop_reason(
    trail: Trail, rounds: Sequence[Round], candidates: Sequence[str], *, q: int, max_node_visits: int | None = None
) -> StopReason | None:
    """Why the claim stops before a round of `candidates`, or None to run it. The first round
    always runs: without it there is no verdict."""
    if not rounds:
        return None
    if len(rounds) >= q and all(one.verdict.not_fully_supported for one in rounds[-q:]):
        return StopReason.NOT_SUPPORTED_Q_TIMES
    if not candidates:
        return StopReason.NO_CANDIDATES
    read = visited(rounds)
    if all(trail.is_root(node) and node in read for node in candidates):
        return StopReason.ONLY_CHECKED_ROOTS
    if max_node_visits is not None and len(read | set(candidates)) > max_node_visits:
        return StopReason.VISIT_CAP
    return None


def next_step(
    trail: Trail,
    rounds: Sequence[Round],
    *,
    q: int,
    max_node_visits: int | None = None,
    cited: Sequence[str] = (),
) -> tuple[tuple[str, ...], StopReason | None]:
    """The next round's candidates, and the reason to stop instead if there is one. `cited`: the
    nodes the claim's sentence cites (trail_citations.cited_nodes), first among the candidates: its
    selection is asked first and its evidence leads the verdict's prompt."""
    candidates = next_candidates(trail, rounds[-1]) if rounds else first_candidates(trail)
    candidates = cited_first(candidates, cited)
    return candidates, stop_reason(trail, rounds, candidates, q=q, max_node_visits=max_node_visits)


def error_stage(trail: Trail, rounds: Sequence[Round], stop: StopReason | None = None) -> ErrorStage | None:
    """For a claim whose last verdict is not fully supported (None for the others): the stages of
    the intermediate nodes that held evidence in the last Fully Supported round; the final step
    when no round was Fully Supported. Undetermined when no round was Fully Supported but one was
    Inconclusive (the trail is ambiguous, no step can be blamed), when the visit cap stopped the
    claim before the loop's own rules did, or when that round's evidence was in sources only."""
    if not rounds or not rounds[-1].verdict.not_fully_supported:
        return None
    if stop is StopReason.VISIT_CAP:
        return UNDETERMINED
    supported = [one for one in rounds if one.verdict is TrailVerdict.FULLY_SUPPORTED]
    if not supported:
        if any(one.verdict is TrailVerdict.INCONCLUSIVE for one in rounds):
            return UNDETERMINED
        return ErrorStage("final_step", (trail.stage(trail.final),), (trail.final,))
    holders = tuple(node for node in supported[-1].evidence_nodes if not trail.is_root(node))
    if not holders:
        return UNDETERMINED
    return ErrorStage("stage", tuple(sorted({trail.stage(node) for node in holders})), holders)


def supported_path(trail: Trail, rounds: Sequence[Round]) -> SupportPath | None:
    """For a claim whose last verdict is Fully Supported: from the last round's evidence back,
    round by round, to the nodes each came from as a candidate, up to the final text."""
    if not rounds or rounds[-1].verdict is not TrailVerdict.FULLY_SUPPORTED:
        return None
    frontier = set(rounds[-1].evidence_nodes)
    nodes, edges = set(frontier), set()
    for i in range(len(rounds) - 1, -1, -1):
        basis = _basis(rounds[i - 1]) if i else (trail.final,)
        parents = set()
        for node in basis:
            used = frontier.intersection(trail.inputs(node))
            edges |= {(name, node) for name in used}
            if used or (node in frontier and trail.is_root(node)):
                parents.add(node)
        frontier = parents
        nodes |= parents
    order = {node: position for position, node in enumerate(trail.ids)}

    def downward(node: str) -> tuple[int, int]:
        return -trail.stage(node), order[node]

    return SupportPath(
        nodes=tuple(sorted(nodes, key=downward)),
        edges=tuple(sorted(edges, key=lambda edge: (downward(edge[1]), downward(edge[0])))),
        sources=tuple(node for node in sorted(nodes, key=downward) if trail.is_root(node)),
    )


def conclude(trail: Trail, rounds: Sequence[Round], stop: StopReason) -> ClaimTrailResult:
    """The claim's result once it stops. The latest verdict stands under every stop rule: no
    candidates and q in a row only follow a Not Fully Supported round."""
    last = rounds[-1]
    return ClaimTrailResult(
        verdict=last.verdict,
        reasoning=last.reasoning,
        rounds=tuple(rounds),
        stop=stop,
        error=error_stage(trail, rounds, stop),
        path=supported_path(trail, rounds),
        calls=sum(one.calls for one in rounds),
        prompt_tokens=sum(one.prompt_tokens for one in rounds),
        completion_tokens=sum(one.completion_tokens for one in rounds),
    )


def run_round(
    llm: JsonLLM,
    trail: Trail,
    claim: str,
    candidates: Sequence[str],
    *,
    index: int,
    options: SelectionOptions | None = None,
    cache: SelectionCache | None = None,
    embedder: Embedder | None = None,
) -> Round:
    """Evidence selection in every candidate (a selection already in `cache`, keyed by (claim,
    node), is reused), then the verdict."""
    usage = _usage(llm)
    cache = {} if cache is None else cache
    selections, calls = [], 0
    for node in candidates:
        if (claim, node) not in cache:
            selected = select_evidence(
                llm, claim=claim, node_id=node, text=trail.text(node), options=options, embedder=embedder
            )
            cache[(claim, node)] = selected
            calls += selected.prompts
        selections.append(cache[(claim, node)])
    verdict = judge_round(llm, trail, claim, selections)
    prompt_tokens, completion_tokens = (after - before for before, after in zip(usage, _usage(llm), strict=True))
    return Round(
        index=index,
        candidates=tuple(candidates),
        selections=tuple(selections),
        verdict=verdict.verdict,
        reasoning=verdict.reasoning,
        calls=calls + verdict.called,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def _usage(llm: JsonLLM) -> tuple[int, int]:
    """Tokens counted so far by a client that counts them (LLMClient.usage); zeros otherwise."""
    usage = getattr(llm, "usage", None)
    return (usage.prompt_tokens, usage.completion_tokens) if usage is not None else (0, 0)


def check_claim(
    llm: JsonLLM,
    trail: Trail,
    claim_text: str,
    *,
    q: int = 3,
    max_node_visits: int | None = None,
    selection_options: SelectionOptions | None = None,
    cache: SelectionCache | None = None,
    embedder: Embedder | None = None,
    rounds: Sequence[Round] = (),
    on_round: Callable[[Round], None] | None = None,
    cited: Sequence[str] = (),
) -> ClaimTrailResult:
    """Rounds until a stop rule holds, in this process. `rounds`: those a previous attempt
    stored (the check goes on after them); `on_round` is given each new round to store; `cited`:
    the nodes the claim's sentence cites, first in every round they are candidates of."""
    if q < 1:
        raise ValueError("q is at least 1")
    done = list(rounds)
    cache = {} if cache is None else cache
    while True:
        candidates, stop = next_step(trail, done, q=q, max_node_visits=max_node_visits, cited=cited)
        if stop is not None:
            return conclude(trail, done, stop)
        new = run_round(
            llm,
            trail,
            claim_text,
            candidates,
            index=len(done) + 1,
            options=selection_options,
            cache=cache,
            embedder=embedder,
        )
        done.append(new)
        if on_round is not None:
            on_round(new)
