"""The user's own documents as evidence: what a run accepts (sniffed types, limits, the evidence
mode), how the API takes uploads without opening itself to other sites, and the engine reading
documents like web pages — with no search at all in `documents` mode — through a real Celery
worker on real Redis, against the fakes on 127.0.0.1."""

import hashlib
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils.timezone import now

from tests.fakes import FakePage, FakeSite
from tests.pdfs import inflate_page, make_pdf
from tests.test_engine import all_evidence, wait_for
from verification.inputs.documents import sniff
from verification.models import Source, Upload, Verification

SUMMARY = "The Eiffel Tower is in Paris, France. It was completed in 1889."
# Never near a claim's words, so never a chosen passage: what the result must not show.
SECRET = "Quokkas guard the zzqx ledger of 7731 brass rivets in a cellar."
FILLER = "".join(f"<p>Paragraph {n} talks about the weather on a quiet afternoon in spring.</p>" for n in range(6))
REPORT = (
    "<!doctype html><html><head><title>Tower report</title></head><body><article><h1>Tower report</h1>"
    "<p>The Eiffel Tower is a wrought-iron lattice tower in Paris, France.</p>"
    "<p>The Eiffel Tower was completed in 1889 for the World's Fair.</p>"
    f"{FILLER}<p>{SECRET}</p></article></body></html>"
).encode()
NOTES = b"# Notes\n\nThe Eiffel Tower was completed in 1889, as the notes say.\n\n- It stands in Paris, France.\n"


@pytest.fixture
def library():
    """A site of the user's own pages, which web search does not know."""
    site = FakeSite(
        pages={
            "/report": FakePage(
                "Annual tower report",
                "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.\n\n"
                "Engineers finished the Eiffel Tower, completed in 1889, on time.",
                searchable=False,
            )
        }
    ).start()
    yield site
    site.stop()


def upload(name: str, body: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, body, content_type="application/octet-stream")


def post_json(client, payload):
    return client.post("/api/verifications", payload, content_type="application/json")


def post_files(client, payload, files, **headers):
    headers.setdefault("X-Requested-With", "test")
    return client.post("/api/verifications", {"payload": json.dumps(payload), "files": files}, headers=headers)


# --- what a file is, from its bytes


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(make_pdf([["The Eiffel Tower is in Paris."]]), "application/pdf", id="pdf"),
        pytest.param(REPORT, "text/html", id="html"),
        pytest.param(b"\xef\xbb\xbf  <p>A fragment of a saved page.</p>", "text/html", id="html-fragment-with-bom"),
        pytest.param(NOTES, "text/markdown", id="markdown"),
        pytest.param("Plain words, très simple.".encode("latin-1"), "text/plain", id="latin-1-text"),
        pytest.param("Plain words.".encode("utf-16"), "text/plain", id="utf-16-text"),
        pytest.param(bytes(range(256)) * 4, None, id="binary"),
        pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", None, id="png"),
        pytest.param(b"   \n", None, id="blank"),
    ],
)
def test_it_tells_a_files_type_from_its_bytes(body, expected):
    assert sniff(body) == expected


# --- what a run accepts


@pytest.mark.django_db
def test_an_upload_is_stored_by_its_sniffed_type_under_a_content_address(client, configured):
    response = post_files(
        client, {"text": SUMMARY, "settings": {"evidence": "documents"}}, [upload("report.pdf", REPORT)]
    )

    assert response.status_code == 201, response.content
    stored = Upload.objects.get()
    digest = hashlib.sha256(REPORT).hexdigest()
    assert (stored.name, stored.content_type, stored.sha256, bytes(stored.body)) == (
        "report.pdf",
        "text/html",
        digest,
        REPORT,
    )
    source = stored.source
    # A random id, not the file's hash: the URL is public, and a hash would tell anyone
    # holding a candidate file whether this run read it.
    assert re.fullmatch(r"upload:[0-9a-f]{32}", source.url) and digest not in source.url
    assert source.origin == "document"
    assert (source.source_type, source.type_decided_by, source.title) == ("your_document", "user", "report.pdf")
    assert Verification.objects.get().settings["evidence"] == "documents"


