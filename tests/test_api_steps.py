"""The step endpoints refuse input they cannot work on with a 4xx that says why, before anything
outside is called (the fake LLM, search and sites on 127.0.0.1 count what they were asked)."""

import pytest

from tests.fakes import FakePage, FakeSite

SENTENCE = "The Eiffel Tower is in Paris, France."


def post(client, path, body):
    return client.post(path, body, content_type="application/json")


@pytest.fixture
def site():
    site = FakeSite(pages={"/eiffel": FakePage("Eiffel Tower", "The Eiffel Tower is in Paris, France. " * 5)}).start()
    yield site
    site.stop()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("not a url", "not a web address: 'not a url' (give an http:// or https:// URL"),
        ("{host}/eiffel", "not a web address"),
        ("//{host}/eiffel", "not a web address"),
        ("ftp://{host}/eiffel", "only http:// and https:// pages are fetched, not ftp://"),
        ("ftp://x", "only http:// and https:// pages are fetched, not ftp://"),
        ("javascript:alert(1)", "not a web address"),
        ("http://", "the URL 'http://' has no host name"),
        ("http://:8080/eiffel", "has no host name"),
        ("http://[::1", "not a valid URL (Invalid IPv6 URL)"),
        ("http://{host}9999/eiffel", "not a valid URL (Port out of range 0-65535)"),
        ("http://exa mple.org/", "the URL 'http://exa mple.org/' contains a space"),
    ],
)
def test_extract_refuses_what_is_not_a_web_address_with_400_and_fetches_nothing(client, settings, site, url, says):
    settings.ALLOW_PRIVATE_FETCH = True
    url = url.format(host=site.url.removeprefix("http://"))

    response = post(client, "/api/steps/extract", {"url": url})

    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert detail.startswith("Invalid request: url: "), detail
    assert says in detail
    assert not site.hits


@pytest.mark.django_db
def test_extract_still_fetches_a_web_address_in_capitals(client, settings, site):
    settings.ALLOW_PRIVATE_FETCH = True

    response = post(client, "/api/steps/extract", {"url": "HTTP://" + site.url.removeprefix("http://") + "/eiffel"})

    assert response.status_code == 200, response.content
    assert site.hits["/eiffel"] == 1


@pytest.mark.django_db
def test_decompose_refuses_more_context_sentences_than_the_limit(client, world):
    response = post(client, "/api/steps/decompose", {"sentence": SENTENCE, "context": ["Paris is big."] * 101})

    assert response.status_code == 400
    assert response.json()["detail"] == "Invalid request: context: 101 sentences; the limit is 100"
    assert not world.llm.calls


@pytest.mark.django_db
def test_decompose_refuses_a_context_longer_than_max_text_chars(client, world, settings):
    settings.MAX_TEXT_CHARS = 20_000

    # The request that became 512k prompt tokens: 2 MB of context.
    response = post(client, "/api/steps/decompose", {"sentence": SENTENCE, "context": ["x" * 100_000] * 20})

    assert response.status_code == 400
    assert response.json()["detail"] == (
        "Invalid request: context: 2,000,000 characters; the limit is 20,000 (MAX_TEXT_CHARS)"
    )
    assert not world.llm.calls


@pytest.mark.django_db
def test_decompose_accepts_a_context_exactly_at_both_limits(client, world, settings):
    context = [f"Paris has {i} bridges." for i in range(99)] + [SENTENCE]
    settings.MAX_TEXT_CHARS = sum(map(len, context))

    response = post(client, "/api/steps/decompose", {"sentence": SENTENCE, "context": context})

    assert response.status_code == 200, response.content
    assert world.llm.calls == {"claims": 1}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("step", "payload", "field"),
    [
        ("decompose", {"sentence": " \n\t"}, "sentence"),
        ("decompose", {"sentence": SENTENCE, "context": ["Paris is big.", "  "]}, "context.1"),
        ("search", {"query": "   "}, "query"),
        ("passages", {"claim": "\n", "text": "Paris is in France."}, "claim"),
        ("judge", {"claim": " ", "passages": ["Paris is in France."]}, "claim"),
        ("judge", {"claim": SENTENCE, "passages": ["Paris is in France.", ""]}, "passages.1"),
    ],
)
def test_a_step_refuses_blank_text_with_400_naming_the_field(client, world, step, payload, field):
    response = post(client, f"/api/steps/{step}", payload)

    assert response.status_code == 400, response.content
    assert response.json()["detail"] == f"Invalid request: {field}: is blank: it needs some text"
    assert not world.llm.calls and not world.serper.queries


@pytest.mark.django_db
def test_search_without_a_key_answers_503_naming_serper_api_key(client, world, settings):
    settings.SERPER_API_KEY = ""

    response = post(client, "/api/steps/search", {"query": "eiffel tower"})

    assert response.status_code == 503
    assert "SERPER_API_KEY" in response.json()["detail"]
    assert not world.serper.queries


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/steps/segment", "/api/steps/decompose", "/api/verifications"])
def test_a_body_over_the_upload_limit_is_413_naming_the_limit(client, settings, path):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000

    response = post(client, path, {"text": "x" * 10_000, "sentence": SENTENCE})

    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["detail"] == "The request body is too large: the limit is 10,000 bytes."


def test_segment_splits_as_a_run_does_without_the_texts_citations(client):
    text = (
        "Riverton approved a tram line in 2024 [1]. It will cost 40 million dollars [2].\n\n"
        "Sources:\n[1] Council minutes https://riverton.example/minutes\n[2] City paper https://paper.example/cost"
    )

    response = post(client, "/api/steps/segment", {"text": text})

    assert response.status_code == 200
    sentences = response.json()
    assert [s["text"] for s in sentences] == [
        "Riverton approved a tram line in 2024.",
        "It will cost 40 million dollars.",
    ], "no marker in a sentence, and the reference list is not checked as sentences"
    # Offsets are those of the text as sent: the first sentence's span holds its marker.
    assert text[sentences[0]["start"] : sentences[0]["end"]].startswith("Riverton approved a tram line in 2024")
    assert sentences[1]["start"] > text.index("[1]")


def test_segment_splits_a_text_in_its_language(client):
    # German keeps an ordinal's full stop inside its sentence ("am 9. November"), as a run splits it.
    text = "Die Mauer fiel am 9. November 1989 in Berlin. Danach wurde Deutschland im Jahr 1990 wiedervereinigt."

    response = post(client, "/api/steps/segment", {"text": text})

    assert [s["text"] for s in response.json()] == [
        "Die Mauer fiel am 9. November 1989 in Berlin.",
        "Danach wurde Deutschland im Jahr 1990 wiedervereinigt.",
    ]
