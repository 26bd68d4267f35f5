"""The words BM25 compares in a text of a language other than English (English keeps
passages.tokenize: stemmed, English stopwords dropped).

- Chinese, Japanese and Thai write no spaces between words: their letters are compared as
  overlapping pairs of characters (character bigrams, the usual stand-in for a word segmenter in
  search engines), a lone character as itself. Latin words and numbers among them are words.
- Languages NLTK has a Snowball stemmer for (no downloaded data needed) are stemmed with it, after
  their common words are dropped (the short lists below; NLTK's stopword corpus needs a download).
- Every other language: lowercase words, with no stemming: an English stemmer would cut them
  wrongly. A word keeps its combining marks (the vowel signs of Hindi and Thai, Arabic's
  harakat), which Python's \\w leaves out and would otherwise split words at; Arabic's harakat and
  tatweel are then removed, as writers use them unevenly."""

import re
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache

from . import lazy

ENGLISH = frozenset({"en", ""})

# NLTK's Snowball stemmers by ISO 639-1 code.
SNOWBALL = {
    "ar": "arabic",
    "da": "danish",
    "de": "german",
    "es": "spanish",
    "fi": "finnish",
    "fr": "french",
    "hu": "hungarian",
    "it": "italian",
    "nb": "norwegian",
    "nl": "dutch",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sv": "swedish",
}

# The most common function words, lowercase (before stemming).
STOPWORDS = {
    "de": """der die das den dem des ein eine einer eines einem einen und oder aber in im ins an am auf
        aus bei mit nach von vom zu zum zur für über unter vor ist sind war waren wird werden wurde
        wurden hat haben hatte sein es er sie wir ihr ich du nicht auch als wie so dass daß sich
        noch nur schon sehr bis durch um""",
    "es": """el la los las un una unos unas y o pero de del al en a con por para sin sobre es son
        era eran fue fueron ser ha han había se que lo le les su sus como más muy ya también no
        este esta estos estas ese esa""",
    "fr": """le la les un une des du de d l et ou mais en au aux à a avec par pour sans sur dans est
        sont était étaient été être ont avait se s que qu qui il elle ils elles on ne pas plus
        ce cette ces son sa ses leur leurs comme aussi très""",
    "it": """il lo la i gli le un uno una di del della dei degli delle a al alla ai in nel nella con
        per su da e o ma è sono era erano stato essere ha hanno che non si come più anche""",
    "pt": """o a os as um uma uns umas de do da dos das em no na nos nas por para com sem e ou mas é
        são era eram foi foram ser tem têm que não se como mais muito também ao aos""",
    "nl": """de het een en of maar van in op aan met voor door bij naar uit is zijn was waren wordt
        worden werd heeft hebben had dat die dit niet ook als om te er""",
    "hi": "का के की है हैं था थे थी में और से को पर यह वह ने एक भी कि हो तो जो इस उस लिए गया",
    "ar": "في من على إلى عن أن إن كان كانت هذا هذه ذلك التي الذي و أو ثم قد لا ما مع هو هي",
}

# Scripts written without spaces between words: Han (with 々〆〇), kana, half-width katakana, Thai.
_UNSPACED = "\u3005-\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\u0e01-\u0e4e"
_UNSPACED_RUN = re.compile(rf"[{_UNSPACED}]+")
_ARABIC_MARKS = re.compile("[\u0640\u064b-\u065f\u0670]")


@cache
def _word_pattern() -> re.Pattern:
    """A word: word characters and the combining marks inside it (built at first use, ~20 ms)."""
    marks = "".join(
        re.escape(chr(code)) for code in range(0x300, 0x10000) if unicodedata.category(chr(code)) in ("Mn", "Mc")
    )
    return re.compile(rf"\w[\w{marks}]*")


def english(language: str | None) -> bool:
    return (language or "").lower() in ENGLISH


def tokenizer(language: str) -> Callable[[str], list[str]]:
    """How BM25 reads a text in `language` (not English: see passages.tokenizer)."""
    return _tokenizer((language or "").lower())


@cache
def _tokenizer(language: str) -> Callable[[str], list[str]]:
    stopwords = frozenset(STOPWORDS.get(language, "").split())
    stem = _stemmer(language)
    arabic = language in ("ar", "fa", "ur")

    def tokenize(text: str) -> list[str]:
        text = text.lower()
        if arabic:
            text = _ARABIC_MARKS.sub("", text)
        tokens: list[str] = []
        for word in _word_pattern().findall(text):
            if _UNSPACED_RUN.search(word):
                tokens.extend(_unspaced_tokens(word))
            elif word not in stopwords:
                tokens.append(stem(word))
        return tokens

    return tokenize


def _unspaced_tokens(word: str) -> list[str]:
    """A word holding letters of unspaced scripts: their runs as character bigrams, the rest as
    words ("iPhone发布" → "iphone", "发布")."""
    tokens: list[str] = []
    at = 0
    for run in _UNSPACED_RUN.finditer(word):
        if run.start() > at:
            tokens.append(word[at : run.start()])
        letters = run.group()
        tokens.extend(letters[i : i + 2] for i in range(max(1, len(letters) - 1)))
        at = run.end()
    if at < len(word):
        tokens.append(word[at:])
    return tokens


def _stemmer(language: str) -> Callable[[str], str]:
    if language not in SNOWBALL:
        return str
    # nltk through `lazy`, as in passages.py; a Snowball stemmer needs no downloaded data.
    stemmer = lazy.load("nltk.stem.snowball").SnowballStemmer(SNOWBALL[language])
    return lru_cache(maxsize=100_000)(stemmer.stem)
