"""Text → paragraphs → sentences with character offsets into the original text.

Deterministic with no downloaded data: NLTK's Punkt tokenizer gets its abbreviation list from
this module instead of the punkt model (which cannot be downloaded everywhere), so every machine
splits the same way. LLM answers glue sentences ("accuracy.I hope") and use lists, so newlines
always split, glued sentences are split, and a bare list marker stays with the text after it.
Chinese and Japanese put no space after 。！？, so Punkt never sees those ends: the text is cut
after them before Punkt reads it, and after the ends Punkt does not know in other scripts (the
danda । ॥ of Hindi and Bengali, the Arabic ؟ and the Urdu ۔; the Arabic comma ، ends no sentence).
Thai has no sentence punctuation, and a space in it may end a sentence or only a clause: a line
mostly in Thai is split by PyThaiNLP's CRF sentence model (`crfcut`, shipped inside the package, so
nothing is downloaded), then by Punkt as any other text.

`language` (ISO 639-1) adds that language's abbreviations to Punkt's list ("z.B." in German,
"Sra." in Spanish, "Mme" in French) and, in German, keeps an ordinal ("am 3. Oktober") inside its
sentence. The rules of a script hold whatever the language, so a text whose language could not
be told is still split at its script's sentence ends."""

import os
import re
import threading
from collections.abc import Iterator
from functools import cache

from . import lazy
from .segment_repairs import has_words, repaired
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

# Each language's abbreviations beyond ABBREVIATIONS (which hold for every language: "Dr.",
# "etc.", "U.S."), as Punkt stores them.
LANGUAGE_ABBREVIATIONS = {
    "de": """z.b bzw usw u.a u.ä d.h s.o s.u vgl ggf evtl inkl zzgl bspw mio mrd abs nr str hr fr jh jhd
        v.chr n.chr chr tel gegr geb gest dt engl franz lat ca o.ä u.v.m z.t""",
    "es": """sr sra srta sres dra ud uds dña d pág págs núm art av avda ee.uu p.ej aprox lic ing cía s.a
        a.c d.c tel cap máx mín""",
    "fr": "m mm mme mmes mlle mlles pr env ex p.ex apr av j.-c chap éd coll max hab ste st bd",
    "it": "sig sigg dott dott.ssa ing avv ecc pag art s.p.a a.c d.c n ca",
    "pt": "sr sra srs dra pág art av n.º a.c d.c s.a ltda aprox cia p.ex",
    "nl": "bijv o.a d.w.z enz nr dhr mevr ca blz jl m.b.t t.o.v",
}

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

# Sentence ends of other scripts that Punkt does not know.
_SCRIPT_END = re.compile(rf"[।॥؟۔]+[{re.escape(_CLOSERS)}]*")
_THAI_LETTER = re.compile("[\u0e01-\u0e4e]")
_OTHER_SCRIPTS = re.compile("[।॥؟۔\u0e01-\u0e4e]")
# crfcut's tagger is one object per process: calls from several threads take turns.
_thai_lock = threading.Lock()

# A capital, or (after a letter, so "1.首先" list items stay whole) a Chinese or Japanese character.
_GLUED = re.compile(rf"(?<=[a-z0-9][.!?])(?=[A-Z])|(?<=[a-z][.!?])(?=[{_CJK}])")
# ASCII, as every abbreviation is: in "例如e.g.中文" the word is "e.g", not "例如e.g".
_WORD_BEFORE = re.compile(r"([\w.]+)[.!?]$", re.ASCII)
_WORD_CHAR = re.compile(r"[\w.]", re.ASCII)
_LONGEST_ABBREVIATION = max(map(len, ABBREVIATIONS))
# Where a piece may end: a sentence end and the space after it (a CJK full stop needs none).
_PIECE_END = re.compile(rf"[.!?]+[\"'{re.escape(_CLOSERS)}]*\s+|[。｡！？।॥؟۔]+[{re.escape(_CLOSERS)}]*\s*")


def _punkt(language: str = "en"):
    """Punkt with ABBREVIATIONS and the language's own (one tokenizer per language)."""
    return _punkt_with(LANGUAGE_ABBREVIATIONS.get(language, ""))


@cache
def _punkt_with(extra_abbreviations: str):
    # Imported at first use: importing nltk imports all of it, ~0.6 s of CPU (2.4 s with the
    # scipy and scikit-learn that `lazy` keeps out) that a starting web server should not wait for.
    punkt = lazy.load("nltk.tokenize.punkt")
    params = punkt.PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS) | set(extra_abbreviations.split())
    return punkt.PunktSentenceTokenizer(params)


def split_sentences(text: str, offset: int = 0, language: str = "en") -> list[Span]:
    """Sentences of one paragraph (or any text), as spans into the text they came from."""
    spans: list[Span] = []
    for start, end in _pieces(text):
        spans.extend(_piece_sentences(text[start:end], offset + start, language))
    return spans


