import time

import pytest

from verification.pipeline.segment import (
    CONTEXT_BUDGET_CHARS,
    MAX_SENTENCE_CHARS,
    PIECE_CHARS,
    segment,
    split_sentences,
)


def texts(text: str) -> list[str]:
    return [s.text for s in segment(text)]


ERAS_AND_TITLES = [
    ("The Colosseum opened in 80 A.D. under Titus. It held 50,000.", 2),
    ("Rome was founded in 753 B.C. by Romulus, legend says. It grew.", 2),
    ("In A.D. 79 Vesuvius erupted. Pompeii was buried.", 2),
    ("The Pantheon was rebuilt c. 126 A.D. by Hadrian. It still stands.", 2),
    ("The wall dates from 122 C.E. (under Hadrian). It is long.", 2),
    ("Caesar was born in 100 B.C.E. in Rome. He died in 44 B.C.E. in the Senate.", 2),
    ("Tools, e.g. Python, help. The U.S. Congress met. Dr. Smith spoke.", 3),
    ("She worked as an R.N. for ten years. Then she retired.", 2),
]


@pytest.mark.parametrize(("text", "sentences"), ERAS_AND_TITLES)
def test_eras_titles_and_initialisms_stay_inside_their_sentence(text, sentences):
    found = texts(text)

    assert len(found) == sentences, found
    assert all(len(sentence.split()) > 1 for sentence in found), found  # no "A.D." or "c." on its own


@pytest.fixture
def nltk_data(monkeypatch):
    """Stands in for NLTK's downloaded data: `present` hands out a Punkt model that splits at
    every period (as a differently trained one might), `absent` raises as on a fresh machine."""
    from nltk import data
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    def present(resource, *args, **kwargs):
        return PunktSentenceTokenizer(PunktParameters())

    def absent(resource, *args, **kwargs):
        raise LookupError(f"Resource {resource} not found.")

    def use(kind):
        monkeypatch.setattr(data, "load", present if kind == "present" else absent)
        monkeypatch.setattr(data, "find", present if kind == "present" else absent)

    return use


def test_segmentation_is_the_same_with_or_without_nltk_data(nltk_data):
    text = "\n\n".join(t for t, _ in ERAS_AND_TITLES)
    nltk_data("absent")
    without = [(s.start, s.end) for s in segment(text)]
    nltk_data("present")
    with_data = [(s.start, s.end) for s in segment(text)]

    assert with_data == without and len(without) == sum(n for _, n in ERAS_AND_TITLES)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The U.S. economy grew. It was fast.", ["The U.S. economy grew.", "It was fast."]),
        ("Dr. Smith arrived. He sat down.", ["Dr. Smith arrived.", "He sat down."]),
        ("Gen. Lee won. He left.", ["Gen. Lee won.", "He left."]),
        ("Call me at 5 p.m. tomorrow. OK.", ["Call me at 5 p.m. tomorrow.", "OK."]),
        ("Fruit, e.g. apples, is healthy. Eat it.", ["Fruit, e.g. apples, is healthy.", "Eat it."]),
        ("It costs 3.5 dollars. Fine.", ["It costs 3.5 dollars.", "Fine."]),
    ],
)
def test_it_keeps_abbreviations_and_decimals_in_one_sentence(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "This improves accuracy.I hope this helps!",
            ["This improves accuracy.", "I hope this helps!"],
        ),
        ("It rained a lot!Then it stopped.", ["It rained a lot!", "Then it stopped."]),
        ("Done in 2020.Next year too.", ["Done in 2020.", "Next year too."]),
        ("Use a language, e.g.Python here.", ["Use a language, e.g.Python here."]),
    ],
)
def test_it_splits_glued_sentences_but_not_after_an_abbreviation(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("line one\nline two", ["line one", "line two"]),
        ("A heading\nThe body follows here.", ["A heading", "The body follows here."]),
        ("First line\r\nSecond line.", ["First line", "Second line."]),
    ],
)
def test_it_always_splits_at_a_newline(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "1. The tower is tall.\n2. It is old.",
            ["1. The tower is tall.", "2. It is old."],
        ),
        ("Steps: 1. Mix. 2. Bake.", ["Steps:", "1. Mix.", "2. Bake."]),
        ("- Alpha is a letter.\n- Beta too.", ["- Alpha is a letter.", "- Beta too."]),
        ("a) The tower. b) The bridge.", ["a) The tower.", "b) The bridge."]),
    ],
)
def test_it_keeps_a_list_marker_with_the_text_after_it(text, expected):
    assert texts(text) == expected


