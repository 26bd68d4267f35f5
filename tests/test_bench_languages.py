"""bench/languages.py keeps working (its numbers are read by people): on a tiny set in XFEVER's
layout, written here, it ranks every language and writes its table and JSON."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CLAIMS = {
    "en": [
        ("Berlin is the capital of Germany.", "Berlin is the capital of Germany. It has 3.7 million people."),
        ("The Nile flows into the Mediterranean.", "The Nile is a river in Africa. It flows into the Mediterranean."),
        ("Tokyo hosted the 1964 Olympics.", "The 1964 Olympics were held in Tokyo. They were the first in Asia."),
    ],
    "es": [
        ("Berlín es la capital de Alemania.", "Berlín es la capital de Alemania. Tiene 3,7 millones de habitantes."),
        ("El Nilo desemboca en el Mediterráneo.", "El Nilo es un río de África. Desemboca en el mar Mediterráneo."),
        ("Tokio organizó los Juegos de 1964.", "Los Juegos de 1964 fueron en Tokio. Fueron los primeros en Asia."),
    ],
    "zh": [
        ("柏林是德国的首都。", "柏林是德国的首都和最大城市。它有三百七十万人口。"),
        ("尼罗河流入地中海。", "尼罗河是非洲的一条河流。它流入地中海。"),
        ("东京举办了1964年奥运会。", "1964年夏季奥运会在东京举行。这是亚洲的第一次。"),
    ],
}


def test_the_languages_benchmark_ranks_each_language_and_writes_its_results(tmp_path):
    for language, rows in CLAIMS.items():
        (tmp_path / language).mkdir()
        lines = [
            json.dumps({"id": str(i), "claim": claim, "evidence": evidence, "label": "SUPPORTS"}, ensure_ascii=False)
            for i, (claim, evidence) in enumerate(rows)
        ]
        (tmp_path / language / "dev.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, md = tmp_path / "languages.json", tmp_path / "languages.md"

    done = subprocess.run(
        [sys.executable, "bench/languages.py", "--data", str(tmp_path), "--languages", "en,es,zh"]
        + ["--claims", "3", "--distractors", "2", "--multilingual-model", "", "--json", str(out), "--md", str(md)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    rows = {row["language"]: row for row in result["rows"]}
    assert list(rows) == ["en", "es", "zh"] and all(row["claims"] == 3 for row in rows.values())
    # Each claim shares words with its own evidence alone: ranked in its language, it comes first.
    assert all(row["bm25_language"]["mrr"] == 1.0 for row in rows.values())
    # Chinese tokenised as English is one "word" a sentence: nothing is found by its words.
    assert rows["zh"]["bm25_english"]["mrr"] < 1.0
    assert rows["zh"]["sentences"] == 6 and rows["zh"]["tokens_per_sentence"] > 0
    assert md.read_text() in done.stdout and "| zh | 3 |" in md.read_text()


def test_it_counts_tokens_per_sentence_of_answers_without_a_data_set(tmp_path):
    answers = {
        "de": "Die Mauer fiel am 9. November 1989. Das war z.B. für Familien ein Wendepunkt. Danke!",
        "hi": "भारत एक विशाल देश है। इसकी राजधानी नई दिल्ली है।",
        "zh": "北京是中国的首都。它有两千多万人口！",
    }
    for code, text in answers.items():
        (tmp_path / f"answer_{code}.txt").write_text(text, encoding="utf-8")
    out = tmp_path / "answers.json"

    done = subprocess.run(
        [sys.executable, "bench/languages.py", "--answers", str(tmp_path), "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    rows = {row["language"]: row for row in json.loads(out.read_text())["answers"]}
    # Split in their language: German's ordinal and "z.B." inside their sentence, Hindi at its danda.
    assert {code: row["sentences"] for code, row in rows.items()} == {"de": 3, "hi": 2, "zh": 2}
    assert rows["zh"]["tokens_per_sentence"] == 2.0  # both sentences: 9 characters // 4


# A paragraph in XQuAD's (SQuAD v1.1) layout, in English and in Chinese: three questions, each
# answered in a different sentence; ids parallel across languages.
XQUAD = {
    "en": (
        "The Rhine rises in the Swiss Alps. It flows north through Germany. "
        "It reaches the North Sea in the Netherlands.",
        [
            ("q1", "Where does the Rhine rise?", "Swiss Alps"),
            ("q2", "Which country does the river flow north through?", "Germany"),
            ("q3", "Which sea does it reach in the Netherlands?", "North Sea"),
        ],
    ),
    "zh": (
        "莱茵河发源于瑞士阿尔卑斯山。它向北流经德国。它在荷兰注入北海。",
        [
            ("q1", "莱茵河发源于哪里？", "瑞士阿尔卑斯山"),
            ("q2", "河流向北流经哪个国家？", "德国"),
            ("q3", "它在荷兰注入哪个海？", "北海"),
        ],
    ),
}


def test_xquad_mode_ranks_each_question_s_paragraph_per_language(tmp_path):
    for language, (context, questions) in XQUAD.items():
        qas = [
            {"id": i, "question": q, "answers": [{"text": a, "answer_start": context.index(a)}]}
            for i, q, a in questions
        ]
        data = {"version": "1.1", "data": [{"title": "Rhine", "paragraphs": [{"context": context, "qas": qas}]}]}
        (tmp_path / f"xquad.{language}.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    out, md = tmp_path / "xquad.json", tmp_path / "xquad.md"

    done = subprocess.run(
        [sys.executable, "bench/languages.py", "--xquad", str(tmp_path), "--multilingual-model", ""]
        + ["--json", str(out), "--md", str(md)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    rows = {row["language"]: row for row in result["rows"]}
    assert list(rows) == ["en", "zh"] and result["set"] == "XQuAD"
    for row in rows.values():
        assert row["questions"] == 3 and row["questions_without_gold"] == 0
        # Each paragraph split into its three sentences, in its own language (。 ends a Chinese one).
        assert row["sentences_per_paragraph"] == 3 and row["one_sentence_paragraphs"] == 0
        for method in ("bm25_language", "bm25_english", "paragraph_order"):
            assert 0 <= row[method]["recall@1"] <= row[method]["recall@3"] <= 1
            assert 1 / 3 <= row[method]["mrr"] <= 1
        # In page order each answer's sentence comes at its place: ranks 1, 2, 3.
        assert row["paragraph_order"]["mrr"] == round((1 + 1 / 2 + 1 / 3) / 3, 3)
    # Every question shares words with its answer's sentence alone: ranked in its language, first.
    assert rows["en"]["bm25_language"]["recall@1"] == rows["zh"]["bm25_language"]["recall@1"] == 1.0
    # Chinese tokenised as English: a sentence is one "word" no question shares, so nothing beats
    # page order, and only the question answered in the first sentence gets its sentence first.
    assert rows["zh"]["bm25_english"]["recall@1"] == round(1 / 3, 3)
    assert rows["zh"]["bm25_english"]["mrr"] < rows["zh"]["bm25_language"]["mrr"]
    assert "| zh | 3 |" in md.read_text() and "could not be loaded" not in md.read_text()
