"""BM25 in the text's language (issue 36): its words, stems and common words, character pairs
where words are not spaced, and a claim finding its sentence among others in German and Chinese."""

import pytest

from verification.pipeline import language_words
from verification.pipeline.passages import Corpus, judged_text, rank_sentences, select_passages, tokenize, tokenizer


def words(language: str, text: str) -> list[str]:
    return tokenizer(language)(text)


def test_english_and_no_language_keep_todays_tokenizer():
    assert tokenizer("en") is tokenize
    assert tokenizer("") is tokenize
    assert tokenizer(None) is tokenize


@pytest.mark.parametrize(
    ("language", "a", "b"),
    [
        ("de", "die neuen Impfstoffe", "der neue Impfstoff"),
        ("es", "las vacunas aprobadas", "la vacuna aprobada"),
        ("fr", "les vaccins approuvés", "le vaccin approuvé"),
        ("it", "i vaccini approvati", "il vaccino approvato"),
    ],
)
def test_inflected_forms_share_their_stem_and_common_words_are_dropped(language, a, b):
    assert words(language, a) == words(language, b)
    assert len(words(language, a)) == 2


def test_no_english_stemming_on_another_language():
    # The English stemmer would make "vacunas" "vacuna" and keep "las"; Spanish's makes both "vacun".
    assert tokenize("las vacunas") == ["las", "vacuna"]
    assert words("es", "las vacunas") == ["vacun"]


def test_a_language_without_a_stemmer_keeps_its_words_whole():
    assert words("sw", "Watoto wanacheza Mpira") == ["watoto", "wanacheza", "mpira"]


def test_chinese_and_japanese_are_read_as_character_pairs_with_latin_words_whole():
    assert words("zh", "北京是首都") == ["北京", "京是", "是首", "首都"]
    assert words("ja", "iPhone発売") == ["iphone", "発売"]
    assert words("zh", "京") == ["京"]


def test_thai_is_read_as_character_pairs():
    assert words("th", "ไทย") == ["ไท", "ทย"]


def test_hindi_words_keep_their_vowel_signs_and_common_words_go():
    # Python's \w leaves vowel signs out: "राजधानी" would fall apart into "र", "जध", "न".
    assert words("hi", "भारत की राजधानी है") == ["भारत", "राजधानी"]


def test_arabic_diacritics_and_tatweel_do_not_change_a_word():
    assert words("ar", "كَتَبَ") == words("ar", "كتب") == words("ar", "كتـب")


GERMAN_PAGE = [
    "Der Bus wurde von der Stadt gekauft.",
    "Die neue Brücke wurde von der Gemeinde eröffnet.",
    "Im Mai erteilten die Behörden den neuen Impfstoffen die Zulassung.",
    "Das Wetter war am Wochenende schön.",
]
GERMAN_CLAIM = "Der neue Impfstoff wurde von der Behörde zugelassen."


def test_a_german_claim_finds_its_german_sentence_among_distractors():
    best = select_passages(GERMAN_CLAIM, GERMAN_PAGE, top_k=1, context=0, language="de")

    assert [p.text for p in best] == [GERMAN_PAGE[2]]


def test_tokenised_as_english_the_german_claim_picks_a_sentence_that_shares_only_common_words():
    scores = rank_sentences(GERMAN_CLAIM, GERMAN_PAGE, None)  # today's ranker: English words

    assert scores.argmax() != 2


def test_a_chinese_claim_finds_its_sentence_and_english_tokens_find_none():
    page = ["上海是中国最大的城市。", "中国的首都是北京。", "长城很长。"]
    claim = "北京是中国的首都"

    assert rank_sentences(claim, Corpus(page, "zh"), None).argmax() == 1
    assert not rank_sentences(claim, page, None).any()  # each sentence one English "word"


def test_judged_text_reads_the_passages_words_in_its_language():
    passage = "长城很长。中国的首都是北京。上海很大。"
    highlights = [(5, 14)]

    assert judged_text("北京是中国的首都", passage, highlights, language="zh") == "中国的首都是北京。"


def test_the_snowball_stemmers_need_no_downloaded_data(monkeypatch):
    from nltk import data

    def absent(resource, *args, **kwargs):
        raise LookupError(f"Resource {resource} not found.")

    monkeypatch.setattr(data, "load", absent)
    monkeypatch.setattr(data, "find", absent)
    language_words._tokenizer.cache_clear()

    assert [words(code, "Zeitungen") for code in sorted(language_words.SNOWBALL)]