@pytest.mark.django_db
def test_two_uploads_of_one_name_stay_apart_and_the_same_bytes_count_once(client, configured):
    files = [upload("notes.md", NOTES), upload("notes.md", REPORT), upload("copy.md", NOTES)]

    response = post_files(client, {"text": SUMMARY, "settings": {"evidence": "documents"}}, files)

    assert response.status_code == 201, response.content
    assert sorted(Upload.objects.values_list("sha256", flat=True)) == sorted(
        hashlib.sha256(body).hexdigest() for body in (NOTES, REPORT)
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload", "files", "field", "says"),
    [
        pytest.param(
            {"settings": {"evidence": "documents"}},
            [],
            "sources",
            "give at least one URL or file",
            id="documents-mode-without-documents",
        ),
        pytest.param(
            {"settings": {"evidence": "documents"}},
            [upload("photo.pdf", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 20)],
            "files",
            "photo.pdf is not a PDF, HTML, Markdown or text file.",
            id="binary-junk",
        ),
        pytest.param(
            {"settings": {"evidence": "documents"}},
            [upload("big.txt", b"Words. " * 200)],
            "files",
            "big.txt is 0.0 MB; a file may be at most 0.0 MB (MAX_UPLOAD_BYTES).",
            id="oversize",
        ),
        pytest.param(
            {"settings": {"evidence": "both"}, "sources": [{"url": f"https://example.org/{n}"} for n in range(3)]},
            [],
            "sources",
            "3 documents were given; a run reads at most 2 (MAX_DOCUMENTS).",
            id="too-many",
        ),
        pytest.param(
            {"settings": {"evidence": "documents"}, "sources": [{"url": "file:///etc/passwd"}]},
            [],
            "sources",
            "file:///etc/passwd is not a web address (http:// or https://).",
            id="not-a-web-address",
        ),
        pytest.param(
            {"settings": {"evidence": "documents"}, "sources": [{"url": "https://intranet.example@example.org/r"}]},
            [],
            "sources",
            "has a user name before its host, which hides the host",
            id="user-info",
        ),
    ],
)
def test_it_refuses_documents_it_cannot_take_with_a_reason(client, configured, settings, payload, files, field, says):
    settings.MAX_UPLOAD_BYTES = 1000
    settings.MAX_DOCUMENTS = 2

    response = post_files(client, {"text": SUMMARY, **payload}, files)

    assert response.status_code == 400, response.content
    body = response.json()
    assert says in body["detail"] and any(says in message for message in body["errors"][field])
    assert not Verification.objects.exists() and not Source.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("settings_given", [{}, {"evidence": "web"}], ids=["default-mode", "web-mode"])
def test_documents_given_in_web_mode_are_read_too_and_the_run_says_so(client, configured, settings_given):
    payload = {"text": SUMMARY, "settings": settings_given, "sources": [{"url": "https://example.org/report"}]}

    response = post_json(client, payload)

    assert response.status_code == 201, response.content
    run = Verification.objects.get()
    assert run.settings["evidence"] == "both" and run.settings["evidence_switched_from"] == "web"
    assert [s.url for s in run.sources.all()] == ["https://example.org/report"]
    api = client.get(f"/api/verifications/{run.pk}").json()
    assert api["evidence"] == "both" and api["settings"]["evidence_switched_from"] == "web"
    said = client.get(f"/v/{run.pk}").content.decode()
    assert "you chose “The web” and gave documents, so they were read as well" in said


@pytest.mark.django_db
def test_documents_mode_by_json_needs_no_search_key(client, configured, settings):
    settings.SERPER_API_KEY = ""

    refused = post_json(client, {"text": SUMMARY})
    taken = post_json(
        client, {"text": SUMMARY, "settings": {"evidence": "documents"}, "sources": [{"url": "https://example.org/a"}]}
    )

    assert refused.status_code == 503 and "SERPER_API_KEY" in refused.json()["detail"]
    assert taken.status_code == 201, taken.content
    assert list(Source.objects.values_list("url", "host", "origin")) == [
        ("https://example.org/a", "example.org", "document")
    ]


