"""The text's own citations (issue 34) through a run: the sentences checked come without markers
and reference lists, the citations are stored with their sentences, and the `citations` setting
is validated like the others."""

import pytest

from verification.models import Citation, Sentence, Verification

ANSWER = (
    "Riverton approved a tram line in 2024 [1]. The line will cost 40 million dollars [2][3].\n"
    "It opens in 2027.[4]\n\n"
    "Sources:\n"
    "[1] Riverton council minutes https://a.test/minutes\n"
    "[2] City paper https://b.test/cost\n"
    "[3] https://c.test/missing\n"
    "[4] https://dead.test/x\n"
)
PLAIN = "The Eiffel Tower is in Paris, France. It was completed in 1889."


def post(client, body):
    return client.post("/api/verifications", body, content_type="application/json")


@pytest.mark.django_db
def test_a_run_checks_the_sentences_without_their_markers_and_keeps_the_citations(client, configured):
    response = post(client, {"text": ANSWER})

    assert response.status_code == 201, response.content
    run = Verification.objects.get()
    sentences = list(Sentence.objects.filter(verification=run))
    assert [s.text for s in sentences] == [
        "Riverton approved a tram line in 2024.",
        "The line will cost 40 million dollars.",
        "It opens in 2027.",
    ]
    assert [ANSWER[s.start : s.end] for s in sentences][0] == "Riverton approved a tram line in 2024 [1]."
    citations = list(Citation.objects.filter(verification=run))
    assert [(c.marker, c.sentence.index, c.url, c.start, c.end) for c in citations] == [
        ("[1]", 0, "https://a.test/minutes", ANSWER.index("[1]"), ANSWER.index("[1]") + 3),
        ("[2]", 1, "https://b.test/cost", ANSWER.index("[2]"), ANSWER.index("[2]") + 3),
        ("[3]", 1, "https://c.test/missing", ANSWER.index("[3]"), ANSWER.index("[3]") + 3),
        ("[4]", 2, "https://dead.test/x", ANSWER.index("[4]"), ANSWER.index("[4]") + 3),
    ]
    assert citations[0].title == "Riverton council minutes"
    assert run.settings["citations"] == "also_search"


@pytest.mark.django_db
def test_a_text_without_citations_is_split_as_before_and_stores_none(client, configured):
    from verification.pipeline import segment

    assert post(client, {"text": PLAIN}).status_code == 201

    run = Verification.objects.get()
    assert [(s.text, s.start, s.end) for s in run.sentences.all()] == [
        (s.text, s.start, s.end) for s in segment.segment(PLAIN)
    ]
    assert not Citation.objects.exists()


@pytest.mark.django_db
def test_a_marker_pointing_nowhere_is_kept_with_why(client, configured):
    assert post(client, {"text": "Trams are quiet [9].\n\nSources:\n[1] https://a.test/x\n"}).status_code == 201

    citation = Citation.objects.get()
    assert (citation.marker, citation.url) == ("[9]", "")
    assert citation.unresolved == "no entry 9 in the reference list (1 entries)"


@pytest.mark.django_db
def test_cited_addresses_beyond_the_cap_are_marked(client, configured, settings):
    settings.MAX_CITED_SOURCES = 2
    text = (
        "".join(f"Fact number {n} holds.[{n}] " for n in range(1, 5))
        + "\n\nSources:\n"
        + "".join(f"[{n}] https://site{n}.test/page\n" for n in range(1, 5))
    )
    assert post(client, {"text": text}).status_code == 201

    left_out = dict(Citation.objects.values_list("marker", "left_out"))
    assert left_out["[1]"] == left_out["[2]"] == ""
    assert left_out["[3]"] == left_out["[4]"] == "not read: a run reads at most 2 cited addresses (MAX_CITED_SOURCES)"


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["also_search", "only"])
def test_the_citations_setting_is_kept(client, configured, mode):
    assert post(client, {"text": ANSWER, "settings": {"citations": mode}}).status_code == 201

    assert Verification.objects.get().settings["citations"] == mode


@pytest.mark.django_db
def test_an_unknown_citations_setting_is_refused(client, configured):
    response = post(client, {"text": ANSWER, "settings": {"citations": "never"}})

    assert response.status_code == 400
    assert "citations" in response.json()["detail"]
    assert not Verification.objects.exists()