# LLM answers glue a list's numbers to the item before ("…Apple Inc.2. Microsoft…"): the number
# was left at the end of that item, and shown there on the result page (issue 27.11).
GLUED_LIST_NUMBERS = [
    (
        "The largest companies are:1. Apple Inc.2. Microsoft Corp.3. Alphabet Inc.",
        ["The largest companies are:", "1. Apple Inc.", "2. Microsoft Corp.", "3. Alphabet Inc."],
    ),
    (
        "Here are three:\n1. Apple Inc.2. Microsoft is big.3. Nvidia leads.",
        ["Here are three:", "1. Apple Inc.", "2. Microsoft is big.", "3. Nvidia leads."],
    ),
    (
        "The founders include:1. Steve Jobs.2. Steve Wozniak.",
        ["The founders include:", "1. Steve Jobs.", "2. Steve Wozniak."],
    ),
    ("He lived in the U.S.2. Then he moved.", ["He lived in the U.S.", "2. Then he moved."]),
    ("Top firms: 1. Apple Inc. 2. Microsoft.", ["Top firms:", "1. Apple Inc.", "2. Microsoft."]),
]


@pytest.mark.parametrize(("text", "expected"), GLUED_LIST_NUMBERS)
def test_a_list_number_glued_to_the_item_before_goes_with_the_item_after(text, expected):
    found = segment(text)

    assert [s.text for s in found] == expected
    assert all(text[s.start : s.end] == s.text for s in found)  # offsets still point at the text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A decimal or a year before a sentence end is not a list number.
        ("The value is 3.2. It rose.", ["The value is 3.2.", "It rose."]),
        ("It opened in 1999. It still stands.", ["It opened in 1999.", "It still stands."]),
        # Nothing after it on the line: it stays where it is.
        ("The last one is Apple Inc.2.", ["The last one is Apple Inc.2."]),
        ("The first is Apple Inc.2.\nThe list ends.", ["The first is Apple Inc.2.", "The list ends."]),
    ],
)
def test_a_number_that_numbers_nothing_after_it_stays(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "  Leading spaces. And more.  ",
        "Para one. Second sentence.\n\nPara two here.",
        "Intro text.\n1. The tower is tall.\n2. It is old.",
        "First line\r\nSecond line.\r\n",
        "Steps: 1. Mix. 2. Bake.",
        "This improves accuracy.I hope this helps!",
        ("word " * 400).strip(),
    ],
)
def test_its_offsets_point_at_the_sentence_in_the_original_text(text):
    sentences = segment(text)
    assert sentences
    for sentence in sentences:
        assert text[sentence.start : sentence.end] == sentence.text


def test_split_sentences_adds_the_offset_to_its_spans():
    spans = split_sentences("Hello there. Bye now.", offset=100)

    assert [(s.text, s.start, s.end) for s in spans] == [
        ("Hello there.", 100, 112),
        ("Bye now.", 113, 121),
    ]


def test_it_gives_each_paragraph_its_own_index_and_context():
    text = "Para one. Second sentence.\n\nPara two here.\n \t\nPara three."

    sentences = segment(text)

    assert [s.index for s in sentences] == [0, 1, 2, 3]
    assert [s.paragraph_index for s in sentences] == [0, 0, 1, 2]
    assert [s.context for s in sentences] == [
        ("Para one.", "Second sentence."),
        ("Para one.", "Second sentence."),
        ("Para two here.",),
        ("Para three.",),
    ]
    assert [s.position_in_context for s in sentences] == [0, 1, 0, 0]


@pytest.mark.parametrize("text", ["", "   \n\n  ", "***\n\n---"])
def test_it_returns_nothing_for_text_without_words(text):
    assert segment(text) == []


def test_it_drops_punctuation_only_lines_but_keeps_counting_paragraphs():
    sentences = segment("Hello there.\n\n***\n\nReal sentence.")

    assert [(s.text, s.paragraph_index) for s in sentences] == [
        ("Hello there.", 0),
        ("Real sentence.", 2),
    ]


def test_it_cuts_a_wall_of_words_at_a_space():
    text = ("word " * 400).strip()

    sentences = segment(text)

    assert len(sentences) == 2
    assert all(len(s.text) <= MAX_SENTENCE_CHARS for s in sentences)
    assert all(not s.text.endswith(" ") and s.text.endswith("word") for s in sentences)
    assert " ".join(s.text for s in sentences) == text


