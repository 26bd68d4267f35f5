"""Try an example (issue 17.5): the landing page links texts of ours that fill the text box with
a plain page load (no JavaScript), each a short answer with a known mix of true and false
statements."""

import pytest

from tests.test_views import get, make_run, one, parse, textarea_value
from verification.inputs.forms import DEFAULT_SETTINGS
from verification.pipeline.segment import segment
from verification.web.examples import EXAMPLES

pytestmark = pytest.mark.django_db


def test_the_home_page_links_each_example(client, configured):
    doc = parse(get(client, "/"))

    links = one(doc, "form.verify-form #examples").cssselect("a")
    assert [(a.get("href"), a.text_content()) for a in links] == [
        (f"/?example={n}", example.title) for n, example in enumerate(EXAMPLES, 1)
    ]
    assert not textarea_value(one(doc, "textarea[name=text]"))


@pytest.mark.parametrize("number", range(1, len(EXAMPLES) + 1))
def test_an_example_link_fills_the_text_box_and_keeps_the_defaults(client, configured, number):
    doc = parse(get(client, "/", example=str(number)))

    assert textarea_value(one(doc, "textarea[name=text]")) == EXAMPLES[number - 1].text
    assert one(doc, "input[name=top_k_results]").get("value") == str(DEFAULT_SETTINGS["top_k_results"])


@pytest.mark.parametrize("number", ["0", str(len(EXAMPLES) + 1), "x", "", "01", "１", "-1"])
def test_an_unknown_example_shows_the_empty_form(client, configured, number):
    response = get(client, "/", example=number)

    assert response.status_code == 200
    assert not textarea_value(one(parse(response), "textarea[name=text]"))


def test_an_edit_link_fills_the_box_with_its_own_text_not_an_example(client, configured):
    run = make_run("The Moon orbits the Earth.")

    doc = parse(get(client, "/", edit=str(run.pk), example="1"))

    assert textarea_value(one(doc, "textarea[name=text]")) == run.text


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.title)
def test_each_example_is_a_short_answer_of_several_sentences(example):
    sentences = segment(example.text)

    assert 5 <= len(sentences) <= 6
    assert len(example.text) < 600
