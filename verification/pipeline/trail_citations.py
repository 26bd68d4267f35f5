"""A trail's final text and its own citations (issue 34): the sentences to check without the
markers, and which nodes of the trail each sentence cites, so its claims look there first.

The markers are found by the same recognition as a pasted text's (pipeline/citations,
cited_segments): a trail's final text is split without them, each sentence keeping its span in
the text as given (the trail page shows that text), and a text without citations is split as
`segment.segment` splits it.

What a citation names in a trail: GraphRAG's "[Data: Reports (2, 7)]" names the nodes
"report-2" and "report-7", "[Data: Sources (15)]" the text unit "text-unit-15" (the names
trail_import gives them), when the trail has them. Entities, relationships and claims are no node
of a trail, and other citations (a web address, a reference list's entry) point outside it: they
name none."""

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .citations import Citation, Points, read_citations
from .cited_segments import segment_cited, sentence_of_citations
from .types import SegmentedSentence

# How every GraphRAG marker starts (citation_markers reads them).
GRAPHRAG_MARKER = "[Data:"
# GraphRAG's record names → the prefix trail_import gives the nodes they name.
NODE_PREFIX = {"reports": "report-", "sources": "text-unit-"}


@dataclass(frozen=True)
class GraphragCited:
    """What a GraphRAG answer's "[Data: …]" markers cite, each list in the order first cited.
    `more`: which records a marker cut short with "+more" (the answer used more than it names)."""

    reports: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    relationships: tuple[str, ...] = ()
    more: frozenset[str] = frozenset()


def graphrag_cited(answer: str) -> GraphragCited:
    """The records a GraphRAG answer cites, read by the text's citation recognition (a marker in a
    code block or naming more than a marker may is no citation)."""
    cited: dict[str, list[str]] = {"reports": [], "sources": [], "entities": [], "relationships": []}
    more: set[str] = set()
    for citation in read_citations(answer).citations:
        if citation.points_to is not Points.GRAPHRAG or citation.unresolved:
            continue
        if citation.more:
            more.add(citation.record)
        if citation.record in cited and citation.label.isascii() and citation.label.isdigit():
            cited[citation.record].append(citation.label)
    return GraphragCited(
        **{record: tuple(dict.fromkeys(labels)) for record, labels in cited.items()}, more=frozenset(more)
    )


def final_segments(text: str, language: str = "en") -> list[SegmentedSentence]:
    """The final text's sentences without its citation markers and reference list; spans in `text`.
    `language`: the text's (ISO 639-1), which it is split in."""
    return segment_cited(read_citations(text), language)


@dataclass(frozen=True)
class _Span:
    """A stored sentence as sentence_of_citations reads one."""

    index: int
    start: int
    end: int


def cited_nodes(
    nodes: Collection[str], text: str, sentences: Sequence[tuple[int, int, int]]
) -> dict[int, tuple[str, ...]]:
    """For each sentence, given as (index, start, end) in `text` (the final text as given, as its
    rows store them), the trail's `nodes` (their ids) it cites, in the order cited; sentences citing
    none are left out."""
    if GRAPHRAG_MARKER not in text:
        return {}  # only GraphRAG's markers name nodes: a text without one is not read again
    cited = read_citations(text)
    if not cited.citations:
        return {}
    spans = [_Span(*sentence) for sentence in sentences]
    by_sentence: dict[int, list[str]] = {}
    for citation, sentence in zip(cited.citations, sentence_of_citations(cited, spans), strict=True):
        node = _node(nodes, citation)
        if sentence is not None and node is not None:
            by_sentence.setdefault(sentence, []).append(node)
    return {sentence: tuple(dict.fromkeys(found)) for sentence, found in by_sentence.items()}


def _node(nodes: Collection[str], citation: Citation) -> str | None:
    prefix = NODE_PREFIX.get(citation.record)
    if citation.points_to is not Points.GRAPHRAG or citation.unresolved or prefix is None:
        return None
    name = prefix + citation.label
    return name if name in nodes else None


def cited_first(candidates: Sequence[str], cited: Sequence[str]) -> tuple[str, ...]:
    """A round's candidates with those the claim's sentence cites first, in the order cited; the
    others keep their order. A cited node that is not a candidate is not added."""
    present = set(candidates)
    first = [node for node in dict.fromkeys(cited) if node in present]
    return (*first, *(node for node in candidates if node not in first))
