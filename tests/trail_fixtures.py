"""Synthetic trails whose truth is known, with the claims planted in their final texts.

Every planted claim has its own invented names ("Harlow mill", "Vell river"), written into exactly
the nodes the story needs: a claim supported through every level is in a source and in every
summary above it; a claim introduced at the section summaries is in a section summary and the
texts above it, in no source. Filler sentences come from a word pool that shares no word with a
claim. The test model (tests/trail_model.py) chooses by words, so what it finds follows from
what the texts say, and the tests check the loop against the stories told here."""

import random
from dataclasses import dataclass
from functools import cache

from verification.pipeline.trail_graph import Trail, parse_trail
from verification.pipeline.trail_loop import ErrorStage, StopReason
from verification.pipeline.trail_verdict import TrailVerdict

FS = TrailVerdict.FULLY_SUPPORTED
NFS = TrailVerdict.NOT_FULLY_SUPPORTED

_POOL = """orchard lantern meadow pebble quarry ribbon saddle thistle velvet willow yarrow hazel juniper
marble copper linen spindle loom kettle basket hedge furrow apron thimble pewter gable chimney attic
cellar wicker satchel ledger quill parchment candle wax beeswax tallow harness stirrup bridle anvil
bellows lattice trellis pantry larder skillet ladle sieve churn butter cheese honey clover heather
bracken fern moss lichen acorn chestnut walnut almond pear plum quince cherry damson sloe elder""".split()
_VERBS = "stood rested waited leaned gleamed faded hung lay dried softened".split()