def _piece_sentences(text: str, offset: int, language: str = "en") -> list[Span]:
    spans: list[Span] = []
    for line_start, line in _lines(text):
        for start, end in _punkt_spans(line, language):
            for piece_start, piece_end in _split_glued(line, start, end, language):
                spans.extend(_cut_long(line, piece_start, piece_end, offset + line_start))
    return repaired(spans, text, offset, language)


def segment(text: str, language: str = "en") -> list[SegmentedSentence]:
    """The text's sentences, `language` (ISO 639-1) its language: see the module's docstring."""
    sentences: list[SegmentedSentence] = []
    for paragraph_index, (para_start, paragraph) in enumerate(_paragraphs(text)):
        spans = [s for s in split_sentences(paragraph, para_start, language) if has_words(s.text)]
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


def _punkt_spans(line: str, language: str = "en") -> Iterator[tuple[int, int]]:
    """Punkt runs on each piece between CJK sentence ends (on the whole line it would read
    "美国。U.S." as one word and break after it) and those of other scripts."""
    tokenizer = _punkt(language)
    for piece_start, piece_end in _split_cjk(line):
        for part_start, part_end in _script_parts(line, piece_start, piece_end):
            # Listed first: the guard's clock runs until the scan ends, through whatever the caller
            # does between two sentences.
            for start, end in list(tokenizer.span_tokenize(line[part_start:part_end])):
                yield part_start + start, part_start + end


def _script_parts(line: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """[start, end) cut at other scripts' sentence ends and as Thai sentences; a piece with none of
    their letters or marks (most of them) is given back at once."""
    if not _OTHER_SCRIPTS.search(line, start, end):
        yield start, end
        return
    for script_start, script_end in _split_script_ends(line, start, end):
        yield from _split_thai(line, script_start, script_end)


def _split_cjk(line: str) -> Iterator[tuple[int, int]]:
    cut = 0
    for match in _CJK_END.finditer(line):
        if match.group()[-1] in _CLOSERS and line.startswith(_QUOTATIVE, match.end()):
            continue
        yield cut, match.end()
        cut = match.end()
    yield cut, len(line)


def _split_script_ends(line: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """[start, end) cut after each of _SCRIPT_END's ends (a piece of only spaces is skipped)."""
    cut = start
    for match in _SCRIPT_END.finditer(line, start, end):
        if line[cut : match.end()].strip():
            yield cut, match.end()
        cut = match.end()
    if line[cut:end].strip():
        yield cut, end


def _split_thai(line: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """[start, end) as PyThaiNLP's CRF model splits it when at least half its letters are Thai
    (see the module's docstring); else whole."""
    text = line[start:end]
    # The regex first: a line with no Thai (nearly every line) costs no count of its letters.
    if not _THAI_LETTER.search(text) or 2 * len(_THAI_LETTER.findall(text)) < sum(ch.isalpha() for ch in text):
        yield start, end
        return
    with _thai_lock:
        sentences = _thai_sentences()(text, engine="crfcut")
    at = 0
    for sentence in sentences:
        found = text.find(sentence.strip(), at) if sentence.strip() else -1
        if found < 0:
            continue
        if found > at and text[at:found].strip():  # text the model left out stays, as its own piece
            yield start + at, start + found
        at = found + len(sentence.strip())
        yield start + found, start + at
    if text[at:].strip():
        yield start + at, end


@cache
def _thai_sentences():
    # The CRF model ships inside the package and is all factsite uses of it: PyThaiNLP is told to
    # download nothing and to write nothing (on import it makes ~/pythainlp-data, which a server's
    # user may not be allowed to).
    os.environ["PYTHAINLP_READ_ONLY"] = "1"
    os.environ["PYTHAINLP_OFFLINE"] = "1"
    return lazy.load("pythainlp.tokenize").sent_tokenize


def _split_glued(line: str, start: int, end: int, language: str = "en") -> Iterator[tuple[int, int]]:
    cut = start
    for match in _GLUED.finditer(line, start, end):
        if _abbreviation_before(line, cut, match.start()) or _inside_language_abbreviation(
            line, match.start(), language
        ):
            continue
        yield cut, match.start()
        cut = match.start()
    yield cut, end


def _inside_language_abbreviation(line: str, at: int, language: str) -> bool:
    """Whether `at` is inside one of the language's abbreviations written without spaces, as
    German "z.B." (read as glued sentences "z." and "B." otherwise)."""
    extra = LANGUAGE_ABBREVIATIONS.get(language)
    if not extra:
        return False
    start = max(line.rfind(" ", 0, at), line.rfind("\t", 0, at)) + 1
    end = next((i for i in range(at, len(line)) if line[i].isspace()), len(line))
    return line[start:end].lower().rstrip(".,;:!?)") in _abbreviation_set(extra)


@cache
def _abbreviation_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


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
