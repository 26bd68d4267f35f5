"""Text → paragraphs → sentences with character offsets into the original text.

Deterministic with no downloaded data: NLTK's Punkt tokenizer gets its abbreviation list from
this module instead of the punkt model (which cannot be downloaded everywhere), so every machine
splits the same way. LLM answers glue sentences ("accuracy.I hope") and use lists, so newlines
always split, glued sentences are split, and a bare list marker stays with the text after it.
Chinese and Japanese put no space after 。！？, so Punkt never sees those ends: the text is cut
after them before Punkt reads it."""

import re
from collections.abc import Iterator
from functools import cache

from . import lazy
from .types import SegmentedSentence, Span

# Lowercase, without the final period, as Punkt stores them.
ABBREVIATIONS = frozenset(
    """
    dr mr mrs ms prof sr jr st mt ft gen col lt sgt capt cmdr adm gov sen rep pres rev hon
    inc ltd co corp llc bros dept univ assn est approx appt apt ave blvd rd no nos vol vols
    ch chap sec fig figs eq eqs ref refs ed eds al etc vs cf viz ca ph pp p para
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
    u.s u.s.a u.k u.n e.u e.g i.e a.m p.m b.c a.d ph.d m.d b.a m.a b.sc m.sc d.c n.y l.a
    b.c.e c.e c fl a.k.a n.d j.d r.n m.s ll.b d.d.s esq atty supt maj brig cpl pvt messrs
    intl natl assoc hwy tues thurs sq wk
    mg kg km cm mm ml oz lb lbs hr hrs min sec yr yrs
    """.split()
)

# Paragraph chunks handed to the LLM as context stay under this many characters.
CONTEXT_BUDGET_CHARS = 3000
# A "sentence" longer than this (a wall of text with no punctuation) is cut at a space.
MAX_SENTENCE_CHARS = 1500
# Punkt runs under NLTK's ReDoS guard (nltk.redos): TimeoutError once a scan has taken 5 s of the
# process's CPU time, counted from its first match to its last, so other threads' work counts too,
# and a 2 MB line failed on a busy worker (issue 38). A text is read in pieces of at most this many
# characters (~40 ms each), cut where a line or else a sentence ends, so any size stays well inside
# the guard; the merges below (list markers, initialisms) stay within a piece as well.
PIECE_CHARS = 20_000

# Han, kana (with 々〆〇) and half-width katakana: scripts written without spaces between words.
_CJK = "\u3005-\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
# ASCII quotes are left out: after 。 they may as well open the next quotation as close this one.
_CLOSERS = "」』”’）〉》】〕］｝)]"
_CJK_END = re.compile(
    rf"""
    (?: [。｡！？]+                          # ideographic full stops, full-width ! and ?, as in ？！
      | (?<=[{_CJK}{re.escape(_CLOSERS)}])．  # elsewhere ． is a decimal point (３．５) or in Ｕ．Ｓ．
    )
    [{re.escape(_CLOSERS)}]*                # closing quotes and brackets stay with their sentence
    """,
    re.VERBOSE,
)
# 「…。」と言った: a quotation followed by と / って goes on inside the same Japanese sentence.
_QUOTATIVE = ("と", "って")

# A capital, or (after a letter, so "1.首先" list items stay whole) a Chinese or Japanese character.
_GLUED = re.compile(rf"(?<=[a-z0-9][.!?])(?=[A-Z])|(?<=[a-z][.!?])(?=[{_CJK}])")
# ASCII, as every abbreviation is: in "例如e.g.中文" the word is "e.g", not "例如e.g".
_WORD_BEFORE = re.compile(r"([\w.]+)[.!?]$", re.ASCII)
_WORD_CHAR = re.compile(r"[\w.]", re.ASCII)
_LONGEST_ABBREVIATION = max(map(len, ABBREVIATIONS))
# "R.N.", "B.C.E.", "A. D.": letters each followed by a period, at the end of a span.
_INITIALISM_END = re.compile(r"(?<![\w.])(?:[A-Za-z]\. ?){1,}[A-Za-z]\.$")
# Where a piece may end: a sentence end and the space after it (a CJK full stop needs none).
_PIECE_END = re.compile(rf"[.!?]+[\"'{re.escape(_CLOSERS)}]*\s+|[。｡！？]+[{re.escape(_CLOSERS)}]*\s*")
_CONTINUES = re.compile(r"[a-z0-9(\[,;:]")
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,3}[.)]|[a-zA-Z][.)]|[-*•+]|#{1,6})\s*$")
# A list number glued to the end of the sentence before it ("…Apple Inc.2." before "Microsoft…",
# "include:1." before "Steve…"): after a sentence end or a colon that follows a letter or a
# closing bracket or quote, so a decimal ("3.2.") or a year ("in 1999.") is never taken for one.
_GLUED_MARKER = re.compile(r"(?<=[A-Za-z)\]\"'”’][.!?:;])\s?(\d{1,3}[.)])$")


