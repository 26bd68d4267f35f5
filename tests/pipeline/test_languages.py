"""The language of a text and what factsite knows of it (pipeline/languages.py), on AI answers
written in each tested language (tests/data/languages/answer_<code>.txt)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from verification.pipeline import languages

FIXTURES = Path(__file__).parent.parent / "data" / "languages"
ROOT = Path(__file__).resolve().parent.parent.parent


def answer(code: str) -> str:
    return (FIXTURES / f"answer_{code}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("code", ["de", "es", "fr", "zh", "ja", "ar", "hi", "it"])
def test_it_detects_the_language_of_an_answer(code):
    assert languages.detect_language(answer(code)) == code


@pytest.mark.parametrize("code", ["de", "zh", "ar"])
def test_its_first_sentence_alone_tells_the_language(code):
    first = answer(code).replace("。", ".").split(".")[0]
    assert languages.detect_language(first) == code


def test_it_detects_english():
    text = "The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair."
    assert languages.detect_language(text) == "en"


@pytest.mark.parametrize("text", ["", "OK", "Paris 1889", "https://example.org/a-long-address-with-words 12 34"])
def test_a_text_too_short_to_tell_has_no_language(text):
    assert languages.detect_language(text) is None


@pytest.mark.parametrize(("text", "code"), [("北京是中国的首都。", "zh"), ("本当ですか？", "ja")])
def test_a_short_sentence_in_chinese_or_japanese_is_told(text, code):
    # A character is about a word: eight of them tell more than eight Latin letters.
    assert languages.detect_language(text) == code


def test_kana_make_a_text_japanese_even_when_han_dominates():
    # Mostly kanji, as a short Japanese heading is; a character model reads it as Chinese.
    assert languages.detect_language("東京都庁舎は新宿区西新宿に所在する建物である") == "ja"


def test_a_japanese_name_in_an_english_text_leaves_it_english():
    text = (
        "Pokémon, known as ポケモン in Japan, is a media franchise created by Satoshi Tajiri in 1996. "
        "It began with two video games for the Game Boy and grew into films, cards and toys."
    )
    assert languages.detect_language(text) == "en"


def test_a_page_is_detected_from_its_first_sentences_only():
    sentences = ["Der Eiffelturm steht in Paris, nicht in Berlin."] * 100 + ["The rest of the page is English."] * 1000
    assert languages.detect_language_of(sentences) == "de"


@pytest.mark.parametrize(
    ("code", "name", "support", "direction"),
    [
        ("de", "German", "tested", "ltr"),
        ("ar", "Arabic", "tested", "rtl"),
        ("hi", "Hindi", "tested", "ltr"),
        ("it", "Italian", "less tested", "ltr"),
        ("fa", "Persian", "less tested", "rtl"),
    ],
)
def test_each_language_is_described_with_its_support_and_direction(code, name, support, direction):
    described = languages.described(code)
    assert (described["name"], described["support"], described["dir"]) == (name, support, direction)


def test_a_code_without_a_name_is_less_tested_and_reads_either_way():
    assert languages.described("xx") == {
        "code": "xx",
        "name": "xx",
        "own_name": "xx",
        "support": "less tested",
        "dir": "auto",
    }
    assert languages.described("") is None


def test_every_language_with_a_two_letter_code_the_model_knows_has_a_name():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    every = LanguageIdentifier.from_model_file(MODEL_FILE).labels
    assert {code for code in every if len(code) == 2} <= set(languages.LANGUAGES)


def test_a_text_in_a_language_factsite_does_not_name_has_none():
    # Kabyle, which the model knows (its "kab") but which has no two-letter code: not taken for
    # the nearest language that has one.
    text = "Tamaziɣt d tutlayt i yettmeslayen deg Tmurt n Leqbayel. Aṭas n yimdanen i tt-yessawalen ass-a."
    assert languages._load_identifier().rank(text)[0][0] == "kab"
    assert languages.detect_language(text) is None


def test_a_thin_webs_language_is_searched_in_english_too():
    assert languages.language("hi").thin_web and languages.language("ar").thin_web
    assert not languages.language("de").thin_web and not languages.language("zh").thin_web


def test_a_text_in_a_script_factsite_cannot_split_is_named():
    assert languages.unsupported_script(answer("bo")) == "Tibetan"
    assert languages.unsupported_script("ኢትዮጵያ በምሥራቅ አፍሪካ የምትገኝ አገር ናት። ዋና ከተማዋ አዲስ አበባ ናት።") == "Ethiopic (Ge'ez)"


@pytest.mark.parametrize("code", ["de", "es", "fr", "zh", "ja", "ar", "hi", "it"])
def test_the_tested_scripts_are_supported(code):
    assert languages.unsupported_script(answer(code)) is None


def test_a_quotation_in_another_script_does_not_refuse_a_text():
    text = answer("de") + " Auf Tibetisch heißt Lhasa ལྷ་ས་."
    assert languages.unsupported_script(text) is None


FRESH_PROCESS = """
import json
from verification.pipeline import languages
from verification.pipeline.types import FetchedDocument
from verification.worker import cpu_work

def loaded():
    return languages._load_identifier.cache_info().currsize == 1

steps = {}
cpu_work.warm_up(None)
steps["warm-up"] = loaded()
def read(sentence):
    html = ("<html><body><article><p>" + sentence * 3 + "</p></article></body></html>").encode()
    return cpu_work.read_page(FetchedDocument("https://a.test/", "https://a.test/", "text/html", "utf-8", html))

page = read("The council of the city approved a tram line in 2024, and the work on it is to begin in the spring. ")
steps["english page"] = [page.language, loaded()]
page = read("Der Stadtrat hat nach einer langen Debatte den Bau einer neuen Straßenbahnlinie beschlossen. ")
steps["german page"] = [page.language, loaded()]
print(json.dumps(steps))
"""


def test_plain_english_pages_are_told_without_loading_the_detectors_model():
    # Its model costs a process ~0.5 s of CPU and ~70 MB: a CPU-pool process warms up, and reads
    # English pages, without it; the first page in another language loads it.
    done = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, timeout=120, cwd=ROOT)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "warm-up": False,
        "english page": ["en", False],
        "german page": ["de", True],
    }


@pytest.mark.parametrize(
    "text",
    [
        # An English sentence quoting words in another script is not in that script's language.
        "The Arabic greeting السلام عليكم means peace be upon you.",
        # Two close languages the detector cannot tell apart at this length (Galician 0.50, Portuguese 0.45).
        "Lisboa é a capital de Portugal e a maior cidade do país.",
    ],
)
def test_a_text_the_detector_only_half_reads_has_no_language(text):
    assert languages.detect_language(text) is None


def test_an_english_sentence_quoting_devanagari_stays_english():
    assert languages.detect_language("The Hindi word नमस्ते means hello, and is said with folded hands.") == "en"
