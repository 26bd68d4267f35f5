"""The REST API: creating and reading verifications, its schema and docs, and every pipeline
step on its own, against the fake LLM, search and sites on 127.0.0.1 (tests/fakes.py)."""

import json
import re
import time
import uuid

import pytest

from tests.conftest import MODEL
from verification.models import HostCategory, Verification

SENTENCE = "The Eiffel Tower is in Paris, France."
# A document of the caller's (never fetched: the requests that name it are refused).
DOC = "https://example.org/report.html"


def post(client, path, body):
    return client.post(path, body, content_type="application/json")


def wait_for(client, verification_id, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = client.get(f"/api/verifications/{verification_id}").json()
        if result["status"] in ("done", "failed"):
            return result
        time.sleep(0.1)
    raise AssertionError(f"run {verification_id} did not finish: {result['status']}")


# --- POST /api/verifications: what it refuses


def blamed(body: dict, field: str) -> bool:
    """The response names the field at fault, in its detail or its per-field errors."""
    return field in body["detail"] or field in body.get("errors", {})


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload", "field", "says"),
    [
        pytest.param({"text": ""}, "text", "Paste some text", id="empty-text"),
        pytest.param({"text": "  \n\t \r\n "}, "text", "empty", id="whitespace-text"),
        pytest.param({"text": "Paris\x00is\x00in\x00France"}, "text", "Null characters", id="nul-bytes"),
        pytest.param(
            {"text": "Paris " + "\x01\x02\x03\x1b\x7f" * 8},
            "text",
            "binary or control characters",
            id="control-characters",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"top_k_results": 0}},
            "top_k_results",
            "greater than or equal to 1",
            id="top_k_results-0",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"top_k_results": 1000}},
            "top_k_results",
            "less than or equal to 10",
            id="top_k_results-1000",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"top_k_passages": 0}},
            "top_k_passages",
            "greater than or equal to 1",
            id="top_k_passages-0",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"context_size": 9}},
            "context_size",
            "less than or equal to 5",
            id="context_size-9",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"retrieval_mode": "magic"}},
            "retrieval_mode",
            "'dense' or 'sparse'",
            id="retrieval_mode-magic",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"model": "gpt-9-imaginary"}},
            "model",
            "gpt-9-imaginary is not one of the available choices",
            id="unknown-model",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"top_k_results": "abc"}},
            "top_k_results",
            "valid integer",
            id="top_k_results-not-a-number",
        ),
        pytest.param({"settings": {"top_k_results": 3}}, "text", "Field required", id="no-text"),
        pytest.param({"text": "It was built in 1889 \ud83d."}, "text", "binary", id="lone-surrogate"),
        pytest.param({"text": SENTENCE, "settings": {"top_k_result": 3}}, "top_k_result", "unknown key", id="misspelt"),
        pytest.param(
            {"text": SENTENCE, "settings": {"quick": True, "evidence": "documents"}, "sources": [{"url": DOC}]},
            "quick",
            "must never be mixed with your documents",
            id="quick-with-documents",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"quick": True}, "sources": [{"url": DOC}]},
            "quick",
            "must never be mixed with your documents",
            id="quick-with-documents-given-to-the-web",
        ),
        pytest.param({"text": SENTENCE, "settings": "x"}, "settings", "", id="settings-not-an-object"),
        pytest.param({"text": "\U0001f600\U0001f44d \U0001f680"}, "text", "no sentence to check", id="emoji-only"),
        pytest.param({"text": "... !!! ??? -- ;;"}, "text", "no sentence to check", id="punctuation-only"),
    ],
)
def test_it_rejects_an_invalid_request_with_a_reason_and_starts_nothing(client, configured, payload, field, says):
    response = post(client, "/api/verifications", payload)

    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert says in body["detail"]
    assert blamed(body, field), body
    assert not Verification.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload", "says"),
    [
        pytest.param(
            {"text": SENTENCE, "evidence": "documents"},
            "Invalid request: unknown key 'evidence': evidence belongs inside settings",
            id="setting-at-the-top-level",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"text": SENTENCE}},
            "Invalid request: settings: unknown key 'text': text belongs at the top level, beside settings",
            id="text-inside-settings",
        ),
        pytest.param(
            {"text": SENTENCE, "colour": "red", "quick": True},
            "unknown keys 'colour', 'quick': quick belongs inside settings (the keys here are text, settings, sources)",
            id="two-at-the-top-level",
        ),
        pytest.param(
            {"text": SENTENCE, "settings": {"top_k_result": 3, "evidence": "web"}},
            "settings: unknown key 'top_k_result' (the keys here are model, retrieval_mode",
            id="misspelt-setting",
        ),
        pytest.param(
            {"text": SENTENCE, "trail": {"nodes": []}},
            "unknown key 'trail': trail is checked by POST /api/trails",
            id="a-trail",
        ),
        pytest.param(
            {"text": SENTENCE, "sources": [{"url": DOC, "title": "Report"}]},
            "sources.0: unknown key 'title' (the keys here are url)",
            id="in-a-source",
        ),
    ],
)
def test_it_refuses_a_key_it_does_not_know_naming_it_and_where_it_belongs(client, configured, payload, says):
    response = post(client, "/api/verifications", payload)
    multipart = client.post(
        "/api/verifications", {"payload": json.dumps(payload)}, headers={"X-Requested-With": "test"}
    )

    assert response.status_code == multipart.status_code == 400, response.content
    assert says in response.json()["detail"] and multipart.json() == response.json()
    assert not Verification.objects.exists()