def test_it_cuts_a_wall_without_spaces_at_the_limit():
    sentences = segment("x" * (MAX_SENTENCE_CHARS + 100))

    assert [len(s.text) for s in sentences] == [MAX_SENTENCE_CHARS, 100]


def test_it_chunks_a_long_paragraph_to_the_context_budget():
    sentence = "The quick brown fox jumps over the lazy dog near the river bank today."
    paragraph = " ".join([sentence] * 60)

    sentences = segment(paragraph)

    assert len(sentences) == 60
    contexts = list(dict.fromkeys(s.context for s in sentences))
    assert len(contexts) == 2
    assert all(len(" ".join(context)) <= CONTEXT_BUDGET_CHARS for context in contexts)
    assert sum(len(context) for context in contexts) == 60
    for s in sentences:
        assert s.context[s.position_in_context] == s.text
        assert s.paragraph_index == 0
    second_chunk_start = len(contexts[0])
    assert sentences[second_chunk_start].position_in_context == 0


@pytest.mark.parametrize("separator", ["\r\n\r\n", "  \n\n", "\n \t\n"])
def test_blank_lines_with_carriage_returns_or_spaces_separate_paragraphs(separator):
    sentences = segment(f"Para one is here.{separator}Para two is here.")

    assert [(s.paragraph_index, s.text) for s in sentences] == [(0, "Para one is here."), (1, "Para two is here.")]


def test_repeated_exclamation_marks_stay_with_their_sentence():
    text = "That is amazing!!! The tower is tall."

    assert [s.text for s in segment(text)] == ["That is amazing!!!", "The tower is tall."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("第一句。第二句。", ["第一句。", "第二句。"]),
        ("今天很热。明天会下雨。后天呢？", ["今天很热。", "明天会下雨。", "后天呢？"]),
        ("这是第一句。   ", ["这是第一句。"]),
        ("（见上文。）下一句。", ["（见上文。）", "下一句。"]),
    ],
)
def test_it_splits_chinese_sentences_without_spaces(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今日は晴れです。明日は雨です。", ["今日は晴れです。", "明日は雨です。"]),
        ("ﾃｽﾄです｡次の文です｡", ["ﾃｽﾄです｡", "次の文です｡"]),
        ("価格は上がった．次の文です．", ["価格は上がった．", "次の文です．"]),
        ("「こんにちは。」と彼は言った。今日は晴れ。", ["「こんにちは。」と彼は言った。", "今日は晴れ。"]),
        ("彼は「行こう！」って言った。", ["彼は「行こう！」って言った。"]),
    ],
)
def test_it_splits_japanese_sentences_but_not_inside_a_quotation(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("真的吗？是的！我们走吧。", ["真的吗？", "是的！", "我们走吧。"]),
        ("真的吗？！是的！！", ["真的吗？！", "是的！！"]),
        ("本当？嘘！", ["本当？", "嘘！"]),
    ],
)
def test_it_splits_after_full_width_exclamation_and_question_marks(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("他说：“走吧。”然后离开了。", ["他说：“走吧。”", "然后离开了。"]),
        ("「終わり。」『次。』", ["「終わり。」", "『次。』"]),
        ("他问：“为什么？”我没回答。", ["他问：“为什么？”", "我没回答。"]),
    ],
)
def test_closing_quotes_after_a_cjk_sentence_end_stay_with_their_sentence(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("He left. 他走了。她来了。", ["He left.", "他走了。", "她来了。"]),
        ("这是第一句。 This is English. 第三句？", ["这是第一句。", "This is English.", "第三句？"]),
        ("我去了美国。U.S. is big.", ["我去了美国。", "U.S. is big."]),
        ("他在U.S.工作。价格是3.5元。", ["他在U.S.工作。", "价格是3.5元。"]),
        ("He said hi.你好。", ["He said hi.", "你好。"]),
        ("例如e.g.中文很好。", ["例如e.g.中文很好。"]),
        ("步骤：1.首先打开。2.然后关闭。", ["步骤：1.首先打开。", "2.然后关闭。"]),
        ("価格は３．５円です．Ｕ．Ｓ．の話。", ["価格は３．５円です．", "Ｕ．Ｓ．の話。"]),
    ],
)
def test_it_splits_mixed_latin_and_cjk_text_but_not_at_decimals_or_abbreviations(text, expected):
    assert texts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "第一句。第二句。\n\n第三段。",
        "  He left. 他走了。她来了。  ",
        "他说：“走吧。”然后离开了。\r\n「こんにちは。」と彼は言った。",
        "真的吗？！是的！！",
        "我去了美国。U.S. is big.",
    ],
)
def test_its_offsets_point_at_the_cjk_sentence_in_the_original_text(text):
    sentences = segment(text)
    assert sentences
    for sentence in sentences:
        assert text[sentence.start : sentence.end] == sentence.text