# --- uploads without opening the API to other sites


@pytest.mark.django_db
def test_an_upload_without_the_header_no_other_site_can_send_is_refused(client, configured):
    response = post_files(
        client,
        {"text": SUMMARY, "settings": {"evidence": "documents"}},
        [upload("r.html", REPORT)],
        **{"X-Requested-With": ""},
    )

    assert response.status_code == 415
    assert "X-Requested-With" in response.json()["detail"]
    assert not Verification.objects.exists() and not Upload.objects.exists()


@pytest.mark.django_db
def test_other_api_operations_take_no_uploads_even_with_the_header(client, configured):
    response = client.post(
        "/api/steps/segment", {"payload": json.dumps({"text": SUMMARY})}, headers={"X-Requested-With": "test"}
    )

    assert response.status_code == 415


@pytest.mark.django_db
def test_a_multipart_request_without_its_json_part_says_so(client, configured):
    response = client.post(
        "/api/verifications", {"text": SUMMARY, "files": [upload("r.html", REPORT)]}, headers={"X-Requested-With": "t"}
    )

    assert response.status_code == 400
    assert "payload" in response.json()["detail"]


@pytest.mark.django_db
def test_an_upload_larger_than_any_run_takes_is_refused_before_it_is_read(client, configured, settings):
    settings.MAX_DOCUMENTS, settings.MAX_UPLOAD_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1, 2000, 1000

    response = post_files(
        client, {"text": SUMMARY, "settings": {"evidence": "documents"}}, [upload("a.txt", b"x" * 5000)]
    )

    assert response.status_code == 413
    assert "MAX_UPLOAD_BYTES" in response.json()["detail"]
    assert not Verification.objects.exists()


def test_the_schema_documents_json_and_multipart_bodies(client):
    body = client.get("/api/openapi.json").json()["paths"]["/api/verifications"]["post"]["requestBody"]

    assert set(body["content"]) == {"application/json", "multipart/form-data"}
    json_schema = body["content"]["application/json"]["schema"]
    assert json_schema["properties"]["sources"]["items"]["properties"]["url"]["type"] == "string"
    assert "documents" in json.dumps(json_schema["properties"]["settings"])
    assert body["content"]["multipart/form-data"]["schema"]["required"] == ["payload"]


# --- the web form


@pytest.mark.django_db
def test_the_form_takes_files_and_an_edited_run_keeps_them(client, configured):
    first = client.post(
        "/",
        {
            "text": SUMMARY,
            "evidence": "documents",
            "sources": "https://example.org/a\n",
            "files": [upload("n.md", NOTES)],
        },
    )
    assert first.status_code == 302, first.content.decode()[:2000]
    original = Verification.objects.get()

    form = client.get(f"/?edit={original.pk}").content.decode()
    edited = client.post("/", {"text": SUMMARY + " It is tall.", "evidence": "documents", "edited_from": original.pk})

    assert "n.md" in form and 'id="kept-documents"' in form
    assert edited.status_code == 302
    rerun = Verification.objects.exclude(pk=original.pk).get()
    assert [(s.url, s.title) for s in rerun.sources.order_by("pk")] == [
        (s.url, s.title) for s in original.sources.order_by("pk")
    ]
    assert bytes(Upload.objects.get(source__verification=rerun).body) == NOTES


@pytest.mark.django_db
def test_the_browser_that_started_a_run_gets_an_httponly_owner_cookie(client, configured):
    response = client.post("/", {"text": SUMMARY})

    assert response.status_code == 302
    cookie = response.cookies["factsite_owner"]
    assert len(cookie.value) >= 40 and cookie["httponly"] and cookie["samesite"] == "Lax"
    run = Verification.objects.get()
    assert run.creator and cookie.value not in run.creator  # only a keyed hash of the token is stored
    # The next run of the same browser keeps its token.
    assert client.post("/", {"text": SUMMARY + " Again."}).cookies["factsite_owner"].value == cookie.value
    assert Verification.objects.filter(creator=run.creator).count() == 2