def filler(seed: int, count: int) -> list[str]:
    """Sentences about nothing a claim names, the same for the same seed."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(count):
        a, b, c = rng.sample(_POOL, 3)
        sentences.append(f"The {a} {rng.choice(_VERBS)} beside the {b} and the {c}.")
    return sentences


def text(*sentences: str, seed: int, filler_count: int = 6) -> str:
    """The planted sentences among filler, in two paragraphs."""
    body = filler(seed, filler_count)
    middle = len(body) // 2
    mixed = body[:middle] + list(sentences) + body[middle:]
    half = len(mixed) // 2
    return " ".join(mixed[:half]) + "\n\n" + " ".join(mixed[half:])


@dataclass(frozen=True)
class Expected:
    verdict: TrailVerdict
    stop: StopReason
    error: ErrorStage | None = None
    # The sources a supported claim's path ends at.
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Planted:
    name: str
    claim: str
    expected: Expected
    # What q = 1 finds when it differs (it gives up after the first Not Fully Supported round).
    with_q1: Expected | None = None

    def expect(self, q: int) -> Expected:
        return self.with_q1 if q == 1 and self.with_q1 is not None else self.expected


def load(data: dict) -> Trail:
    return parse_trail(data, max_nodes=1000, max_chars=10_000_000)


# --- A three-level hierarchical summary: 8 sources → 4 section summaries → 2 parts → final. ---

HARLOW = "The Harlow mill ground barley for the abbey."
YSOLDE = "Captain Ysolde charted the Merrow reef."
COMBINED = "The Corvin bridge and the Pelham tower were built from Dunmore granite."
CORVIN = "The Corvin bridge was built from Dunmore granite."
PELHAM = "The Pelham tower was built from Dunmore granite."
ASHBY = "The Ashby granary held nine hundred sacks."
WRENFIELD = "The Wrenfield choir sang at the coronation."
TOLLAND = "The Tolland lighthouse burned whale oil."
VELL = "The Vell river freezes every winter."
ORRIN = "The Orrin canal opened in 1870."
BRANNOCK = "The Brannock ferry carried forty wagons daily."
# Part 1's wording of the Brannock sentence: no word in common, so word overlap misses it.
BRANNOCK_PARAPHRASE = "A crossing near the town moved many carts each day."

_SOURCES = {
    "src-1": [f"In 1402 {HARLOW[0].lower()}{HARLOW[1:]}"],
    "src-2": ["The Vell river never freezes in winter."],
    "src-3": [
        "Records show the Brannock ferry carried forty wagons daily.",
        "The Ashby granary stood by the east road.",
    ],
    "src-4": [CORVIN],
    "src-5": ["A parish register records that the Orrin canal opened in 1870."],
    "src-6": [YSOLDE, "A later survey found that the Orrin canal had not opened by 1870."],
    "src-7": [PELHAM],
    "src-8": ["The Tolland lighthouse stood on the north cape."],
}
_SECTIONS = {
    "sec-1": (("src-1", "src-2"), [HARLOW, VELL]),
    "sec-2": (("src-3", "src-4"), [BRANNOCK, CORVIN, ASHBY]),
    "sec-3": (("src-5", "src-6"), [YSOLDE, ORRIN]),
    "sec-4": (("src-7", "src-8"), [PELHAM]),
}
_PARTS = {
    "part-1": (("sec-1", "sec-2"), [HARLOW, VELL, BRANNOCK_PARAPHRASE, CORVIN, ASHBY]),
    "part-2": (("sec-3", "sec-4"), [YSOLDE, ORRIN, PELHAM, WRENFIELD]),
}
_FINAL = [HARLOW, YSOLDE, COMBINED, ASHBY, WRENFIELD, TOLLAND, VELL, ORRIN, BRANNOCK]

HIERARCHY: dict = {
    "nodes": [
        *(
            {"id": node, "text": text(*said, seed=n), "step": "source"}
            for n, (node, said) in enumerate(_SOURCES.items())
        ),
        *(
            {"id": node, "text": text(*said, seed=10 + n), "from": list(inputs), "step": "section summary"}
            for n, (node, (inputs, said)) in enumerate(_SECTIONS.items())
        ),
        *(
            {"id": node, "text": text(*said, seed=20 + n), "from": list(inputs), "step": "part summary"}
            for n, (node, (inputs, said)) in enumerate(_PARTS.items())
        ),
        {"id": "final", "text": " ".join(_FINAL), "from": ["part-1", "part-2"], "step": "final summary"},
    ]
}

HIERARCHY_CLAIMS = [
    Planted("supported-through-every-level", HARLOW, Expected(FS, StopReason.ONLY_CHECKED_ROOTS, sources=("src-1",))),
    Planted("supported-in-the-other-part", YSOLDE, Expected(FS, StopReason.ONLY_CHECKED_ROOTS, sources=("src-6",))),
    Planted(
        "supported-by-combining-two-parts",
        COMBINED,
        Expected(FS, StopReason.ONLY_CHECKED_ROOTS, sources=("src-4", "src-7")),
    ),
    Planted(
        "introduced-at-the-section-summaries",
        ASHBY,
        Expected(NFS, StopReason.NO_CANDIDATES, ErrorStage("stage", (1,), ("sec-2",))),
        with_q1=Expected(NFS, StopReason.NOT_SUPPORTED_Q_TIMES, ErrorStage("stage", (1,), ("sec-2",))),
    ),
    Planted(
        "introduced-at-the-part-summaries",
        WRENFIELD,
        Expected(NFS, StopReason.NO_CANDIDATES, ErrorStage("stage", (2,), ("part-2",))),
        with_q1=Expected(NFS, StopReason.NOT_SUPPORTED_Q_TIMES, ErrorStage("stage", (2,), ("part-2",))),
    ),
    Planted(
        "introduced-at-the-final-step",
        TOLLAND,
        Expected(NFS, StopReason.NOT_SUPPORTED_Q_TIMES, ErrorStage("final_step", (3,), ("final",))),
    ),
    Planted(
        "contradicted-by-a-source",
        VELL,
        Expected(TrailVerdict.CONTRADICTED, StopReason.NO_CANDIDATES, ErrorStage("stage", (1,), ("sec-1",))),
        with_q1=Expected(
            TrailVerdict.CONTRADICTED, StopReason.NOT_SUPPORTED_Q_TIMES, ErrorStage("stage", (1,), ("sec-1",))
        ),
    ),
    Planted("ambiguous-sources", ORRIN, Expected(TrailVerdict.INCONCLUSIVE, StopReason.ONLY_CHECKED_ROOTS)),
    Planted(
        "paraphrased-in-its-part-summary",
        BRANNOCK,
        Expected(FS, StopReason.ONLY_CHECKED_ROOTS, sources=("src-3",)),
        with_q1=Expected(NFS, StopReason.NOT_SUPPORTED_Q_TIMES, ErrorStage("final_step", (3,), ("final",))),
    ),
]

# --- GraphRAG: text units → community reports → answer (a text unit shared by two reports). ---

MARLOW = "The Marlow cooperative exports saffron to Lisbon."
ISENBY = "The Isenby dam supplies power to Carrow and water to Dunby."
QUENBY = "The Quenby council banned night fishing."
HALVARD = "The Halvard port doubled its grain trade."

_UNITS = {
    "tu-1": ["The Isenby dam supplies power to Carrow."],
    "tu-2": ["The Isenby dam also supplies water to Dunby."],
    "tu-3": [MARLOW],
    "tu-4": ["The Halvard port opened a second quay."],
    "tu-5": ["The Quenby council met every spring."],
    "tu-6": [],
}
_REPORTS = {
    "report-1": (("tu-1", "tu-2", "tu-3"), [ISENBY]),
    "report-2": (("tu-3", "tu-4"), [MARLOW]),
    "report-3": (("tu-5", "tu-6"), [QUENBY]),
}

GRAPHRAG: dict = {
    "nodes": [
        *(
            {"id": node, "text": text(*said, seed=30 + n), "step": "text unit"}
            for n, (node, said) in enumerate(_UNITS.items())
        ),
        *(
            {"id": node, "text": text(*said, seed=40 + n), "from": list(inputs), "step": "community report"}
            for n, (node, (inputs, said)) in enumerate(_REPORTS.items())
        ),
        {"id": "answer", "text": " ".join([MARLOW, ISENBY, QUENBY, HALVARD]), "from": list(_REPORTS), "step": "answer"},
    ]
}

GRAPHRAG_CLAIMS = [
    Planted("from-a-shared-text-unit", MARLOW, Expected(FS, StopReason.ONLY_CHECKED_ROOTS, sources=("tu-3",))),
    Planted("from-two-text-units", ISENBY, Expected(FS, StopReason.ONLY_CHECKED_ROOTS, sources=("tu-1", "tu-2"))),
    Planted(
        "introduced-in-a-community-report",
        QUENBY,
        Expected(NFS, StopReason.NO_CANDIDATES, ErrorStage("stage", (1,), ("report-3",))),
        with_q1=Expected(NFS, StopReason.NOT_SUPPORTED_Q_TIMES, ErrorStage("stage", (1,), ("report-3",))),
    ),
    Planted(
        "introduced-in-the-answer",
        HALVARD,
        Expected(NFS, StopReason.NO_CANDIDATES, ErrorStage("final_step", (2,), ("answer",))),
        with_q1=Expected(NFS, StopReason.NOT_SUPPORTED_Q_TIMES, ErrorStage("final_step", (2,), ("answer",))),
    ),
]

# --- A book-length source (≥ 100k tokens) → chapter notes → a summary. ---

ABERNATHY = "The keeper Abernathy counted ninety gulls at Skerry Point."
LAMP_ROOM = "The keeper Abernathy painted the lamp room blue."
BOOK_SENTENCES = 10_000
# Where the one sentence that supports ABERNATHY sits in the book: deep inside, far from the start.
NEEDLE_AT = 7_000


@cache
def book_text() -> str:
    sentences = filler(99, BOOK_SENTENCES)
    sentences[NEEDLE_AT] = "That autumn " + ABERNATHY[0].lower() + ABERNATHY[1:]
    return "\n\n".join(" ".join(sentences[i : i + 8]) for i in range(0, len(sentences), 8))


@cache
def book_trail_data() -> dict:
    return {
        "nodes": [
            {"id": "book", "text": book_text(), "step": "book"},
            {"id": "notes-1", "text": text(ABERNATHY, seed=51), "from": ["book"], "step": "chapter notes"},
            {"id": "notes-2", "text": text(LAMP_ROOM, seed=52), "from": ["book"], "step": "chapter notes"},
            {"id": "summary", "text": f"{ABERNATHY} {LAMP_ROOM}", "from": ["notes-1", "notes-2"], "step": "summary"},
        ]
    }


BOOK_CLAIMS = [
    Planted("needle-in-the-book", ABERNATHY, Expected(FS, StopReason.ONLY_CHECKED_ROOTS, sources=("book",))),
    Planted(
        "introduced-in-the-notes",
        LAMP_ROOM,
        Expected(NFS, StopReason.NO_CANDIDATES, ErrorStage("stage", (1,), ("notes-2",))),
        with_q1=Expected(NFS, StopReason.NOT_SUPPORTED_Q_TIMES, ErrorStage("stage", (1,), ("notes-2",))),
    ),
]