def test_the_request_bodies_say_they_take_no_other_keys(client):
    schema = client.get("/api/openapi.json").json()
    verification = schema["paths"]["/api/verifications"]["post"]["requestBody"]["content"]["application/json"]
    trail = schema["paths"]["/api/trails"]["post"]["requestBody"]["content"]["application/json"]

    body = verification["schema"]
    assert body["additionalProperties"] is False and body["properties"]["settings"]["additionalProperties"] is False
    assert body["properties"]["sources"]["items"]["additionalProperties"] is False
    assert schema["components"]["schemas"][trail["schema"]["$ref"].rsplit("/", 1)[1]]["additionalProperties"] is False


@pytest.mark.django_db
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"text=The Eiffel Tower is in Paris", id="not-json"),
        pytest.param(b'{"text": "The Eiffel Tower is in \xe9\xff Paris"}', id="not-utf8"),
        pytest.param(b'{"text": "The Eiffel Tower', id="truncated-json"),
    ],
)
def test_it_rejects_a_body_it_cannot_parse(client, configured, raw):
    response = post(client, "/api/verifications", raw)

    assert response.status_code == 400
    assert response.json()["detail"] == "Cannot parse request body"
    assert not Verification.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/verifications", "/api/trails", "/api/steps/segment", "/api/steps/score"])
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("[" * 100_000 + "]" * 100_000, id="nested-arrays"),
        pytest.param('{"a": ' * 100_000 + "1" + "}" * 100_000, id="nested-objects"),
    ],
)
def test_it_answers_json_nested_beyond_reason_with_a_json_400(client, configured, path, raw):
    response = client.post(path, raw, content_type="application/json")

    assert response.status_code == 400, response.content[:200]
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["detail"].startswith("Cannot parse request body")
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_it_answers_json_over_the_body_limit_with_a_json_413(client, configured, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000

    response = post(client, "/api/verifications", {"text": "Paris is in France. " * 1_000})

    assert response.status_code == 413
    assert "10,000 bytes" in response.json()["detail"]


MULTIPART = "multipart/form-data; boundary=xx"
PAYLOAD_PART = b'--xx\r\nContent-Disposition: form-data; name="payload"\r\n\r\n{"text": "Paris is in France."}\r\n'


def file_part(name: bytes) -> bytes:
    return b'--xx\r\nContent-Disposition: form-data; name="files"; filename="' + name + b'"\r\n\r\nParis.\r\n'


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        pytest.param("multipart/form-data", PAYLOAD_PART + b"--xx--\r\n", id="no-boundary"),
        pytest.param("multipart/form-data; boundary=" + "x" * 1_000, b"--xx--", id="boundary-too-long"),
        pytest.param(MULTIPART, file_part(b"a" * 5_000 + b".txt") + PAYLOAD_PART + b"--xx--\r\n", id="long-file-name"),
        pytest.param(MULTIPART, file_part(b"a.txt") * 101 + PAYLOAD_PART + b"--xx--\r\n", id="too-many-files"),
        pytest.param(
            MULTIPART,
            b'--xx\r\nContent-Disposition: form-data; name="payload"\r\n'
            b"Content-Transfer-Encoding: base64\r\n\r\n!!\r\n",
            id="broken-base64",
        ),
    ],
)
def test_it_answers_a_multipart_body_it_cannot_read_with_a_json_400(client, configured, content_type, body):
    response = client.post("/api/verifications", body, content_type=content_type, headers={"X-Requested-With": "t"})

    assert response.status_code == 400, response.content[:200]
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["detail"]
    assert not Verification.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("put", "/api/verifications", "GET, POST"),
        ("delete", "/api/verifications", "GET, POST"),
        ("patch", "/api/verifications", "GET, POST"),
        ("put", f"/api/verifications/{uuid.uuid4()}", "DELETE, GET"),
        ("patch", f"/api/verifications/{uuid.uuid4()}", "DELETE, GET"),
        ("put", f"/api/verifications/{uuid.uuid4()}/retry", "POST"),
        ("get", f"/api/verifications/{uuid.uuid4()}/cancel", "POST"),
        ("put", "/api/steps/segment", "POST"),
    ],
)
@pytest.mark.parametrize("content_type", [None, "application/json", "text/plain"])
def test_a_method_a_path_does_not_take_is_a_json_405_whatever_the_body(
    client, configured, method, path, allowed, content_type
):
    extra = {"content_type": content_type, "data": "{}"} if content_type and method != "get" else {}

    response = getattr(client, method)(path, **extra)

    assert response.status_code == 405, response.content
    assert response["Allow"] == allowed
    assert response.json()["detail"] == f"{method.upper()} is not allowed here; this path takes {allowed}."