@pytest.mark.django_db
def test_someone_else_editing_a_run_does_not_get_its_documents(client, configured):
    client.post("/", {"text": SUMMARY, "evidence": "both", "files": [upload("secret.md", NOTES)]})
    original = Verification.objects.get()
    stranger = Client()

    form = stranger.get(f"/?edit={original.pk}").content.decode()
    edited = stranger.post("/", {"text": "What does the secret say?", "evidence": "both", "edited_from": original.pk})

    assert "secret.md" not in form and 'id="kept-documents"' not in form
    assert 'id="withheld-documents"' in form
    assert edited.status_code == 302
    rerun = Verification.objects.exclude(pk=original.pk).get()
    assert not rerun.sources.exists() and not Upload.objects.filter(source__verification=rerun).exists()
    # Nor may a stranger retry it once it failed: a retry reads the documents again.
    Verification.objects.filter(pk=original.pk).update(status="failed", error="the model failed", finished_at=now())
    assert stranger.post(f"/v/{original.pk}/retry").status_code == 403
    assert 'class="retry-form"' not in stranger.get(f"/v/{original.pk}").content.decode()
    assert 'class="retry-form"' in client.get(f"/v/{original.pk}").content.decode()


@pytest.mark.django_db
def test_the_api_refuses_an_owner_token_that_is_easy_to_guess(client, configured):
    response = client.post(
        "/api/verifications", {"text": SUMMARY}, content_type="application/json", headers={"X-Client-Token": "me"}
    )

    assert response.status_code == 400 and "X-Client-Token must be" in response.json()["detail"]
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_an_api_caller_keeps_its_own_token(client, configured):
    token = "my-own-token-" + "x" * 20
    response = client.post(
        "/api/verifications", {"text": SUMMARY}, content_type="application/json", headers={"X-Client-Token": token}
    )

    assert response.status_code == 201 and response.headers["X-Client-Token"] == token
    other = client.post("/api/verifications", {"text": SUMMARY}, content_type="application/json")
    assert other.headers["X-Client-Token"] not in ("", token)
    assert Verification.objects.values("creator").distinct().count() == 2


@pytest.mark.django_db
def test_the_form_says_when_documents_mode_has_no_document(client, configured):
    response = client.post("/", {"text": SUMMARY, "evidence": "documents"})

    assert response.status_code == 400
    assert "give at least one URL or file" in response.content.decode()
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_the_form_refuses_quick_mode_with_documents(client, configured):
    response = client.post(
        "/", {"text": SUMMARY, "evidence": "documents", "sources": "https://example.org/report", "quick": "on"}
    )

    assert response.status_code == 400
    assert "must never be mixed with your documents" in response.content.decode()
    assert not Verification.objects.exists()


# --- the engine


@pytest.mark.django_db(transaction=True)
def test_documents_mode_reads_only_the_documents_and_never_searches(client, world, library, celery_worker):
    payload = {
        "text": SUMMARY,
        "settings": {"evidence": "documents", "retrieval_mode": "sparse", "top_k_passages": 1, "context_size": 0},
        "sources": [{"url": library.url + "/report"}],
    }
    created = post_files(client, payload, [upload("report.pdf", REPORT)])
    assert created.status_code == 201, created.content

    result = wait_for(client, created.json()["id"])

    assert result["status"] == "done", result["error"]
    assert world.serper.queries == [] and result["usage"]["searches"] == 0
    assert world.llm.calls["source_type"] == 0  # the categorizer is never asked about documents
    assert result["evidence"] == "documents" and result["settings"]["evidence"] == "documents"
    (upload_url,) = {s["url"] for s in result["sources"] if s["url"].startswith("upload:")}
    assert hashlib.sha256(REPORT).hexdigest() not in json.dumps(result)
    evidence = all_evidence(result)
    assert {e["url"] for e in evidence} == {upload_url, library.url + "/report"}
    assert {e["source_type"] for e in evidence} == {"your_document"}
    assert {e["title"] for e in evidence if e["url"] == upload_url} == {"report.pdf"}
    assert any(e["verdict"] == "supported" for e in evidence)
    # In the order given: URLs, then files.
    page, file = result["documents"]
    assert (page["kind"], page["url"], page["content_type"], page["status"]) == (
        "url",
        library.url + "/report",
        "",
        "done",
    )
    assert (file["kind"], file["name"], file["url"], file["content_type"], file["status"]) == (
        "file",
        "report.pdf",
        "",
        "text/html",
        "done",
    )
    assert all(not world_site.hits for world_site in world.sites)


