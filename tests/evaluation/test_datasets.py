"""Dataset readers: FavaBench's annotated spans land on the right characters of the output, and
every malformed file is refused with its file and line (or item) named. Offsets are counted by
hand in the comments; samples are written here, none is copied from a public dataset."""

import json

import pytest

from verification.evaluation.datasets import (
    DatasetError,
    ErrorSpan,
    FavaItem,
    SegmentsItem,
    StanceItem,
    load,
    parse_annotated,
)

# ---- parse_annotated ------------------------------------------------------------------------


def test_it_places_an_entity_error_on_the_deleted_words():
    output = "Messi is an Argentine soccer player."
    annotated = "Messi is an <entity><delete>Argentine</delete><mark>Brazilian</mark></entity> soccer player."
    # "Messi is an " is 12 characters; "Argentine" is 9 → [12, 21).
    assert parse_annotated(annotated, output) == (ErrorSpan(12, 21, "entity"),)
    assert output[12:21] == "Argentine"


def test_it_finds_spans_at_the_very_start_and_end():
    output = "Paris is in Germany. It has 3 million people."
    annotated = (
        "<invented><delete>Paris</delete></invented> is in Germany."
        "<relation><delete> It has 3 million people.</delete></relation>"
    )
    # "Paris" is [0, 5). "Paris is in Germany." is 20 characters, a space, then the 24 characters of
    # "It has 3 million people." from 21 to 45; the leading space is not part of the span.
    assert parse_annotated(annotated, output) == (ErrorSpan(0, 5, "invented"), ErrorSpan(21, 45, "relation"))


def test_it_keeps_adjacent_spans_apart():
    output = "She is an Argentine-born singer."
    annotated = (
        "She is an <entity><delete>Argentine</delete><mark>Chilean</mark></entity>"
        "<unverifiable><delete>-born</delete></unverifiable> singer."
    )
    # "She is an " is 10 characters; "Argentine" [10, 19); "-born" [19, 24).
    assert parse_annotated(annotated, output) == (ErrorSpan(10, 19, "entity"), ErrorSpan(19, 24, "unverifiable"))


def test_a_span_keeps_its_plain_words_and_drops_its_marks():
    output = "Rain fell. He never lost a game. It ended."
    annotated = (
        "Rain fell. <contradictory>He <delete>never</delete><mark>always</mark> lost a "
        "<delete>game</delete><mark>match</mark>.</contradictory> It ended."
    )
    # "Rain fell. " is 11 characters; "He never lost a game." is 21 → [11, 32).
    assert parse_annotated(annotated, output) == (ErrorSpan(11, 32, "contradictory"),)


def test_an_insertion_is_an_empty_span_before_the_words_after_it():
    output = "The film won awards."
    annotated = "The film <entity><mark>, released in 1990, </mark></entity>won awards."
    # The kept text is the output itself; the insertion sits before "won", at 9.
    assert parse_annotated(annotated, output) == (ErrorSpan(9, 9, "entity"),)


def test_an_insertion_at_the_end_sits_at_the_end_of_the_output():
    output = "He won."
    annotated = "He won.<invented><mark> He also sang.</mark></invented>"
    assert parse_annotated(annotated, output) == (ErrorSpan(7, 7, "invented"),)


def test_it_tolerates_whitespace_that_differs_from_the_output():
    output = "Line one.\nLine  two."
    annotated = "Line one. <subjective><delete>Line</delete></subjective> two."
    # "Line one." is 9 characters, the newline is at 9, the second "Line" at [10, 14).
    assert parse_annotated(annotated, output) == (ErrorSpan(10, 14, "subjective"),)


def test_it_reads_html_escaped_characters_as_the_output_has_them():
    output = "Tom & Jerry aired in 1940."
    annotated = "Tom &amp; Jerry aired in <entity><delete>1940</delete><mark>1941</mark></entity>."
    # "Tom & Jerry aired in " is 21 characters → "1940" at [21, 25).
    assert parse_annotated(annotated, output) == (ErrorSpan(21, 25, "entity"),)


def test_it_accepts_tags_with_stray_spaces_and_capitals():
    output = "Ada was born in 1815."
    annotated = "Ada was born in <Entity><delete>1815</delete><mark>1816</mark></entity >."
    assert parse_annotated(annotated, output) == (ErrorSpan(16, 20, "entity"),)


