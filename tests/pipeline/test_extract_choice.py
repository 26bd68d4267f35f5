import pytest

from verification.pipeline.extract_choice import Choice, Line, choose

ARTICLE = [
    Line("Wildfire smoke reaches the coast"),
    Line("Smoke from wildfires in the mountains reached the coast on Tuesday, and air quality alerts were issued."),
    Line("The state's environmental agency said fine particle levels were four times the federal limit in two cities."),
    Line(
        "Schools in the affected districts kept pupils indoors during breaks, and outdoor sports events were cancelled."
    ),
    Line("Firefighters expect cooler weather at the weekend to help them contain the largest of the three fires."),
]
MORE = [
    Line("The largest fire has burned more than 40,000 acres since it started from a downed power line on August 2."),
    Line("About 1,200 people remain under evacuation orders in three counties, according to the county sheriffs."),
    Line("Officials have not said when residents of the evacuated areas will be allowed to return to their homes."),
]
TEASERS = [
    Line("More from Weather"),
    Line("Heat wave to break by Friday"),
    Line("Forecasters see relief ahead"),
    Line("Storm season outlook"),
    Line("What the models say"),
]
TABLE = [Line("City", quoted=True), Line("PM2.5", quoted=True), Line("Ashford", quoted=True), Line("142", quoted=True)]
CAPTIONS = [Line("Photo: Jane Doe, AP"), Line("Photo: Jane Doe, AP")]


@pytest.mark.parametrize(
    ("trafilatura", "readability", "expected"),
    [
        (ARTICLE, ARTICLE, Choice.TRAFILATURA),
        (ARTICLE, [], Choice.TRAFILATURA),
        ([], ARTICLE, Choice.READABILITY_ALONE),
        (ARTICLE[:2], ARTICLE + MORE, Choice.READABILITY_FOR_FRAGMENT),
        (ARTICLE + MORE, ARTICLE[:2], Choice.TRAFILATURA),
        (ARTICLE + TEASERS, ARTICLE, Choice.READABILITY_FOR_CHROME),
        (ARTICLE + TABLE, ARTICLE, Choice.TRAFILATURA),
        (ARTICLE, ARTICLE + CAPTIONS, Choice.TRAFILATURA),
        (ARTICLE, [*ARTICLE[:3], ARTICLE[2], *ARTICLE[3:]], Choice.READABILITY_FOR_REPEATS),
        (ARTICLE + CAPTIONS[:1], ARTICLE + CAPTIONS * 3, Choice.TRAFILATURA),
    ],
    ids=[
        "same-reading",
        "readability-read-nothing",
        "trafilatura-read-nothing",
        "trafilatura-read-a-fragment",
        "readability-read-a-fragment",
        "trafilatura-kept-teasers",
        "trafilatura-kept-a-table-readability-dropped",
        "readability-kept-captions",
        "trafilatura-dropped-a-repeated-paragraph",
        "a-repeated-caption-is-not-a-paragraph",
    ],
)
def test_it_keeps_the_better_reading(trafilatura, readability, expected):
    assert choose(trafilatura, readability) is expected


def test_a_line_that_repeats_the_pages_title_is_neither_readings_gain():
    headline = Line("Smoke from mountain wildfires reaches the coast, prompting air quality alerts")

    assert choose([headline, *ARTICLE], ARTICLE) is Choice.READABILITY_FOR_CHROME
    assert choose([headline, *ARTICLE], ARTICLE, known=[headline.text]) is Choice.TRAFILATURA


def test_a_paragraph_split_in_two_lines_counts_as_found():
    first, second = ARTICLE[1].text.split(", and ")

    split = [ARTICLE[0], Line(first + ","), Line("and " + second), *ARTICLE[2:]]

    assert choose(ARTICLE + TEASERS, split) is Choice.READABILITY_FOR_CHROME
    assert choose(split, ARTICLE) is Choice.TRAFILATURA