@pytest.mark.django_db
def test_it_rejects_text_over_the_limit_and_says_the_limit(client, configured, settings):
    settings.MAX_TEXT_CHARS = 1_500

    response = post(client, "/api/verifications", {"text": "x" * 1_501})

    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "1,501 characters" in detail and "the limit is 1,500" in detail
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_it_accepts_text_exactly_at_the_limit(client, configured, settings):
    settings.MAX_TEXT_CHARS = 1_500

    response = post(client, "/api/verifications", {"text": "x" * 1_500})

    assert response.status_code == 201, response.content
    assert Verification.objects.get().text == "x" * 1_500


@pytest.mark.django_db
def test_it_stores_html_and_script_verbatim_as_text(client, configured):
    text = (
        '<script>alert("pwned")</script>\n\nThe <b>Eiffel Tower</b> is in Paris &amp; France. '
        "<img src=x onerror=alert(1)> It was completed in 1889."
    )

    response = post(client, "/api/verifications", {"text": text})

    assert response.status_code == 201, response.content
    assert Verification.objects.get(pk=response.json()["id"]).text == text


# --- POST /api/verifications: what it needs configured


@pytest.mark.django_db
def test_it_answers_503_naming_serper_api_key_when_search_is_not_configured(client, world, settings):
    settings.SERPER_API_KEY = ""

    response = post(client, "/api/verifications", {"text": SENTENCE})

    assert response.status_code == 503
    detail = response.json()["detail"]
    assert "SERPER_API_KEY" in detail and "OPENAI_API_KEY" not in detail
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_it_answers_503_naming_openai_api_key_for_openai_without_a_key(client, world, settings):
    settings.OPENAI_BASE_URL = "https://api.openai.com/v1"
    settings.OPENAI_API_KEY = ""

    response = post(client, "/api/verifications", {"text": SENTENCE})

    assert response.status_code == 503
    detail = response.json()["detail"]
    assert "OPENAI_API_KEY" in detail and "SERPER_API_KEY" not in detail
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_it_asks_for_the_openai_key_only_for_a_model_served_by_openai(client, world, settings):
    settings.LLM_MODELS = f"{MODEL}={settings.OPENAI_BASE_URL},gpt-4o-mini=https://api.openai.com/v1"
    settings.OPENAI_API_KEY = ""

    on_openai = post(client, "/api/verifications", {"text": SENTENCE, "settings": {"model": "gpt-4o-mini"}})
    local = post(client, "/api/verifications", {"text": SENTENCE, "settings": {"model": MODEL}})

    assert on_openai.status_code == 503 and "OPENAI_API_KEY" in on_openai.json()["detail"]
    assert local.status_code == 201, local.content
    assert Verification.objects.get().settings["model"] == MODEL