def test_it_aligns_a_copy_with_a_stray_character():
    output = "Ada Lovelace wrote the first published algorithm for a computing machine in the year 1843."
    annotated = (
        "Ada Lovelace wrote the first published algorithm for a computing machine in the year "
        "<entity><delete>1843</delete><mark>1842</mark></entity>.}"
    )
    # A one-character slip in 76 non-space characters is within the 2% allowed; "1843" is at [85, 89).
    assert parse_annotated(annotated, output) == (ErrorSpan(85, 89, "entity"),)
    assert output[85:89] == "1843"


@pytest.mark.parametrize(
    ("annotated", "message"),
    [
        ("Ada <foo>was</foo> born.", "unknown tag <foo> at character 4"),
        ("Ada <entity><delete>was</delete> born.", "<entity> at character 4 is never closed"),
        (
            "Ada <entity><delete>was</delete></relation> born.",
            "</relation> at character 32 closes nothing (<entity> is open)",
        ),
        ("Ada was born.</mark>", "</mark> at character 13 closes nothing (nothing is open)"),
        ("Bob was born in a barn near Oslo.", "is not the output"),
    ],
)
def test_it_refuses_annotations_it_cannot_read(annotated, message):
    with pytest.raises(DatasetError) as raised:
        parse_annotated(annotated, "Ada was born.")
    assert message in str(raised.value)


# ---- favabench files --------------------------------------------------------------------------


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


FAVA_ITEMS = [
    {
        "prompt": "Who is Ada?",
        "output": "Ada was born in 1815. She wrote notes.",
        "annotated": "Ada was born in <entity><delete>1815</delete><mark>1816</mark></entity>. She wrote notes.",
        "model": "chatgpt",
        "subject": "Ada Lovelace",
        "dataset": "wiki",
    },
    {"prompt": "Tell me.", "output": "Oslo is cold.", "annotated": "Oslo is cold.", "model": "llama"},
]


def test_it_loads_favabench_items_with_their_spans_and_stable_ids(tmp_path):
    path = write(tmp_path, "annotations.json", json.dumps(FAVA_ITEMS, indent=2))
    first, second = load("favabench", path)
    assert isinstance(first, FavaItem)
    assert (first.model, first.subject, first.dataset) == ("chatgpt", "Ada Lovelace", "wiki")
    assert first.errors == (ErrorSpan(16, 20, "entity"),)
    assert (second.subject, second.dataset, second.errors) == ("", "", ())
    assert first.id.startswith("fava-0001-") and second.id.startswith("fava-0002-")
    assert [item.id for item in load("favabench", path)] == [first.id, second.id]


def test_an_edited_item_gets_a_new_id(tmp_path):
    original = load("favabench", write(tmp_path, "a.json", json.dumps(FAVA_ITEMS)))
    edited = [FAVA_ITEMS[0], {**FAVA_ITEMS[1], "output": "Oslo is warm.", "annotated": "Oslo is warm."}]
    changed = load("favabench", write(tmp_path, "b.json", json.dumps(edited)))
    assert changed[0].id == original[0].id
    assert changed[1].id != original[1].id


def test_the_limit_stops_reading_before_a_broken_item(tmp_path):
    path = write(tmp_path, "annotations.json", json.dumps(FAVA_ITEMS)[:-1] + ", {broken")
    assert [item.model for item in load("favabench", path, limit=2)] == ["chatgpt", "llama"]
    with pytest.raises(DatasetError, match="item 3: not JSON"):
        load("favabench", path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[\n  {"output": "A.", "annotated": "A.", "model": "chatgpt"},\n  {"annotated": "B.", "model": "llama"}\n]',
            "annotations.json, item 2: 'output' is missing (line 3)",
        ),
        (
            '[\n  {"output": "A.", "annotated": "A.", "model": 7}\n]',
            "annotations.json, item 1: 'model' should be a string, not int (line 2)",
        ),
        ('[\n  "just text"\n]', "annotations.json, item 1: expected a JSON object, found str (line 2)"),
        (
            '[\n  {"output": "A.", "annotated": "A.", "model": "x"},\n  {"output": "A." "annotated": "A."}\n]',
            "annotations.json, item 2: not JSON (Expecting ',' delimiter) (line 3 column 19)",
        ),
        (
            '[\n  {"output": "A b.", "annotated": "A <bold>b</bold>.", "model": "x"}\n]',
            "annotations.json, item 1: unknown tag <bold> at character 2 (line 2)",
        ),
        (
            '[\n  {"output": "A.", "annotated": "A.", "model": "x"}\n  {"output": "B."}\n]',
            "annotations.json, line 3: expected ',' or ']' after item 1",
        ),
        ('{"output": "A."}', "annotations.json, line 1: expected a JSON list of items"),
        (
            '[{"output": "A.", "annotated": "A.", "model": "x"}]\n\n]',
            "annotations.json, line 3: text after the end of the list",
        ),
    ],
)
def test_a_malformed_favabench_file_names_the_item_and_line(tmp_path, text, message):
    with pytest.raises(DatasetError) as raised:
        load("favabench", write(tmp_path, "annotations.json", text))
    assert message in str(raised.value)


