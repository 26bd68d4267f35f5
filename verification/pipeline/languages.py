"""The language a text is written in, and what factsite knows of each language.

Detection is py3langid (langid.py's maintained fork: 140 languages and varieties, its model ships
inside the package, 4.6 MB, nothing downloaded at run time), with two rules of script before it:
kana make a text Japanese and Hangul Korean, which a character n-gram model gets wrong on short
texts that mix them with Han. A text too short to tell, or one the model is unsure of, has no language
(None): it is checked as before, in no language in particular.

A language is "tested" once factsite's end-to-end tests run a text in it (tests/test_languages.py);
the others are checked the same way but marked "less tested" wherever the result is shown. A text
mostly written in a script factsite cannot split into sentences nor search in is refused
(`unsupported_script`), never scored as if it had been checked."""

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from . import lazy, stopwords
from .scripts import script_counts, unsupported

TESTED = "tested"
LESS_TESTED = "less tested"

# The languages the end-to-end tests run a text in (tests/test_languages.py).
TESTED_LANGUAGES = frozenset("en de es fr zh ja ar hi".split())
RIGHT_TO_LEFT = frozenset("ar he fa ur ps ug".split())
# Languages with about 1 % or more of the web's pages by W3Techs' survey of content languages:
# a query in them finds pages enough. Every other language's claims are also searched with an
# English query the decomposition writes beside the claim's own (decompose_prompts.py).
LARGE_WEB = frozenset("en es de ja fr ru pt it nl pl tr zh fa vi id cs".split())


@dataclass(frozen=True)
class Language:
    code: str  # ISO 639-1
    name: str  # in English
    own_name: str  # as its speakers write it
    # The country with the most native speakers (ISO 3166-1, lower case), for the search
    # engines that take one; "" for a language of no country.
    region: str

    @property
    def tested(self) -> bool:
        return self.code in TESTED_LANGUAGES

    @property
    def support(self) -> str:
        return TESTED if self.tested else LESS_TESTED

    @property
    def direction(self) -> str:
        return "rtl" if self.code in RIGHT_TO_LEFT else "ltr"

    @property
    def thin_web(self) -> bool:
        return self.code not in LARGE_WEB


# Every language with an ISO 639-1 code that py3langid tells apart: code, English name, own name,
# region.
_TABLE = """
af|Afrikaans|Afrikaans|za
am|Amharic|አማርኛ|et
an|Aragonese|Aragonés|es
ar|Arabic|العربية|eg
as|Assamese|অসমীয়া|in
az|Azerbaijani|Azərbaycan dili|az
ba|Bashkir|Башҡорт|ru
be|Belarusian|Беларуская|by
bg|Bulgarian|Български|bg
bn|Bengali|বাংলা|bd
br|Breton|Brezhoneg|fr
bs|Bosnian|Bosanski|ba
ca|Catalan|Català|es
cs|Czech|Čeština|cz
cy|Welsh|Cymraeg|gb
da|Danish|Dansk|dk
de|German|Deutsch|de
dz|Dzongkha|རྫོང་ཁ|bt
el|Greek|Ελληνικά|gr
en|English|English|us
eo|Esperanto|Esperanto|
es|Spanish|Español|mx
et|Estonian|Eesti|ee
eu|Basque|Euskara|es
fa|Persian|فارسی|ir
fi|Finnish|Suomi|fi
fo|Faroese|Føroyskt|fo
fr|French|Français|fr
fy|Western Frisian|Frysk|nl
ga|Irish|Gaeilge|ie
gd|Scottish Gaelic|Gàidhlig|gb
gl|Galician|Galego|es
gu|Gujarati|ગુજરાતી|in
ha|Hausa|Hausa|ng
he|Hebrew|עברית|il
hi|Hindi|हिन्दी|in
hr|Croatian|Hrvatski|hr
ht|Haitian Creole|Kreyòl ayisyen|ht
hu|Hungarian|Magyar|hu
hy|Armenian|Հայերեն|am
id|Indonesian|Bahasa Indonesia|id
ig|Igbo|Igbo|ng
is|Icelandic|Íslenska|is
it|Italian|Italiano|it
ja|Japanese|日本語|jp
jv|Javanese|Basa Jawa|id
ka|Georgian|ქართული|ge
kk|Kazakh|Қазақ тілі|kz
km|Khmer|ខ្មែរ|kh
kn|Kannada|ಕನ್ನಡ|in
ko|Korean|한국어|kr
ku|Kurdish|Kurdî|tr
ky|Kyrgyz|Кыргызча|kg
la|Latin|Latina|
lb|Luxembourgish|Lëtzebuergesch|lu
lg|Ganda|Luganda|ug
ln|Lingala|Lingála|cd
lo|Lao|ລາວ|la
lt|Lithuanian|Lietuvių|lt
lv|Latvian|Latviešu|lv
mg|Malagasy|Malagasy|mg
mk|Macedonian|Македонски|mk
ml|Malayalam|മലയാളം|in
mn|Mongolian|Монгол|mn
mr|Marathi|मराठी|in
ms|Malay|Bahasa Melayu|my
mt|Maltese|Malti|mt
my|Burmese|မြန်မာ|mm
nb|Norwegian Bokmål|Norsk bokmål|no
ne|Nepali|नेपाली|np
nl|Dutch|Nederlands|nl
nn|Norwegian Nynorsk|Norsk nynorsk|no
no|Norwegian|Norsk|no
oc|Occitan|Occitan|fr
om|Oromo|Afaan Oromoo|et
or|Odia|ଓଡ଼ିଆ|in
pa|Punjabi|ਪੰਜਾਬੀ|in
pl|Polish|Polski|pl
ps|Pashto|پښتو|af
pt|Portuguese|Português|br
qu|Quechua|Runa Simi|pe
ro|Romanian|Română|ro
ru|Russian|Русский|ru
rw|Kinyarwanda|Kinyarwanda|rw
sa|Sanskrit|संस्कृतम्|
se|Northern Sami|Davvisámegiella|no
si|Sinhala|සිංහල|lk
sk|Slovak|Slovenčina|sk
sl|Slovenian|Slovenščina|si
sn|Shona|chiShona|zw
so|Somali|Soomaali|so
sq|Albanian|Shqip|al
sr|Serbian|Српски|rs
st|Southern Sotho|Sesotho|za
sv|Swedish|Svenska|se
sw|Swahili|Kiswahili|tz
ta|Tamil|தமிழ்|in
te|Telugu|తెలుగు|in
tg|Tajik|Тоҷикӣ|tj
th|Thai|ไทย|th
tk|Turkmen|Türkmençe|tm
tl|Tagalog|Tagalog|ph
tr|Turkish|Türkçe|tr
tt|Tatar|Татар|ru
ug|Uyghur|ئۇيغۇرچە|cn
uk|Ukrainian|Українська|ua
ur|Urdu|اردو|pk
uz|Uzbek|Oʻzbek|uz
vi|Vietnamese|Tiếng Việt|vn
vo|Volapük|Volapük|
wa|Walloon|Walon|be
xh|Xhosa|isiXhosa|za
yo|Yoruba|Yorùbá|ng
zh|Chinese|中文|cn
zu|Zulu|isiZulu|za
"""