@pytest.mark.django_db(transaction=True)
def test_an_upload_is_never_served_back(client, world, celery_worker):
    payload = {
        "text": SUMMARY,
        "settings": {"evidence": "documents", "retrieval_mode": "sparse", "top_k_passages": 1, "context_size": 0},
    }
    created = post_files(client, payload, [upload("private report.html", REPORT)])
    run_id = created.json()["id"]
    result = wait_for(client, run_id)
    assert result["status"] == "done", result["error"]

    pages = [
        client.get(f"/api/verifications/{run_id}"),
        client.get(f"/v/{run_id}"),
        client.get(f"/v/{run_id}?sentence=0"),
        client.get(f"/v/{run_id}?sentence=1"),
        client.get(f"/v/{run_id}.json"),
    ]
    texts = [page.content.decode() for page in pages]
    assert all(page.status_code == 200 for page in pages)
    assert not any("zzqx" in text or "Quokkas" in text for text in texts)
    assert "private report.html" in texts[2] and "your document" in texts[2]
    assert not re.search(r'href="upload:', texts[2])
    digest = hashlib.sha256(REPORT).hexdigest()
    assert not any(digest in text for text in texts)
    (upload_id,) = {s["url"].removeprefix("upload:") for s in pages[0].json()["sources"]}
    for name in (digest, upload_id):
        for path in (f"/upload:{name}", f"/v/{run_id}/upload:{name}", f"/api/uploads/{name}"):
            assert client.get(path).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_markdown_documents_passages_are_shown_as_text(client, world, celery_worker):
    notes = (
        b"# Tower notes\n\n## History\n\nThe Eiffel Tower was **completed in 1889**, as *the notes* say.\n\n"
        b"- It stands in __Paris, France__.\n"
    )
    payload = {"text": SUMMARY, "settings": {"evidence": "documents", "retrieval_mode": "sparse"}}
    run_id = post_files(client, payload, [upload("notes.md", notes)]).json()["id"]
    result = wait_for(client, run_id)
    assert result["status"] == "done", result["error"]

    passages = [e["passage"] for e in all_evidence(result)]
    assert any("completed in 1889, as the notes say." in p for p in passages), passages
    assert not any(mark in p for p in passages for mark in ("#", "*", "__")), passages
    page = client.get(f"/v/{run_id}?sentence=1").content.decode()
    assert "completed in 1889</mark>" in page or "completed in 1889, as the notes say." in page
    assert "**" not in page


@pytest.mark.django_db(transaction=True)
def test_both_mode_reads_the_web_and_the_documents(client, world, library, celery_worker):
    payload = {
        "text": SUMMARY,
        "settings": {"evidence": "both", "retrieval_mode": "sparse"},
        "sources": [{"url": library.url + "/report"}],
    }
    result = wait_for(client, post_json(client, payload).json()["id"])

    assert result["status"] == "done", result["error"]
    assert world.serper.queries and result["usage"]["searches"] == len(world.serper.queries)
    evidence = all_evidence(result)
    hosts = {e["host"] for e in evidence}
    assert library.url.removeprefix("http://") in hosts
    assert {e["source_type"] for e in evidence} >= {"your_document", "wiki"}
    for sentence in result["sentences"]:
        for claim in sentence["claims"]:
            assert any(e["url"] == library.url + "/report" for e in claim["evidence"]), claim