def test_an_empty_list_has_no_items(tmp_path):
    assert load("favabench", write(tmp_path, "annotations.json", " [ ]\n")) == []


def test_a_missing_file_or_unknown_dataset_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match="nothing.json: no such file"):
        load("favabench", tmp_path / "nothing.json")
    (tmp_path / "folder").mkdir()
    with pytest.raises(DatasetError, match="folder: not a file"):
        load("segments", tmp_path / "folder")
    with pytest.raises(DatasetError, match="unknown dataset 'fever'"):
        load("fever", write(tmp_path, "x.jsonl", ""))


def test_a_file_that_is_not_utf8_names_its_line(tmp_path):
    path = tmp_path / "stance.jsonl"
    path.write_bytes(b'{"claim": "a", "evidence": "b", "stance": "refute"}\n{"claim": "\xff"}\n')
    with pytest.raises(DatasetError, match=r"stance.jsonl, line 2: not UTF-8"):
        load("claim-stance", path)


# ---- JSON lines: claim-stance and segments ----------------------------------------------------


def test_it_loads_stances_skipping_blank_lines(tmp_path):
    lines = [
        {"claim": "Oslo is in Norway.", "evidence": "Oslo is Norway's capital.", "stance": "completely-support"},
        {"claim": "Oslo is warm.", "evidence": "Oslo has cold winters.", "stance": " Refute "},
    ]
    path = write(tmp_path, "stance.jsonl", json.dumps(lines[0]) + "\n\n" + json.dumps(lines[1]) + "\n")
    items = load("claim-stance", path)
    assert [item.stance for item in items] == ["completely-support", "refute"]
    assert isinstance(items[0], StanceItem)
    assert items[0].id.startswith("stance-0001-") and items[1].id.startswith("stance-0002-")
    assert len(load("claim-stance", path, limit=1)) == 1


@pytest.mark.parametrize(
    ("second_line", "message"),
    [
        ('{"claim": "a", "evidence": "b", "stance": "agree"}', "stance.jsonl, line 3: stance 'agree' is not one of"),
        ('{"claim": "a", "evidence": "b",}', "stance.jsonl, line 3: not JSON (Expecting property name"),
        ('{"evidence": "b", "stance": "refute"}', "stance.jsonl, line 3: 'claim' is missing"),
        ('["a", "b", "refute"]', "stance.jsonl, line 3: expected a JSON object, found list"),
    ],
)
def test_a_malformed_stance_line_is_named(tmp_path, second_line, message):
    good = '{"claim": "a", "evidence": "b", "stance": "irrelevant"}'
    # The blank line 2 does not shift the count: the bad record is on line 3.
    path = write(tmp_path, "stance.jsonl", f"{good}\n\n{second_line}\n")
    with pytest.raises(DatasetError) as raised:
        load("claim-stance", path)
    assert message in str(raised.value)


def test_it_loads_reference_segments(tmp_path):
    record = {"response": "It rained. We stayed in.", "segmented_response": ["It rained.", "We stayed in."]}
    (item,) = load("segments", write(tmp_path, "segments.jsonl", json.dumps(record) + "\n"))
    assert isinstance(item, SegmentsItem)
    assert item.segments == ("It rained.", "We stayed in.")
    assert item.id.startswith("segments-0001-")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"response": "A.", "segmented_response": "A."}',
            "segments.jsonl, line 2: 'segmented_response' should be a list of strings",
        ),
        (
            '{"response": "A.", "segmented_response": ["A.", 3]}',
            "segments.jsonl, line 2: 'segmented_response' should be a list",
        ),
        ('{"segmented_response": ["A."]}', "segments.jsonl, line 2: 'response' is missing"),
    ],
)
def test_a_malformed_segments_line_is_named(tmp_path, line, message):
    good = '{"response": "A.", "segmented_response": ["A."]}'
    with pytest.raises(DatasetError) as raised:
        load("segments", write(tmp_path, "segments.jsonl", f"{good}\n{line}\n"))
    assert message in str(raised.value)
