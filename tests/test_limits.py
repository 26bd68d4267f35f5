"""Limits (issue 8): API writes only as JSON, RUNS_PER_HOUR per client address, and the claim
budget of a run (MAX_CLAIMS_PER_RUN) checked up front, through the web form (plain and HTMX)
and the API. The command line's side is in test_cli.py (it runs as a separate process)."""

import hashlib
import hmac
import io
import json
import uuid
from datetime import timedelta

import lxml.html
import pytest
from django.utils import timezone

from verification.models import Verification

HTMX = {"HX-Request": "true"}
SENTENCE = "The Eiffel Tower is in Paris, France."
THREE_SENTENCES = "The Eiffel Tower is in Paris. It was completed in 1889. It is 330 metres tall."


@pytest.fixture
def configured(configured):
    """The shared settings, with the client's address taken from the connection: a run is
    created, and nothing is ever called (the test transaction never commits)."""
    configured.TRUSTED_PROXY_COUNT = 0
    return configured


def key_of(settings, address: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), address.encode(), hashlib.sha256).hexdigest()


def earlier_run(settings, address: str, minutes_ago: float) -> Verification:
    run = Verification.objects.create(text=SENTENCE, settings={}, client=key_of(settings, address))
    Verification.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    return run


def api_post(client, body, **extra):
    return client.post("/api/verifications", body, content_type="application/json", **extra)


def form_post(client, data, *, htmx: bool, **extra):
    return client.post("/", data, headers=HTMX if htmx else {}, **extra)


def parse(response):
    return lxml.html.document_fromstring(response.content.decode())


def textarea_value(doc) -> str:
    (textarea,) = doc.cssselect("textarea[name=text]")
    text = textarea.text_content()
    return text[1:] if text.startswith("\n") else text  # HTML drops the newline after <textarea>


# --- API writes only as JSON


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        pytest.param("text/plain", json.dumps({"text": SENTENCE}), id="text-plain-json-body"),
        pytest.param("text/plain;charset=UTF-8", json.dumps({"text": SENTENCE}), id="text-plain-charset"),
        pytest.param("text/plain", "text=not json at all", id="text-plain-not-json"),
        pytest.param("application/x-www-form-urlencoded", "text=The+Eiffel+Tower", id="form-urlencoded"),
        pytest.param(
            "multipart/form-data; boundary=x",
            '--x\r\nContent-Disposition: form-data; name="text"\r\n\r\nhi\r\n--x--',
            id="multipart",
        ),
        pytest.param("", json.dumps({"text": SENTENCE}), id="no-content-type"),
    ],
)
def test_api_refuses_a_body_that_is_not_declared_json_and_creates_nothing(client, configured, content_type, body):
    response = client.post("/api/verifications", body, content_type=content_type)

    assert response.status_code == 415
    assert response["Content-Type"].startswith("application/json")
    assert "application/json" in response.json()["detail"]
    assert not Verification.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"]
)
def test_api_accepts_json_with_or_without_a_charset(client, configured, content_type):
    response = client.post("/api/verifications", json.dumps({"text": SENTENCE}), content_type=content_type)

    assert response.status_code == 201, response.content
    assert Verification.objects.get().text == SENTENCE


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/steps/segment", "/api/steps/score", f"/api/verifications/{uuid.uuid4()}/retry"])
def test_every_api_post_refuses_a_text_plain_body(client, path):
    response = client.post(path, json.dumps({"text": SENTENCE, "evidence": []}), content_type="text/plain")

    assert response.status_code == 415
    assert "application/json" in response.json()["detail"]


TOKEN = "a-caller-token-0123456789"


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["", "application/x-www-form-urlencoded"], ids=["no-type", "form-type"])
def test_a_post_without_a_body_is_not_refused_as_not_json(client, configured, content_type):
    """`curl -X POST …/cancel`: nothing is sent to be read as JSON, so nothing is refused (it was 415)."""
    headers = {"X-Client-Token": TOKEN}
    run_id = api_post(client, {"text": SENTENCE}, headers=headers).json()["id"]

    cancelled = client.generic(
        "POST", f"/api/verifications/{run_id}/cancel", b"", content_type=content_type, headers=headers
    )
    retried = client.generic(
        "POST", f"/api/verifications/{run_id}/retry", b"", content_type=content_type, headers=headers
    )

    assert cancelled.status_code == 202, cancelled.content
    assert Verification.objects.get(pk=run_id).status == "cancelled"
    # The endpoint's own answer: a cancelled run is started again with Edit text, not retried.
    assert retried.status_code == 409 and "cancelled" in retried.json()["detail"]