@cache
def _punkt():
    # Imported at first use: importing nltk imports all of it, ~0.6 s of CPU (2.4 s with the
    # scipy and scikit-learn that `lazy` keeps out) that a starting web server should not wait for.
    punkt = lazy.load("nltk.tokenize.punkt")
    params = punkt.PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS)
    return punkt.PunktSentenceTokenizer(params)


def split_sentences(text: str, offset: int = 0) -> list[Span]:
    """Sentences of one paragraph (or any text), as spans into the text they came from."""
    spans: list[Span] = []
    for start, end in _pieces(text):
        spans.extend(_piece_sentences(text[start:end], offset + start))
    return spans


def _piece_sentences(text: str, offset: int) -> list[Span]:
    spans: list[Span] = []
    for line_start, line in _lines(text):
        for start, end in _punkt_spans(line):
            for piece_start, piece_end in _split_glued(line, start, end):
                spans.extend(_cut_long(line, piece_start, piece_end, offset + line_start))
    spans = _attach_stray_punctuation(_merge_list_markers(spans, text, offset), text, offset)
    return _move_glued_markers(_rejoin_initialisms(spans, text, offset), text, offset)


def segment(text: str) -> list[SegmentedSentence]:
    sentences: list[SegmentedSentence] = []
    for paragraph_index, (para_start, paragraph) in enumerate(_paragraphs(text)):
        spans = [s for s in split_sentences(paragraph, para_start) if _has_words(s.text)]
        for chunk in _chunks(spans):
            context = tuple(s.text for s in chunk)
            for position, span in enumerate(chunk):
                sentences.append(
                    SegmentedSentence(
                        index=len(sentences),
                        text=span.text,
                        start=span.start,
                        end=span.end,
                        paragraph_index=paragraph_index,
                        context=context,
                        position_in_context=position,
                    )
                )
    return sentences


