"""Near-duplicate evidence: the same text syndicated at several URLs (a wire story on ten news
sites, a Wikipedia mirror) is one piece of evidence, not ten votes.

Two passages are compared as sets of word shingles (runs of SHINGLE_WORDS words, lowercased,
punctuation and whitespace ignored), so reflowed lines, changed quotes and dashes, and a word
edited here and there still match. What counts is the share of the SMALLER passage found in the
other (containment): a copy with a byline, a "Read more" line or other boilerplate around the
same text still matches, which Jaccard over the union would not. Passages too short to tell a
copy from two sites stating the same fact in the same common words are never grouped.

A claim has at most a few dozen evidence items, so comparing every pair is cheap; MinHash
(datasketch) would only pay for itself across thousands of documents."""

import re
from collections.abc import Sequence
from dataclasses import dataclass

SHINGLE_WORDS = 3
# Share of the smaller passage's shingles the other must hold: high enough that two different
# articles on one topic (which share names and phrases) stay apart, low enough for light edits.
MIN_CONTAINMENT = 0.7
# Fewer shingles than this (a passage of about 10 words) is too little text to call a copy.
MIN_SHINGLES = 8

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Candidate:
    """An evidence item to compare: its id and its passage text. Callers pass them best first
    (the one that should count for a group comes first)."""

    id: int
    text: str


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < size:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def containment(a: frozenset, b: frozenset) -> float:
    """Share of the smaller set found in the larger; 0 when either is too small to judge."""
    if min(len(a), len(b)) < MIN_SHINGLES:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def find_duplicates(candidates: Sequence[Candidate]) -> dict[int, int]:
    """{duplicate id: id of the item that counts for it}. Each candidate joins the group of the
    first earlier candidate that counts and whose text it nearly duplicates; the first of each
    group counts. Groups never chain: a near copy of a near copy that drifted too far from the
    counted text is its own evidence."""
    counted: list[tuple[int, frozenset]] = []
    duplicates: dict[int, int] = {}
    for candidate in candidates:
        own = shingles(candidate.text)
        original = next((cid for cid, theirs in counted if containment(own, theirs) >= MIN_CONTAINMENT), None)
        if original is None:
            counted.append((candidate.id, own))
        else:
            duplicates[candidate.id] = original
    return duplicates