@pytest.mark.django_db
def test_a_body_is_still_refused_unless_it_is_declared_json(client, configured):
    headers = {"X-Client-Token": TOKEN}
    run_id = api_post(client, {"text": SENTENCE}, headers=headers).json()["id"]

    response = client.generic(
        "POST", f"/api/verifications/{run_id}/cancel", b"{}", content_type="text/plain", headers=headers
    )

    assert response.status_code == 415
    assert Verification.objects.get(pk=run_id).status != "cancelled"


def test_api_reads_still_work_without_a_content_type(client):
    assert client.get("/api/openapi.json").status_code == 200


@pytest.mark.django_db
def test_the_web_form_still_takes_a_form_post(client, configured):
    assert client.post("/", {"text": SENTENCE}).status_code == 302


# --- RUNS_PER_HOUR: the API


@pytest.mark.django_db
def test_api_refuses_runs_over_the_hourly_limit_with_429_and_creates_nothing(client, configured, settings):
    settings.RUNS_PER_HOUR = 2

    first, second = api_post(client, {"text": SENTENCE}), api_post(client, {"text": SENTENCE})
    third = api_post(client, {"text": SENTENCE})

    assert (first.status_code, second.status_code) == (201, 201)
    assert third.status_code == 429
    assert third["Content-Type"].startswith("application/json")
    assert third.json()["detail"] == (
        "Too many verifications from your address: 2 in the last hour (RUNS_PER_HOUR=2). Try again in 60 minutes."
    )
    assert 3595 <= int(third["Retry-After"]) <= 3600
    assert Verification.objects.count() == 2


@pytest.mark.django_db
def test_retry_after_is_when_the_oldest_run_in_the_window_leaves_it(client, configured, settings):
    settings.RUNS_PER_HOUR = 2
    earlier_run(settings, "127.0.0.1", minutes_ago=75)  # out of the window: not counted
    earlier_run(settings, "127.0.0.1", minutes_ago=50)
    earlier_run(settings, "127.0.0.1", minutes_ago=20)

    response = api_post(client, {"text": SENTENCE})

    assert response.status_code == 429
    assert 595 <= int(response["Retry-After"]) <= 600
    assert response.json()["detail"].endswith("2 in the last hour (RUNS_PER_HOUR=2). Try again in 10 minutes.")
    assert Verification.objects.count() == 3


@pytest.mark.django_db
def test_a_run_is_allowed_again_once_the_oldest_has_left_the_window(client, configured, settings):
    settings.RUNS_PER_HOUR = 2
    earlier_run(settings, "127.0.0.1", minutes_ago=61)
    earlier_run(settings, "127.0.0.1", minutes_ago=59)

    assert api_post(client, {"text": SENTENCE}).status_code == 201
    assert api_post(client, {"text": SENTENCE}).status_code == 429


@pytest.mark.django_db
def test_a_lowered_limit_waits_until_enough_runs_have_left_the_window(client, configured, settings):
    settings.RUNS_PER_HOUR = 2
    for minutes_ago in (55, 40, 30):  # made while the limit was higher
        earlier_run(settings, "127.0.0.1", minutes_ago)

    response = api_post(client, {"text": SENTENCE})

    # Two runs must leave before one more fits: the one of 40 minutes ago leaves in 20.
    assert 1195 <= int(response["Retry-After"]) <= 1200
    assert "3 in the last hour (RUNS_PER_HOUR=2). Try again in 20 minutes." in response.json()["detail"]


@pytest.mark.django_db
def test_different_addresses_are_counted_separately(client, configured, settings):
    settings.RUNS_PER_HOUR = 1

    assert api_post(client, {"text": SENTENCE}, REMOTE_ADDR="192.0.2.1").status_code == 201
    assert api_post(client, {"text": SENTENCE}, REMOTE_ADDR="192.0.2.1").status_code == 429
    assert api_post(client, {"text": SENTENCE}, REMOTE_ADDR="192.0.2.2").status_code == 201
    assert api_post(client, {"text": SENTENCE}, REMOTE_ADDR="192.0.2.2").status_code == 429