# --- creating and reading runs


@pytest.mark.django_db(transaction=True)
def test_it_creates_runs_with_distinct_uuid4_ids_and_links(client, world, celery_worker):
    created = [
        post(
            client,
            "/api/verifications",
            {"text": SENTENCE, "settings": {"retrieval_mode": "sparse", "top_k_results": 2}},
        )
        for _ in range(2)
    ]

    assert [r.status_code for r in created] == [201, 201], [r.content for r in created]
    bodies = [r.json() for r in created]
    for body in bodies:
        run_id = uuid.UUID(body["id"])
        assert run_id.version == 4 and str(run_id) == body["id"]
        assert body["permalink"].endswith(f"/v/{body['id']}")
        assert body["result_url"].endswith(f"/api/verifications/{body['id']}")
        assert body["status"] == "pending"
    assert bodies[0]["id"] != bodies[1]["id"]

    for body in bodies:
        result = client.get(body["result_url"]).json()
        assert result["id"] == body["id"]
        assert wait_for(client, body["id"])["status"] == "done"
    stored = Verification.objects.get(pk=bodies[0]["id"]).settings
    assert (stored["retrieval_mode"], stored["top_k_results"], stored["model"]) == (
        "sparse",
        2,
        MODEL,
    )


@pytest.mark.django_db
def test_an_unknown_verification_is_404(client):
    response = client.get(f"/api/verifications/{uuid.uuid4()}")

    assert response.status_code == 404
    assert response.json()["detail"]


@pytest.mark.django_db
def test_a_malformed_verification_id_is_400_naming_the_id(client):
    response = client.get("/api/verifications/not-a-uuid")

    assert response.status_code == 400
    assert "verification_id" in response.json()["detail"]
    assert "UUID" in response.json()["detail"]


# --- schema and docs

STEPS = ("segment", "decompose", "search", "extract", "passages", "categorize", "judge", "score")


def test_the_openapi_schema_lists_every_endpoint(client):
    response = client.get("/api/openapi.json")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    paths = response.json()["paths"]
    assert "post" in paths["/api/verifications"]
    assert "get" in paths["/api/verifications/{verification_id}"]
    for name in STEPS:
        assert "post" in paths[f"/api/steps/{name}"], name


def test_the_docs_page_loads_its_assets_from_this_app(client, settings):
    # Serve straight from the apps' static dirs, as collectstatic would ship them.
    settings.WHITENOISE_USE_FINDERS = True

    response = client.get("/api/docs")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "://" not in page and 'src="//' not in page and 'href="//' not in page
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page)
    assert any(asset.endswith(".js") for asset in assets)
    assert any(asset.endswith(".css") for asset in assets)
    for asset in assets:
        assert asset.startswith(settings.STATIC_URL), asset
        assert client.get(asset).status_code == 200, asset


# --- the steps, one by one


@pytest.mark.django_db
def test_segment_returns_offsets_that_slice_the_input(client):
    text = (
        "The Eiffel Tower is in Paris, France. It was completed in 1889.\n\n"
        "  Zürich is in Switzerland.\nI hope this helps!"
    )

    response = post(client, "/api/steps/segment", {"text": text})

    assert response.status_code == 200
    sentences = response.json()
    assert [s["text"] for s in sentences] == [
        SENTENCE,
        "It was completed in 1889.",
        "Zürich is in Switzerland.",
        "I hope this helps!",
    ]
    assert [s["index"] for s in sentences] == [0, 1, 2, 3]
    assert [s["paragraph_index"] for s in sentences] == [0, 0, 1, 1]
    for sentence in sentences:
        assert text[sentence["start"] : sentence["end"]] == sentence["text"]
    assert sentences[1]["context"] == [SENTENCE, "It was completed in 1889."]


