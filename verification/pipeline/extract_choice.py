"""Which of two readings of a web page to keep: trafilatura's or readability-lxml's.

Each extractor fails in its own way, and the other one is the witness:
- trafilatura sometimes returns a fragment (one section of a long article) — readability then
  holds much more article prose, and nearly all of trafilatura's text besides;
- trafilatura keeps page chrome readability leaves out (teaser lists, share and print links,
  addresses) — its extra lines are then short or unfinished, not paragraphs;
- trafilatura drops a paragraph the page says twice — readability then has the same lines plus
  the repeated copies;
- readability returns a fragment, or a different block than the article (captions, a comment) —
  trafilatura's reading is kept unless one of the above holds.
Trafilatura's reading is the default: it keeps tables and embedded quotations (a tweet, a
statement) that readability drops, and its line breaks follow the page's blocks.

The thresholds were set by hand from these failure modes as they show on the 181 real pages of
scrapinghub/article-extraction-benchmark; fitted on half of those pages instead and measured on
the other half, the rule scores the same (bench/extraction.py --benchmark, --fit-halves; results
in bench/results/extraction.md)."""

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

_WORD = re.compile(r"\w+")
# A paragraph ends a sentence; a teaser headline, a caption credit or a menu entry does not.
_SENTENCE_END = re.compile(r"[.!?…][\"”’»)\]]*$")
# Below this many words a line is a label, a headline or a link, whatever it ends with.
PARAGRAPH_WORDS = 10
# A line of one reading is found in the other when half its word triples are there (line breaks
# and a word of markup differ between the two).
FOUND_SHARE = 0.5
# trafilatura returned a fragment: readability's extra paragraphs are at least this many words
# and this share of trafilatura's text, and trafilatura has at most this share readability lacks.
FRAGMENT_MIN_WORDS = 50
FRAGMENT_SHARE = 0.3
FRAGMENT_STRAY_SHARE = 0.1
# trafilatura kept chrome: its extra non-paragraph lines are at least this share of its text,
# its extra paragraphs (and table cells, quotations) at most this share of that chrome, and
# readability has at most this share trafilatura lacks.
CHROME_SHARE = 0.05
CHROME_CONTENT_SHARE = 0.5
CHROME_STRAY_SHARE = 0.05


@dataclass(frozen=True)
class Line:
    text: str
    # A table cell or a quotation: the page's content whatever its shape.
    quoted: bool = False


class Choice(StrEnum):
    TRAFILATURA = "trafilatura"
    READABILITY_FOR_FRAGMENT = "readability: trafilatura read a fragment"
    READABILITY_FOR_CHROME = "readability: trafilatura kept page chrome"
    READABILITY_FOR_REPEATS = "readability: trafilatura dropped repeated paragraphs"
    READABILITY_ALONE = "readability: trafilatura read nothing"

    @property
    def readability(self) -> bool:
        return self is not Choice.TRAFILATURA


def choose(trafilatura: Sequence[Line], readability: Sequence[Line], *, known: Iterable[str] = ()) -> Choice:
    """Which reading to keep. `known` are texts the page gives apart (its title, its
    description): a line that only repeats one of them is neither extractor's gain."""
    reading_t, reading_r = _Reading(trafilatura), _Reading(readability)
    words_t, words_r = reading_t.words(), reading_r.words()
    if not words_r or reading_t.texts == reading_r.texts:
        return Choice.TRAFILATURA
    if not words_t:
        return Choice.READABILITY_ALONE
    known_words = {tuple(_tokens(text)) for text in known}
    only_t = [i for i in reading_t.missing_from(reading_r) if tuple(_tokens(reading_t.texts[i])) not in known_words]
    only_r = [i for i in reading_r.missing_from(reading_t) if tuple(_tokens(reading_r.texts[i])) not in known_words]

    paragraphs_r = reading_r.words(i for i in only_r if reading_r.is_paragraph(i))
    if paragraphs_r >= max(FRAGMENT_MIN_WORDS, FRAGMENT_SHARE * words_t) and (
        reading_t.words(only_t) <= FRAGMENT_STRAY_SHARE * words_t
    ):
        return Choice.READABILITY_FOR_FRAGMENT

    content_t = [i for i in only_t if trafilatura[i].quoted or reading_t.is_paragraph(i)]
    chrome_t = reading_t.words(only_t) - reading_t.words(content_t)
    if (
        chrome_t >= CHROME_SHARE * words_t
        and reading_t.words(content_t) <= CHROME_CONTENT_SHARE * chrome_t
        and reading_r.words(only_r) <= CHROME_STRAY_SHARE * words_r
    ):
        return Choice.READABILITY_FOR_CHROME

    repeated = _repeated_paragraphs(reading_t, reading_r)
    if not only_t and repeated and reading_r.words(only_r) <= repeated:
        return Choice.READABILITY_FOR_REPEATS
    return Choice.TRAFILATURA


class _Reading:
    """One reading's lines and their words."""

    def __init__(self, lines: Sequence[Line]):
        self.lines = lines
        self.texts = [line.text for line in lines]
        self.counts = [len(text.split()) for text in self.texts]

    def words(self, indexes: Iterable[int] | None = None) -> int:
        return sum(self.counts) if indexes is None else sum(self.counts[i] for i in indexes)

    def is_paragraph(self, index: int) -> bool:
        return _is_paragraph(self.texts[index])

    def missing_from(self, other: "_Reading") -> list[int]:
        """The lines the other reading does not have. A line both have is found as it is (most
        are, and this keeps the choice cheap on long pages); the others are compared by word
        triples with the other's lines that this reading lacks, so that a paragraph it breaks in
        two still counts as found."""
        own, theirs = set(self.texts), set(other.texts)
        unmatched = [i for i, text in enumerate(self.texts) if text not in theirs]
        if not unmatched:
            return []
        found = _triples([token for text in other.texts if text not in own for token in _tokens(text)])
        missing = []
        for index in unmatched:
            triples = _triples(_tokens(self.texts[index]))
            if triples and len(triples & found) < FOUND_SHARE * len(triples):
                missing.append(index)
        return missing


def _repeated_paragraphs(trafilatura: _Reading, readability: _Reading) -> int:
    """The words of the copies readability has of paragraphs trafilatura says fewer times, if
    those are all paragraphs (a gallery repeating its caption is not), else 0."""
    counts_t, counts_r = Counter(trafilatura.texts), Counter(readability.texts)
    repeated = {text: count - counts_t[text] for text, count in counts_r.items() if count > counts_t[text] >= 1}
    if not all(_is_paragraph(text) for text in repeated):
        return 0
    return sum(len(text.split()) * copies for text, copies in repeated.items())


def _is_paragraph(text: str) -> bool:
    return len(text.split()) >= PARAGRAPH_WORDS and _SENTENCE_END.search(text) is not None


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _triples(tokens: list[str]) -> set[tuple[str, ...]]:
    if len(tokens) < 3:
        return {tuple(tokens)} if tokens else set()
    return set(zip(tokens, tokens[1:], tokens[2:], strict=False))