LANGUAGES: dict[str, Language] = {
    fields[0]: Language(*fields) for fields in (line.split("|") for line in _TABLE.strip().splitlines())
}


def language(code: str | None) -> Language | None:
    """The language of an ISO 639-1 code; None for none, or for a code factsite does not know."""
    return LANGUAGES.get((code or "").lower())


def name(code: str | None) -> str:
    """A language's name in English ("German" for "de"); the code itself when factsite has none."""
    found = language(code)
    return found.name if found else (code or "")


# --- detection

# Fewer letters than this tell too little (a heading, a name): no language. A Han, kana or Hangul
# character counts as three: it is about a word ("你去过吗？" is four, and plainly Chinese).
MIN_LETTERS = 12
# Below this probability (py3langid's, calibrated for the text's length, summed over a language's
# varieties) the detector is unsure: a single short sentence often is ("Lisboa é a capital de
# Portugal.": Galician 0.50, Portuguese 0.45), an answer of a few sentences hardly ever.
MIN_PROBABILITY = 0.5
# The best language must lead the next by this much of the probability: between two close
# languages ("Lisboa é a capital de Portugal": Galician 0.50, Portuguese 0.45) it is unsure.
MIN_LEAD = 0.2
# The languages factsite knows that are written in each script but Latin (a text mostly in Latin
# letters is none of these); scripts not listed are taken at the detector's word.
SCRIPT_LANGUAGES = {
    "arabic": frozenset("ar fa ur ps ug ku sd".split()),
    "cyrillic": frozenset("ru uk bg sr mk be kk ky mn tg tt ba cv".split()),
    "greek": frozenset({"el"}),
    "hebrew": frozenset({"he", "yi"}),
    "devanagari": frozenset("hi mr ne sa".split()),
    "bengali": frozenset({"bn", "as"}),
    "thai": frozenset({"th"}),
    "georgian": frozenset({"ka"}),
}
# The first this many characters decide: an answer's language shows in its first paragraphs,
# and a long page costs no more to detect than its start.
SAMPLE_CHARS = 3000

# Addresses and numbers say nothing of a language. Punctuation stays: combining marks (Devanagari's
# vowel signs, Arabic's harakat) are not word characters to a regular expression, and they are part
# of the words the detector knows.
_NOISE = re.compile(r"https?://\S+|www\.\S+|\S+@\S+|\d+")
# A text of at least this many words, this share of them English stopwords, is English without
# asking the model: loading it costs each process ~0.5 s of CPU and ~70 MB, and most pages a run
# reads are English. Measured: English pages of the benchmark's web 0.36–0.49 (median 0.40); the
# answers and splitting fixtures in de, es, fr, it at most 0.09, the other scripts 0; a German
# sentence of tests/pipeline/test_languages.py ("… steht in Paris, nicht in Berlin.") 0.25.
ENGLISH_WORDS_AT_LEAST = 30
ENGLISH_STOPWORD_SHARE = 0.33
_WORD = re.compile(r"[^\W\d_]+")