@pytest.mark.django_db
def test_decompose_returns_self_contained_claims(client, world):
    response = post(
        client,
        "/api/steps/decompose",
        {"sentence": "It was completed in 1889.", "context": [SENTENCE]},
    )

    assert response.status_code == 200, response.content
    assert response.json() == [
        {"text": "The Eiffel Tower was completed in 1889.", "query": "1889 completed eiffel tower"}
    ]
    assert world.llm.calls["claims"] == 1


@pytest.mark.django_db
def test_search_returns_the_providers_hits_in_rank_order(client, world):
    response = post(client, "/api/steps/search", {"query": "eiffel tower 1889 completed", "top_k": 2})

    assert response.status_code == 200, response.content
    hits = response.json()
    wiki = world.sites[0]
    assert [h["rank"] for h in hits] == [1, 2]
    assert hits[0]["url"] == wiki.url + "/eiffel"
    assert hits[0]["title"] == "Eiffel Tower - Wiki encyclopedia"
    assert "completed in 1889" in hits[0]["snippet"]
    assert all(h["url"].startswith("http://127.0.0.1:") for h in hits)
    assert world.serper.queries == ["eiffel tower 1889 completed"]


@pytest.mark.django_db
def test_extract_fetches_a_page_and_returns_its_main_text(client, world):
    wiki = world.sites[0]

    response = post(client, "/api/steps/extract", {"url": wiki.url + "/eiffel"})

    assert response.status_code == 200, response.content
    page = response.json()
    assert page["url"] == page["final_url"] == wiki.url + "/eiffel"
    assert page["title"] == "Eiffel Tower - Wiki encyclopedia"
    assert "The Eiffel Tower was completed in 1889 for the World's Fair." in page["text"].splitlines()
    assert "The Eiffel Tower was completed in 1889 for the World's Fair." in page["sentences"]
    assert wiki.hits["/eiffel"] == 1


@pytest.mark.django_db
def test_extract_refuses_a_private_address_unless_allowed(client, world, settings):
    settings.ALLOW_PRIVATE_FETCH = False
    wiki = world.sites[0]

    response = post(client, "/api/steps/extract", {"url": wiki.url + "/eiffel"})

    # The address given is at fault, not an outside service: a 4xx, not a 502.
    assert response.status_code == 422
    assert response.json()["detail"] == ("refused to fetch 127.0.0.1: it resolves to a non-public address (127.0.0.1)")
    assert wiki.hits["/eiffel"] == 0


@pytest.mark.django_db
def test_extract_reports_a_page_error_as_502(client, world):
    response = post(client, "/api/steps/extract", {"url": world.sites[0].url + "/missing"})

    assert response.status_code == 502
    assert response.json()["detail"] == "the page answered HTTP 404"


@pytest.mark.django_db
def test_passages_highlights_the_matching_sentence_inside_its_context(client):
    best = "The Eiffel Tower was completed in 1889 for the World's Fair."
    lines = [
        "Bananas are yellow and grow in bunches.",
        "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
        best,
        "Gustave Eiffel's company designed and built the tower.",
        "Cats sleep for most of the day.",
    ]

    response = post(
        client,
        "/api/steps/passages",
        {
            "claim": "The Eiffel Tower was completed in 1889.",
            "text": "\n".join(lines),
            "top_k": 1,
            "context": 1,
            "mode": "sparse",
        },
    )

    assert response.status_code == 200, response.content
    [passage] = response.json()
    assert passage["text"] == " ".join(lines[1:4])
    [(start, end)] = passage["highlights"]
    assert 0 <= start < end <= len(passage["text"])
    assert passage["text"][start:end] == best
    assert passage["score"] > 0