@pytest.mark.django_db
def test_a_run_stores_a_keyed_hash_of_the_address_never_the_address(client, configured, settings):
    api_post(client, {"text": SENTENCE}, REMOTE_ADDR="192.0.2.1")

    stored = Verification.objects.get().client
    assert stored == key_of(settings, "192.0.2.1")
    assert stored != hashlib.sha256(b"192.0.2.1").hexdigest()  # keyed: not guessable from the address alone
    assert "192.0.2.1" not in stored


@pytest.mark.django_db
@pytest.mark.parametrize("limit", [0, -1])
def test_runs_per_hour_zero_turns_the_limit_off(client, configured, settings, limit):
    settings.RUNS_PER_HOUR = limit
    for minutes_ago in range(5):
        earlier_run(settings, "127.0.0.1", minutes_ago)

    assert api_post(client, {"text": SENTENCE}).status_code == 201
    assert client.post("/", {"text": SENTENCE}).status_code == 302
    assert Verification.objects.count() == 7


@pytest.mark.django_db
def test_without_trusted_proxies_x_forwarded_for_is_ignored(client, configured, settings):
    settings.RUNS_PER_HOUR = 1

    assert api_post(client, {"text": SENTENCE}, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 201
    assert api_post(client, {"text": SENTENCE}, HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 429
    assert Verification.objects.get().client == key_of(settings, "127.0.0.1")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("proxies", "forwarded", "address"),
    [
        pytest.param(1, "198.51.100.7", "198.51.100.7", id="one-proxy"),
        pytest.param(1, "203.0.113.9, 198.51.100.7", "198.51.100.7", id="one-proxy-client-sent-its-own"),
        pytest.param(2, "203.0.113.9, 198.51.100.7", "203.0.113.9", id="two-proxies"),
        pytest.param(2, "6.6.6.6, 203.0.113.9,198.51.100.7", "203.0.113.9", id="two-proxies-spoofed-left"),
        pytest.param(3, "203.0.113.9, 198.51.100.7", "203.0.113.9", id="fewer-entries-than-proxies"),
    ],
)
def test_behind_trusted_proxies_the_client_is_the_entry_the_outermost_appended(
    client, configured, settings, proxies, forwarded, address
):
    settings.TRUSTED_PROXY_COUNT = proxies

    api_post(client, {"text": SENTENCE}, REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR=forwarded)

    assert Verification.objects.get().client == key_of(settings, address)


@pytest.mark.django_db
def test_behind_a_proxy_a_client_cannot_escape_the_limit_by_forging_x_forwarded_for(client, configured, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    settings.RUNS_PER_HOUR = 1

    first = api_post(client, {"text": SENTENCE}, REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="1.1.1.1, 203.0.113.9")
    forged = api_post(client, {"text": SENTENCE}, REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="2.2.2.2, 203.0.113.9")

    assert (first.status_code, forged.status_code) == (201, 429)


# --- RUNS_PER_HOUR: the web form


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_the_form_refuses_runs_over_the_limit_saying_why_and_keeping_the_text(client, configured, settings, htmx):
    settings.RUNS_PER_HOUR = 1
    earlier_run(settings, "127.0.0.1", minutes_ago=48)
    text = "The Eiffel Tower is in Paris.\nIt was completed in 1889."

    response = form_post(client, {"text": text, "retrieval_mode": "sparse", "top_k_results": "7"}, htmx=htmx)

    assert response.status_code == 429
    assert 715 <= int(response["Retry-After"]) <= 720
    doc = parse(response)
    (notice,) = doc.cssselect("#limit-error")
    assert notice.text_content() == (
        "Too many verifications from your address: 1 in the last hour (RUNS_PER_HOUR=1). Try again in 12 minutes."
    )
    (form,) = doc.cssselect("form.verify-form")
    assert notice.getnext() is form  # above the form
    assert textarea_value(doc) == text
    assert doc.cssselect("input[name=retrieval_mode][value=sparse]")[0].get("checked") is not None
    assert doc.cssselect("input[name=top_k_results]")[0].get("value") == "7"
    assert Verification.objects.count() == 1


@pytest.mark.django_db
def test_the_form_stores_the_client_and_counts_api_runs_from_the_same_address(client, configured, settings):
    settings.RUNS_PER_HOUR = 2

    assert client.post("/", {"text": SENTENCE}).status_code == 302
    assert api_post(client, {"text": SENTENCE}).status_code == 201
    assert client.post("/", {"text": SENTENCE}).status_code == 429
    assert set(Verification.objects.values_list("client", flat=True)) == {key_of(settings, "127.0.0.1")}


@pytest.mark.django_db
def test_an_edit_counts_as_a_run_and_a_refused_edit_keeps_its_link(client, configured, settings):
    settings.RUNS_PER_HOUR = 2
    old = earlier_run(settings, "127.0.0.1", minutes_ago=10)

    accepted = client.post("/", {"text": "The Eiffel Tower is in Rome.", "edited_from": str(old.pk)})
    refused = client.post("/", {"text": "The Eiffel Tower is in Lyon.", "edited_from": str(old.pk)})

    assert accepted.status_code == 302
    assert refused.status_code == 429
    doc = parse(refused)
    assert doc.cssselect("input[name=edited_from]")[0].get("value") == str(old.pk)
    assert textarea_value(doc) == "The Eiffel Tower is in Lyon."
    assert Verification.objects.count() == 2


@pytest.mark.django_db
def test_the_form_shows_no_limit_notice_under_the_limit(client, configured, settings):
    settings.RUNS_PER_HOUR = 1

    assert not parse(client.get("/")).cssselect("#limit-error")
    assert not parse(client.post("/", {"text": ""})).cssselect("#limit-error")


# --- MAX_CLAIMS_PER_RUN, checked up front


def budget_message(sentences: int, budget: int) -> str:
    return (
        f"This text has {sentences} sentences; a run checks at most {budget} claims (MAX_CLAIMS_PER_RUN). "
        "Shorten it or split it into several runs."
    )


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_the_form_refuses_more_sentences_than_the_budget_keeping_the_text(client, configured, settings, htmx):
    settings.MAX_CLAIMS_PER_RUN = 2

    response = form_post(client, {"text": THREE_SENTENCES}, htmx=htmx)

    assert response.status_code == 400
    doc = parse(response)
    (error,) = doc.cssselect("#text-error")
    assert error.text_content() == budget_message(3, 2)
    assert textarea_value(doc) == THREE_SENTENCES
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_more_sentences_than_the_budget_like_an_over_long_text(client, configured, settings):
    settings.MAX_CLAIMS_PER_RUN = 2

    response = api_post(client, {"text": THREE_SENTENCES})

    assert response.status_code == 400
    body = response.json()
    assert body["errors"] == {"text": [budget_message(3, 2)]}
    assert budget_message(3, 2) in body["detail"]
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_a_text_exactly_at_the_budget_is_accepted(client, configured, settings):
    settings.MAX_CLAIMS_PER_RUN = 3

    assert api_post(client, {"text": THREE_SENTENCES}).status_code == 201
    assert client.post("/", {"text": THREE_SENTENCES}).status_code == 302


@pytest.mark.django_db
def test_sentences_are_counted_as_the_run_splits_them(client, configured, settings):
    """Abbreviations and times do not end a sentence; a newline and a glued sentence do."""
    settings.MAX_CLAIMS_PER_RUN = 2
    two = "Dr. Smith moved to the U.S. in 1990. He arrived at 5 p.m. on a Monday."
    three = "The tower is in Paris.It opened in 1889.\nIt is 330 metres tall"

    assert api_post(client, {"text": two}).status_code == 201
    refused = api_post(client, {"text": three})
    assert refused.status_code == 400
    assert budget_message(3, 2) in refused.json()["detail"]


@pytest.mark.django_db
def test_a_budget_of_zero_is_no_limit(client, configured, settings):
    settings.MAX_CLAIMS_PER_RUN = 0
    text = " ".join(f"Fact number {n} is true." for n in range(200))

    assert api_post(client, {"text": text}).status_code == 201


@pytest.mark.django_db
def test_the_budget_refusal_names_the_sentences_and_the_budget(client, configured, settings):
    settings.MAX_CLAIMS_PER_RUN = 60
    text = " ".join(f"Fact number {n} is true." for n in range(75))

    response = api_post(client, {"text": text})

    assert response.status_code == 400
    assert budget_message(75, 60) in response.json()["detail"]


def test_about_states_the_limits_in_force(client, settings):
    settings.MAX_CLAIMS_PER_RUN, settings.RUNS_PER_HOUR = 45, 12

    page = client.get("/about").content.decode()

    assert "A run checks at most 45 claims: a text with more sentences is refused" in page
    assert "One address may start 12 runs an hour." in page

    settings.MAX_CLAIMS_PER_RUN, settings.RUNS_PER_HOUR = 0, 0
    page = client.get("/about").content.decode()
    assert "claims:" not in page and "runs an hour" not in page


# --- A trail's size (issue 38.3): TRAIL_MAX_CHARS allowed 5,000,000 characters while any body over
# DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) was refused. Here the body limit is far below the trail's.

TRAIL_CHARS = 60_000
FINAL = "The café opened in 1889."


def sized_trail(chars: int) -> dict:
    """A trail holding `chars` characters of text, most of them written as \\u escapes (6 bytes each)."""
    source = ("Le café ouvre à huit heures, près du marché. " * (chars // 40))[: chars - len(FINAL)]
    return {"nodes": [{"id": "a", "text": source}, {"id": "f", "text": FINAL, "from": ["a"]}]}


@pytest.fixture
def trail_limits(configured):
    configured.TRAIL_MAX_CHARS = TRAIL_CHARS
    configured.DATA_UPLOAD_MAX_MEMORY_SIZE = 20_000
    configured.MAX_UPLOAD_BYTES = 20_000
    configured.TRAIL_MAX_NODES = 10
    return configured


@pytest.mark.django_db
def test_an_api_trail_as_large_as_trail_max_chars_is_accepted(client, trail_limits):
    body = json.dumps({"trail": sized_trail(TRAIL_CHARS)})
    assert len(body) > 4 * trail_limits.DATA_UPLOAD_MAX_MEMORY_SIZE

    response = client.post("/api/trails", body, content_type="application/json")

    assert response.status_code == 201, response.content
    assert sum(len(node.text) for node in Verification.objects.get().trail_nodes.all()) == TRAIL_CHARS


@pytest.mark.django_db
def test_an_api_trail_one_character_over_trail_max_chars_is_refused_naming_the_limit(client, trail_limits):
    response = client.post("/api/trails", {"trail": sized_trail(TRAIL_CHARS + 1)}, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["detail"] == (
        "The trail is not valid: the texts hold 60,001 characters, more than the limit of 60,000."
    )
    assert not Verification.objects.exists()


@pytest.mark.django_db
def test_an_api_body_larger_than_any_trail_is_refused_unread_naming_trail_max_chars(client, trail_limits):
    body = json.dumps({"trail": sized_trail(TRAIL_CHARS), "pad": " " * 1_000_000})

    response = client.post("/api/trails", body, content_type="application/json")

    assert response.status_code == 413
    assert "a trail may hold (TRAIL_MAX_CHARS)" in response.json()["detail"]
    assert response.json()["detail"].startswith("The trail is 1.0 MB; the limit is 0.4 MB, enough for the 60,000")


@pytest.mark.django_db
def test_other_api_bodies_keep_djangos_limit(client, trail_limits):
    response = api_post(client, {"text": SENTENCE * 1_000})

    assert response.status_code == 413
    assert "the limit is 20,000 bytes" in response.json()["detail"]


@pytest.mark.django_db
def test_a_trail_file_as_large_as_trail_max_chars_is_taken_by_the_form(client, trail_limits):
    upload = io.BytesIO(json.dumps(sized_trail(TRAIL_CHARS)).encode())
    upload.name = "trail.json"
    assert upload.getbuffer().nbytes > 4 * trail_limits.MAX_UPLOAD_BYTES

    response = client.post("/trail", {"source-count": 1, "trail_file": upload})

    assert response.status_code == 302, response.content.decode()[:2000]
    assert Verification.objects.get().settings["evidence"] == "trail"


@pytest.mark.django_db
def test_a_trail_file_one_character_over_is_refused_by_the_form_naming_the_limit(client, trail_limits):
    upload = io.BytesIO(json.dumps(sized_trail(TRAIL_CHARS + 1)).encode())
    upload.name = "trail.json"

    response = client.post("/trail", {"source-count": 1, "trail_file": upload})

    assert response.status_code == 400
    assert "the texts hold 60,001 characters, more than the limit of 60,000." in response.content.decode()
    assert not Verification.objects.exists()