@pytest.mark.django_db(transaction=True)
def test_a_pdf_upload_is_read_as_evidence(client, world, celery_worker):
    pdf = make_pdf(
        [["The Eiffel Tower is a wrought-iron lattice tower in Paris, France.", "It was completed in 1889."]],
        title="Tower facts",
    )
    payload = {"text": SUMMARY, "settings": {"evidence": "documents", "retrieval_mode": "sparse"}}
    result = wait_for(client, post_files(client, payload, [upload("facts", pdf)]).json()["id"])

    assert result["status"] == "done", result["error"]
    assert result["documents"][0]["content_type"] == "application/pdf"
    assert any(e["verdict"] == "supported" and e["title"] == "facts" for e in all_evidence(result))


@pytest.mark.django_db(transaction=True)
def test_a_document_that_failed_is_read_again_on_retry(client, world, library, celery_worker):
    library.fail_status = 503
    payload = {
        "text": SUMMARY,
        "settings": {"evidence": "documents", "retrieval_mode": "sparse"},
        "sources": [{"url": library.url + "/report"}],
    }
    created = post_json(client, payload)
    run_id, token = created.json()["id"], created.headers["X-Client-Token"]
    failed = wait_for(client, run_id)
    assert failed["status"] == "failed" and "HTTP 503" in failed["error"]
    assert failed["documents"][0]["status"] == "failed"
    assert failed["documents"][0]["error"] == "the page answered HTTP 503"

    library.fail_status = 0
    retry_url = f"/api/verifications/{run_id}/retry"
    # It reads the creator's documents: nobody else may make it read them again.
    stranger = client.post(retry_url, content_type="application/json", headers={"X-Client-Token": "s" * 43})
    assert stranger.status_code == 403 and "started this verification" in stranger.json()["detail"]
    assert client.post(retry_url, content_type="application/json").status_code == 403
    retried = client.post(retry_url, content_type="application/json", headers={"X-Client-Token": token})
    assert retried.status_code == 202, retried.content
    result = wait_for(client, run_id)

    assert result["status"] == "done", result["error"]
    assert result["documents"][0]["status"] == "done"
    assert any(e["verdict"] == "supported" for e in all_evidence(result))
    assert world.serper.queries == []


@pytest.mark.django_db(transaction=True)
def test_a_document_that_took_too_long_to_read_is_not_read_again_on_retry(client, world, celery_worker, settings):
    # 1.9 MB of drawing instructions on one page (under the page limit): seconds of CPU to read.
    settings.CPU_TIME_LIMIT = 1.0
    heavy = inflate_page(make_pdf([["The Eiffel Tower was completed in 1889."]]), 0, megabytes=1.9)
    payload = {"text": SUMMARY, "settings": {"evidence": "documents", "retrieval_mode": "sparse"}}
    created = post_files(client, payload, [upload("heavy.pdf", heavy), upload("notes.md", NOTES)])
    run_id, token = created.json()["id"], created.headers["X-Client-Token"]
    result = wait_for(client, run_id)
    assert result["status"] == "done", result["error"]
    slow = next(d for d in result["documents"] if d["name"] == "heavy.pdf")
    assert (slow["status"], slow["error"]) == ("failed", "the PDF took too long to read (over 1 s)")
    assert result["retryable"] == 0

    retried = client.post(
        f"/api/verifications/{run_id}/retry", content_type="application/json", headers={"X-Client-Token": token}
    )

    assert retried.status_code == 409 and "Nothing to retry" in retried.json()["detail"]
    again = client.get(f"/api/verifications/{run_id}").json()
    assert again["status"] == "done" and again["retries"] == 0
    assert next(d for d in again["documents"] if d["name"] == "heavy.pdf")["status"] == "failed"