@pytest.mark.django_db
def test_categorize_answers_a_known_host_from_the_rules_without_the_llm(client, world):
    response = post(client, "/api/steps/categorize", {"host": "https://en.wikipedia.org/wiki/Paris"})

    assert response.status_code == 200
    assert response.json() == {
        "host": "en.wikipedia.org",
        "source_type": "wiki",
        "decided_by": "rules",
    }
    assert sum(world.llm.calls.values()) == 0
    assert not HostCategory.objects.exists()


@pytest.mark.django_db
def test_categorize_asks_the_llm_once_then_answers_from_the_cache(client, world):
    first = post(client, "/api/steps/categorize", {"host": "daily-news-paper.test"})
    second = post(client, "/api/steps/categorize", {"host": "daily-news-paper.test"})

    assert first.json() == {
        "host": "daily-news-paper.test",
        "source_type": "news",
        "decided_by": "llm",
    }
    assert second.json() == {
        "host": "daily-news-paper.test",
        "source_type": "news",
        "decided_by": "cache",
    }
    assert world.llm.calls == {"source_type": 1}


@pytest.mark.django_db
def test_categorize_without_the_llm_leaves_an_unknown_host_unknown(client, world):
    response = post(client, "/api/steps/categorize", {"host": "example.test", "use_llm": False})

    assert response.json() == {"host": "example.test", "source_type": None, "decided_by": "unknown"}
    assert sum(world.llm.calls.values()) == 0


@pytest.mark.django_db
def test_judge_returns_one_verdict_per_passage_in_order(client, world):
    response = post(
        client,
        "/api/steps/judge",
        {
            "claim": "The Eiffel Tower was completed in 1889.",
            "context": SENTENCE,
            "passages": [
                "The Eiffel Tower was completed in 1889 for the World's Fair.",
                "Bananas are yellow.",
                "It is a myth that the Eiffel Tower was completed in 1889.",
            ],
        },
    )

    assert response.status_code == 200, response.content
    judgements = response.json()
    assert [(j["passage"], j["verdict"]) for j in judgements] == [
        (0, "supported"),
        (1, "irrelevant"),
        (2, "not_supported"),
    ]
    assert [bool(j["rationale"]) for j in judgements] == [True, False, True]  # none for an irrelevant passage
    assert all(j["error"] == "" for j in judgements)
    assert world.llm.calls == {"judgements": 1}


def evidence(evidence_id, sentence_index, claim_id, source_type, verdict, failed=False):
    return {
        "id": evidence_id,
        "sentence_index": sentence_index,
        "claim_id": claim_id,
        "source_type": source_type,
        "verdict": verdict,
        "failed": failed,
    }


def tally(supported, not_supported, irrelevant, total, score, band, silent_documents=0):
    return {
        "supported": supported,
        "not_supported": not_supported,
        "irrelevant": irrelevant,
        "silent_documents": silent_documents,
        "total": total,
        "score": score,
        "band": band,
    }


SCORED = [
    evidence(1, 0, 10, "wiki", "supported"),
    evidence(2, 0, 10, "news", "not_supported"),
    evidence(3, 0, 11, "blog", "irrelevant"),
    evidence(4, 0, 11, "news", "supported"),
    evidence(5, 1, 12, "wiki", "irrelevant"),
    evidence(6, 1, 12, "news", "", failed=True),
    evidence(7, 1, 12, "blog", ""),
]


def test_score_counts_supported_over_all_judged_evidence_by_default(client):
    response = post(client, "/api/steps/score", {"evidence": SCORED})

    assert response.status_code == 200, response.content
    assert response.json() == {
        "score_rule": "all",
        "overall": tally(2, 1, 2, 5, 0.4, "orange"),
        "sentences": {"0": tally(2, 1, 1, 4, 0.5, "orange"), "1": tally(0, 0, 1, 1, 0.0, "red")},
        "claims": {
            "10": tally(1, 1, 0, 2, 0.5, "orange"),
            "11": tally(1, 0, 1, 2, 0.5, "orange"),
            "12": tally(0, 0, 1, 1, 0.0, "red"),
        },
        "source_types": {"wiki": 40.0, "news": 40.0, "blog": 20.0},
    }