_loading = threading.Lock()


def _identifier():
    with _loading:  # loaded once per process, by one thread while the others wait
        return _load_identifier()


@cache
def _load_identifier():
    # At first use: its model is unpacked from an xz file, which a starting server need not wait for.
    # About 70 MB in the process: its DFA (40 MB) and its table of weights (27 MB).
    langid = lazy.load("py3langid.langid")
    return langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE, norm_probs=True)


# The detector tells apart some varieties of one language, between which a short text divides its
# probability (a Chinese answer: Mandarin 0.74, Wu 0.26): each counts for its ISO 639-1
# macrolanguage, as a reader names it.
_MACROLANGUAGES = {"wuu": "zh", "yue": "zh", "ary": "ar", "arz": "ar", "uzs": "uz", "sdh": "ku"}


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code of the language `text` is written in; None when it is too short to
    tell or the detector is unsure."""
    sample = text[:SAMPLE_CHARS]
    letters = _NOISE.sub(" ", sample)
    scripts = script_counts(letters)
    east_asian = scripts.get("han", 0) + scripts.get("kana", 0) + scripts.get("hangul", 0)
    if sum(scripts.values()) + 2 * east_asian < MIN_LETTERS:
        return None
    if 2 * east_asian > sum(scripts.values()):  # mostly Han, kana or Hangul: a name in them is not enough
        if scripts.get("kana", 0) >= 2:
            return "ja"
        if scripts.get("hangul", 0) > scripts.get("han", 0):
            return "ko"
    if _plainly_english(letters):
        return "en"
    found: dict[str, float] = {}
    unnamed = 0.0
    for code, probability in _identifier().rank(" ".join(letters.split())):
        code = _MACROLANGUAGES.get(code, code)
        if code in LANGUAGES:
            found[code] = found.get(code, 0.0) + probability
        else:
            unnamed += probability
    # Its other labels (creoles, historical languages: Nigerian Pidgin, Ancient Greek …) are left
    # out, as they would take a share of a short English or Greek text's probability; but a text
    # mostly in one of them (Kabyle, Acehnese) is in no language factsite names.
    if unnamed >= 0.5:
        return None
    ranked = sorted(found.values(), reverse=True) + [0.0]
    code = max(found, key=found.get)
    sure = ranked[0] / (1.0 - unnamed) >= MIN_PROBABILITY and ranked[0] - ranked[1] >= MIN_LEAD * (1.0 - unnamed)
    return code if sure and _written_in(code, scripts) else None


def _written_in(code: str, scripts: dict[str, int]) -> bool:
    """Whether the text's main script is one the language is written in: an English sentence
    quoting a greeting in Arabic script is not an Arabic text, whatever the model's n-grams say."""
    counted = {script: n for script, n in scripts.items() if script != "neutral"}
    main = max(counted, key=counted.get) if counted else "latin"
    if main in ("han", "kana", "hangul"):
        return code in ("zh", "ja", "ko")
    if main == "latin":
        return not any(code in codes for codes in SCRIPT_LANGUAGES.values())
    return code in SCRIPT_LANGUAGES.get(main, frozenset({code}))


def _plainly_english(text: str) -> bool:
    words = _WORD.findall(text.lower())
    if len(words) < ENGLISH_WORDS_AT_LEAST:
        return False
    return sum(word in stopwords.ENGLISH for word in words) >= ENGLISH_STOPWORD_SHARE * len(words)


def detect_language_of(parts: Iterable[str]) -> str | None:
    """detect_language of a text given in parts (a page's sentences), reading only as many as
    it needs."""
    sample: list[str] = []
    size = 0
    for part in parts:
        sample.append(part)
        size += len(part) + 1
        if size >= SAMPLE_CHARS:
            break
    return detect_language(" ".join(sample))


def unsupported_script(text: str) -> str | None:
    """The name of the script a text is mostly written in when factsite cannot split it into
    sentences or search in it ("Tibetan"); None when it can."""
    return unsupported(script_counts(text[: SAMPLE_CHARS * 4]), at_least=MIN_LETTERS)


def described(code: str | None) -> dict | None:
    """A language as the result JSON and the reports give it: {"code", "name", "own_name",
    "support": "tested" | "less tested", "dir"}; None for no language, and a code factsite has
    no name for is "less tested"."""
    if not code:
        return None
    found = language(code)
    if found is None:
        return {"code": code, "name": code, "own_name": code, "support": LESS_TESTED, "dir": "auto"}
    return {
        "code": found.code,
        "name": found.name,
        "own_name": found.own_name,
        "support": found.support,
        "dir": found.direction,
    }
