"""Sentence splitting in the text's language (issue 36): tests/data/languages/split_<code>.txt
holds a text, a line of =====, then its sentences one per line; every sentence must come back
exactly, at its exact place in the text (the app shows sentences in place)."""

from pathlib import Path

import pytest

from verification.pipeline.passages import page_sentences
from verification.pipeline.segment import segment, split_sentences

DATA = Path(__file__).resolve().parents[1] / "data" / "languages"
CODES = ["de", "es", "fr", "zh", "ja", "ar", "hi", "th"]


def fixture(code: str) -> tuple[str, list[tuple[str, int, int]]]:
    text, expected = (DATA / f"split_{code}.txt").read_text(encoding="utf-8").split("\n=====\n")
    spans, at = [], 0
    for sentence in expected.strip().splitlines():
        start = text.index(sentence, at)
        spans.append((sentence, start, start + len(sentence)))
        at = start + len(sentence)
    return text.strip(), spans


@pytest.mark.parametrize("code", CODES)
def test_it_splits_each_language_into_its_sentences_at_their_exact_offsets(code):
    text, expected = fixture(code)

    found = [(s.text, s.start, s.end) for s in segment(text, code)]

    assert found == expected
    assert all(text[start:end] == sentence for sentence, start, end in found)


@pytest.mark.parametrize("code", ["zh", "ja", "ar", "hi", "th"])
def test_a_scripts_sentence_ends_hold_when_the_language_was_not_told(code):
    text, expected = fixture(code)

    assert [(s.text, s.start, s.end) for s in segment(text)] == expected


def test_german_abbreviations_and_ordinals_need_the_language():
    text, expected = fixture("de")

    as_english = [s.text for s in segment(text)]

    assert as_english != [sentence for sentence, _, _ in expected]  # "am 9." / "z.B." cut as English
    assert "Die Berliner Mauer fiel am 9." in as_english


def test_a_german_number_before_a_capital_that_is_no_month_still_ends_its_sentence():
    text = "Er kam auf Platz 3. Danach ging er nach Hause."

    assert [s.text for s in segment(text, "de")] == ["Er kam auf Platz 3.", "Danach ging er nach Hause."]


def test_the_arabic_comma_ends_no_sentence_and_urdu_full_stop_does():
    assert [s.text for s in segment("لاہور ایک بڑا شہر ہے۔ یہ پنجاب میں ہے۔", "ur")] == [
        "لاہور ایک بڑا شہر ہے۔",
        "یہ پنجاب میں ہے۔",
    ]
    assert len(segment("مصر بلد كبير، وعاصمتها القاهرة.", "ar")) == 1


def test_offsets_are_exact_inside_a_larger_text():
    text, expected = fixture("hi")
    spans = split_sentences("शीर्षक\n" + text, offset=100, language="hi")

    assert [(s.text, s.start, s.end) for s in spans][1:] == [(t, 107 + a, 107 + b) for t, a, b in expected]


def test_a_page_is_split_in_its_language():
    text, expected = fixture("de")

    assert page_sentences("Überschrift\n" + text, "de") == ["Überschrift", *(t for t, _, _ in expected)]


def test_splitting_in_another_language_is_the_same_with_or_without_nltk_data(monkeypatch):
    """NLTK's data, downloaded (here: a Punkt model that splits at every period) or not, changes
    nothing: segment.py never loads it."""
    from nltk import data
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    def present(resource, *args, **kwargs):
        return PunktSentenceTokenizer(PunktParameters())

    def absent(resource, *args, **kwargs):
        raise LookupError(f"Resource {resource} not found.")

    splits = {}
    for kind, load in (("present", present), ("absent", absent)):
        monkeypatch.setattr(data, "load", load)
        monkeypatch.setattr(data, "find", load)
        splits[kind] = [[(s.start, s.end) for s in segment(fixture(code)[0], code)] for code in CODES]

    assert splits["present"] == splits["absent"]
    assert [len(spans) for spans in splits["absent"]] == [len(fixture(code)[1]) for code in CODES]


def test_a_thai_clause_after_a_space_stays_in_its_sentence_and_a_thai_word_in_english_changes_nothing():
    assert [s.text for s in segment("ผมไปเที่ยวกับเพื่อน แต่ฝนตกหนักมาก", "th")] == ["ผมไปเที่ยวกับเพื่อน แต่ฝนตกหนักมาก"]
    assert [s.text for s in segment("The word ไทย means Thai. It is short.")] == [
        "The word ไทย means Thai.",
        "It is short.",
    ]