def test_score_counts_supported_over_supported_and_not_supported(client):
    response = post(client, "/api/steps/score", {"evidence": SCORED, "score_rule": "decisive"})

    assert response.status_code == 200, response.content
    scores = response.json()
    assert scores["score_rule"] == "decisive"
    assert scores["overall"] == tally(2, 1, 2, 3, pytest.approx(2 / 3), "green")
    assert scores["sentences"] == {
        "0": tally(2, 1, 1, 3, pytest.approx(2 / 3), "green"),
        "1": tally(0, 0, 1, 0, None, "none"),
    }
    assert scores["claims"] == {
        "10": tally(1, 1, 0, 2, 0.5, "orange"),
        "11": tally(1, 0, 1, 1, 1.0, "green"),
        "12": tally(0, 0, 1, 0, None, "none"),
    }
    assert scores["source_types"] == {"wiki": 40.0, "news": 40.0, "blog": 20.0}


@pytest.mark.parametrize("rule", ["all", "decisive"])
def test_score_counts_the_users_documents_that_do_not_address_a_claim_in_neither_number(client, rule):
    documents = [evidence(1, 0, 7, "your_document", "supported")]
    documents += [evidence(n, 0, 7, "your_document", "irrelevant") for n in (2, 3, 4)]

    response = post(client, "/api/steps/score", {"evidence": documents, "score_rule": rule})

    assert response.status_code == 200, response.content
    assert response.json()["claims"] == {"7": tally(1, 0, 0, 1, 1.0, "green", silent_documents=3)}


def test_score_leaves_out_excluded_evidence_and_source_types(client):
    response = post(
        client,
        "/api/steps/score",
        {"evidence": SCORED, "excluded_ids": [4], "excluded_types": ["blog"]},
    )

    assert response.status_code == 200, response.content
    scores = response.json()
    assert scores["overall"] == tally(1, 1, 1, 3, pytest.approx(1 / 3), "orange")
    assert scores["sentences"]["0"] == tally(1, 1, 0, 2, 0.5, "orange")
    assert scores["sentences"]["1"] == tally(0, 0, 1, 1, 0.0, "red")
    assert scores["claims"]["11"] == tally(0, 0, 0, 0, None, "none")
    assert scores["source_types"] == {"wiki": pytest.approx(200 / 3), "news": pytest.approx(100 / 3)}


def test_score_leaves_out_the_kinds_of_evidence_asked(client):
    snippets = [{**evidence(8, 0, 10, "blog", "supported"), "kind": "snippet"}]

    counted = post(client, "/api/steps/score", {"evidence": SCORED + snippets}).json()
    left_out = post(client, "/api/steps/score", {"evidence": SCORED + snippets, "excluded_kinds": ["snippet"]}).json()

    assert counted["claims"]["10"] == tally(2, 1, 0, 3, pytest.approx(2 / 3), "green")
    assert left_out["claims"]["10"] == tally(1, 1, 0, 2, 0.5, "orange")
    assert left_out["overall"] == tally(2, 1, 2, 5, 0.4, "orange")