def test_it_chunks_a_long_chinese_paragraph_to_the_context_budget():
    expected = [f"第{i}座塔建于一八八九年，是为了世界博览会而建造的，如今每年吸引数百万游客。" for i in range(150)]
    paragraph = "".join(expected)

    sentences = segment(paragraph)

    assert [s.text for s in sentences] == expected
    contexts = list(dict.fromkeys(s.context for s in sentences))
    assert len(contexts) >= 2
    assert all(len(" ".join(context)) <= CONTEXT_BUDGET_CHARS for context in contexts)
    assert sum(len(context) for context in contexts) == len(expected)
    for s in sentences:
        assert s.context[s.position_in_context] == s.text
        assert s.paragraph_index == 0
        assert paragraph[s.start : s.end] == s.text


# Sentences as a long source has them: abbreviations, decimals and initialisms that Punkt must not
# end a sentence at, so a piece cut in the wrong place would show.
PROSE = [
    "The tower was built in 1889 by Gustave Eiffel for the World's Fair.",
    "Dr. Smith measured it at 330 m, i.e. about 1,083 ft, in the U.S. survey.",
    "It was the tallest structure in the world until 1930!",
    "Why did it stay?",
    "Its radio antennas, e.g. those of the French army, made it useful.",
    "Visitors arrive at 9 a.m. every day and leave by 11 p.m. at the latest.",
]


def prose(paragraphs: int, separator: str) -> tuple[str, list[list[str]]]:
    groups = [[PROSE[(i + j) % len(PROSE)] for j in range(2 + i % 5)] for i in range(paragraphs)]
    return separator.join(" ".join(group) for group in groups), groups


@pytest.fixture
def guard(monkeypatch):
    """NLTK's ReDoS guard at 1 s instead of 5: a busy worker's share of it (the clock is the
    process's CPU time, other threads' included), and what a 2 MB line used to take (issue 38)."""
    from nltk import redos

    monkeypatch.setattr(redos, "DEFAULT_TIMEOUT", 1.0)


@pytest.mark.parametrize("separator", ["\n\n", "\n"])
def test_a_text_longer_than_a_piece_gives_the_sentences_of_each_line(guard, separator):
    text, groups = prose(1000, separator)
    assert len(text) > 5 * PIECE_CHARS

    sentences = segment(text)

    assert [s.text for s in sentences] == [sentence for group in groups for sentence in group]
    paragraphs = [i if separator == "\n\n" else 0 for i, group in enumerate(groups) for _ in group]
    assert [s.paragraph_index for s in sentences] == paragraphs
    assert [s.index for s in sentences] == list(range(len(sentences)))
    assert all(text[s.start : s.end] == s.text for s in sentences)


def test_a_long_line_is_cut_between_sentences_only(guard):
    text, groups = prose(1000, " ")
    assert "\n" not in text and len(text) > 5 * PIECE_CHARS

    sentences = segment(text)

    assert [s.text for s in sentences] == [sentence for group in groups for sentence in group]
    assert all(text[s.start : s.end] == s.text for s in sentences)
    assert all(s.context[s.position_in_context] == s.text for s in sentences)


@pytest.mark.parametrize("separator", ["\n\n", "\n", " "])
def test_two_megabytes_segment_inside_nltks_redos_guard(guard, separator):
    """A 2 MB line ran as one Punkt scan: 2 s of CPU quiet, TimeoutError under the guard on a busy
    worker. In pieces each scan is a few milliseconds, whatever the size."""
    sample, _ = prose(1000, separator)
    text, groups = prose(2_000_000 * 1000 // len(sample) + 10, separator)
    assert len(text) >= 2_000_000

    sentences = segment(text)

    assert len(sentences) == sum(map(len, groups))
    assert all(text[s.start : s.end] == s.text for s in sentences)


def test_a_run_of_glued_abbreviations_takes_linear_time():
    """Each "e.g.Word" read back to the last cut for the word before it: 20 KB took 1.6 s."""
    text = "e.g.Python " * 20_000

    started = time.process_time()
    sentences = segment(text)

    assert time.process_time() - started < 3
    assert all(text[s.start : s.end] == s.text for s in sentences)
    assert "".join(s.text for s in sentences).replace(" ", "") == text.replace(" ", "")