def _pieces(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of consecutive pieces of at most PIECE_CHARS: each ends after a line break when
    there is one (no merge crosses a line, so the sentences are the same as from the whole text),
    else after a sentence end, else at a space."""
    start = 0
    while len(text) - start > PIECE_CHARS:
        end = start + PIECE_CHARS
        cut = text.rfind("\n", start, end) + 1
        if cut <= start:
            cut = _sentence_cut(text, start, end)
        yield start, cut
        start = cut
    yield start, len(text)


def _sentence_cut(text: str, start: int, end: int) -> int:
    """Where the last sentence before `end` ends (the start of the one after it): after . ! ? and a
    space before a word that is not lowercase, not after an abbreviation, or after a CJK full stop;
    else after the last space; else `end`."""
    cut = 0
    for match in _PIECE_END.finditer(text, start, end):
        after = match.end()
        if after >= len(text) or text[after].islower() or text.startswith(_QUOTATIVE, after):
            continue
        if match.group()[0] in ".!?" and _abbreviation_before(text, start, match.start() + 1):
            continue
        cut = after
    if cut > start:
        return cut
    return text.rfind(" ", start, end) + 1 or end


def _lines(text: str) -> Iterator[tuple[int, str]]:
    position = 0
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        if stripped.strip():
            yield position, stripped
        position += len(line)


def _paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """Blocks separated by blank lines, with their offsets."""
    for match in re.finditer(r"\S(?:.*?\S)?(?=[ \t\r]*\n[ \t\r]*\n|\s*$)", text, flags=re.DOTALL):
        yield match.start(), match.group()


def _punkt_spans(line: str) -> Iterator[tuple[int, int]]:
    """Punkt runs on each piece between CJK sentence ends: on the whole line it would read
    "美国。U.S." as one word and break after it."""
    for piece_start, piece_end in _split_cjk(line):
        # Listed first: the guard's clock runs until the scan ends, through whatever the caller does
        # between two sentences.
        for start, end in list(_punkt().span_tokenize(line[piece_start:piece_end])):
            yield piece_start + start, piece_start + end


def _split_cjk(line: str) -> Iterator[tuple[int, int]]:
    cut = 0
    for match in _CJK_END.finditer(line):
        if match.group()[-1] in _CLOSERS and line.startswith(_QUOTATIVE, match.end()):
            continue
        yield cut, match.end()
        cut = match.end()
    yield cut, len(line)


def _split_glued(line: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    cut = start
    for match in _GLUED.finditer(line, start, end):
        if _abbreviation_before(line, cut, match.start()):
            continue
        yield cut, match.start()
        cut = match.start()
    yield cut, end


def _abbreviation_before(text: str, start: int, end: int) -> bool:
    """Whether the word before the . ! or ? at `end - 1` (reading back no further than `start`) is
    one of ABBREVIATIONS. Only the last few characters are read: a longer word is none of them, and
    reading back to `start` each time made a run of glued abbreviations quadratic."""
    window = max(start, end - _LONGEST_ABBREVIATION - 2)
    word = _WORD_BEFORE.search(text, window, end)
    if word is None or (word.start() == window > start and _WORD_CHAR.match(text, window - 1)):
        return False
    return word.group(1).lower() in ABBREVIATIONS


def _cut_long(line: str, start: int, end: int, offset: int) -> Iterator[Span]:
    while end - start > MAX_SENTENCE_CHARS:
        space = line.rfind(" ", start, start + MAX_SENTENCE_CHARS)
        cut = space if space > start else start + MAX_SENTENCE_CHARS
        yield _span(line, start, cut, offset)
        start = cut
    yield _span(line, start, end, offset)


def _span(line: str, start: int, end: int, offset: int) -> Span:
    piece = line[start:end]
    lead = len(piece) - len(piece.lstrip())
    piece = piece.strip()
    return Span(piece, offset + start + lead, offset + start + lead + len(piece))


def _merge_list_markers(spans: list[Span], text: str, offset: int) -> list[Span]:
    """'1.' split off by Punkt belongs to the sentence after it on the same line."""
    merged: list[Span] = []
    pending: Span | None = None
    for span in spans:
        if pending is not None and "\n" not in text[pending.end - offset : span.start - offset]:
            span = Span(text[pending.start - offset : span.end - offset], pending.start, span.end)
        elif pending is not None:
            merged.append(pending)
        pending = None
        if _LIST_MARKER.match(span.text):
            pending = span
        else:
            merged.append(span)
    if pending is not None:
        merged.append(pending)
    return [s for s in merged if s.text]


def _attach_stray_punctuation(spans: list[Span], text: str, offset: int) -> list[Span]:
    """ "Wow!!!" can come back as "Wow!!" + "!": the stray mark belongs to the sentence before."""
    attached: list[Span] = []
    for span in spans:
        if attached and not _has_words(span.text) and "\n" not in text[attached[-1].end - offset : span.start - offset]:
            previous = attached[-1]
            span = Span(text[previous.start - offset : span.end - offset], previous.start, span.end)
            attached[-1] = span
        else:
            attached.append(span)
    return attached


def _rejoin_initialisms(spans: list[Span], text: str, offset: int) -> list[Span]:
    """Initialisms the list does not know ("R.N.", "A. D.") end no sentence when what follows
    cannot start one (a lowercase word, a number, a bracket): Punkt, untrained, cuts after
    any of them. Before a capital it stays cut, as the text gives no other sign."""
    joined: list[Span] = []
    for span in spans:
        if (
            joined
            and _INITIALISM_END.search(joined[-1].text)
            and _CONTINUES.match(span.text)
            and "\n" not in text[joined[-1].end - offset : span.start - offset]
        ):
            previous = joined[-1]
            span = Span(text[previous.start - offset : span.end - offset], previous.start, span.end)
            joined[-1] = span
        else:
            joined.append(span)
    return joined


def _move_glued_markers(spans: list[Span], text: str, offset: int) -> list[Span]:
    """A list number at the end of a sentence, glued to it ("Apple Inc.2."), numbers the sentence
    after it on the same line: it moves there ("2. Microsoft Corp."), as a marker split off on its
    own does (_merge_list_markers)."""
    moved: list[Span] = []
    for span in spans:
        if moved and "\n" not in text[moved[-1].end - offset : span.start - offset]:
            marker = _GLUED_MARKER.search(moved[-1].text)
            if marker:
                previous = moved[-1]
                cut = previous.start + marker.start(1)
                before = text[previous.start - offset : cut - offset].rstrip()
                moved[-1] = Span(before, previous.start, previous.start + len(before))
                span = Span(text[cut - offset : span.end - offset], cut, span.end)
        moved.append(span)
    return moved


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _chunks(spans: list[Span]) -> Iterator[list[Span]]:
    chunk: list[Span] = []
    size = 0
    for span in spans:
        if chunk and size + len(span.text) > CONTEXT_BUDGET_CHARS:
            yield chunk
            chunk, size = [], 0
        chunk.append(span)
        size += len(span.text) + 1
    if chunk:
        yield chunk