@pytest.mark.parametrize(
    ("rule", "item", "counts", "source_types"),
    [
        pytest.param("decisive", evidence(1, 0, 3, "wiki", "irrelevant"), (0, 0, 1), {"wiki": 100.0}, id="irrelevant"),
        pytest.param("all", evidence(1, 0, 3, "wiki", "", failed=True), (0, 0, 0), {}, id="failed"),
        pytest.param("decisive", evidence(1, 0, 3, "wiki", ""), (0, 0, 0), {}, id="pending"),
    ],
)
def test_score_without_counted_evidence_is_none_not_zero(client, rule, item, counts, source_types):
    response = post(client, "/api/steps/score", {"evidence": [item], "score_rule": rule})

    assert response.status_code == 200, response.content
    none = tally(*counts, 0, None, "none")
    assert response.json() == {
        "score_rule": rule,
        "overall": none,
        "sentences": {"0": none},
        "claims": {"3": none},
        "source_types": source_types,
    }


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        pytest.param({"evidence": SCORED, "score_rule": "majority"}, "score_rule", id="unknown-rule"),
        pytest.param({"evidence": SCORED, "score_rule": "Decisive"}, "score_rule", id="rule-in-capitals"),
        pytest.param({"evidence": [evidence(1, 0, 3, "wiki", "refuted")]}, "verdict", id="unknown-verdict"),
        pytest.param({"evidence": [evidence(1, 0, 3, "wiki", "pending")]}, "verdict", id="pending-is-not-a-verdict"),
    ],
)
def test_score_rejects_an_invalid_score_rule_or_verdict_with_400(client, payload, field):
    response = post(client, "/api/steps/score", payload)

    assert response.status_code == 400, response.content
    assert field in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("step", "payload"),
    [
        ("decompose", {"sentence": SENTENCE}),
        ("judge", {"claim": SENTENCE, "passages": ["Paris is the capital of France."]}),
        ("categorize", {"host": "unknown-site.test"}),
    ],
)
def test_a_step_refuses_an_unknown_model_before_calling_any(client, world, step, payload):
    response = post(client, f"/api/steps/{step}", {**payload, "model": "gpt-9-imaginary"})

    assert response.status_code == 400
    assert response.json()["detail"] == f"Unknown model 'gpt-9-imaginary'; configured: {MODEL}"
    assert sum(world.llm.calls.values()) == 0


@pytest.mark.django_db
@pytest.mark.parametrize("host", ["http://[::1", "", "http://"])
def test_categorize_refuses_something_that_is_not_a_host(client, configured, host):
    response = post(client, "/api/steps/categorize", {"host": host})

    assert response.status_code == 400
    assert "Not a host name or URL" in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("step", ["decompose", "judge", "categorize"])
def test_an_llm_step_with_no_model_configured_names_the_variable(client, configured, settings, step):
    settings.LLM_MODELS = ""
    payload = {
        "decompose": {"sentence": SENTENCE},
        "judge": {"claim": SENTENCE, "passages": ["x"]},
        "categorize": {"host": "unknown-host.example"},
    }[step]

    response = post(client, f"/api/steps/{step}", payload)

    assert response.status_code == 503
    assert "LLM_MODELS" in response.json()["detail"]


@pytest.mark.django_db
def test_a_run_unfinished_long_after_it_started_is_failed_when_read(client, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.RUN_TIMEOUT = 600
    stale = Verification.objects.create(text=SENTENCE, settings={}, status="running")
    Verification.objects.filter(pk=stale.pk).update(created_at=timezone.now() - timedelta(minutes=11))
    fresh = Verification.objects.create(text=SENTENCE, settings={}, status="running")

    stale_result = client.get(f"/api/verifications/{stale.pk}").json()
    fresh_result = client.get(f"/api/verifications/{fresh.pk}").json()

    assert stale_result["status"] == "failed" and "timed out" in stale_result["error"]
    assert fresh_result["status"] == "running"


# --- RUNS_PER_HOUR under simultaneous submissions (issue 27.1)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/api/verifications", "/api/trails"])
def test_simultaneous_submissions_of_one_client_create_exactly_the_runs_the_hourly_limit_allows(
    live_server, configured, path
):
    """Twenty requests let go at once by one client, RUNS_PER_HOUR=5: five runs, fifteen 429s (the
    limit used to count the client's runs before any of the twenty had created its own)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import requests

    configured.RUNS_PER_HOUR = 5
    body = {"text": "The Eiffel Tower is in Paris."}
    if path == "/api/trails":
        body = {
            "trail": {
                "nodes": [
                    {"id": "s", "text": "Paris is in France.", "from": []},
                    {"id": "f", "text": "The Eiffel Tower is in Paris.", "from": ["s"]},
                ]
            }
        }
    gate = threading.Barrier(20)

    def submit(_):
        with requests.Session() as session:
            gate.wait()
            return session.post(live_server.url + path, json=body, timeout=60).status_code

    with ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(submit, range(20)))

    assert statuses.count(201) == 5, statuses
    assert statuses.count(429) == 15
    assert Verification.objects.count() == 5
