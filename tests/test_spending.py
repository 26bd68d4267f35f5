"""Every path that spends is limited per client and hour (issue 16): step API calls
(STEP_CALLS_PER_HOUR), retries (RETRIES_PER_HOUR) and uploaded bytes (UPLOAD_MB_PER_HOUR), each
refused with 429, Retry-After and a sentence naming the limit; a request that fails spends nothing."""

import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from verification.access import limits, ownership
from verification.models import Spending, Verification

SENTENCE = "The Eiffel Tower is in Paris, France."
NOTES = b"# Notes\n\nThe Eiffel Tower is in Paris.\n"


def judge(client, **headers):
    body = {"claim": SENTENCE, "passages": ["The Eiffel Tower stands in Paris."]}
    return client.post("/api/steps/judge", body, content_type="application/json", headers=headers)


def spent_earlier(client_key: str, kind: str, *, amount: int = 1, minutes_ago: float) -> None:
    row = Spending.objects.create(client=client_key, kind=kind, amount=amount)
    Spending.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))


@pytest.mark.django_db
def test_step_calls_over_the_hourly_limit_get_429_and_reach_no_model(client, world, settings):
    settings.STEP_CALLS_PER_HOUR = 3
    settings.TRUSTED_PROXY_COUNT = 0

    answered = [judge(client).status_code for _ in range(3)]
    refused = judge(client)

    assert answered == [200, 200, 200]
    assert refused.status_code == 429 and refused["Content-Type"].startswith("application/json")
    assert refused.json()["detail"] == (
        "Too many step calls from your address: 3 in the last hour (STEP_CALLS_PER_HOUR=3). Try again in 60 minutes."
    )
    assert 3595 <= int(refused["Retry-After"]) <= 3600
    assert world.llm.calls["judgements"] == 3
    # Another address is another client; the cheap steps are not counted.
    assert judge(client, **{"X-Forwarded-For": "1.2.3.4"}).status_code == 429  # no trusted proxy: same client
    segment = client.post("/api/steps/segment", {"text": SENTENCE}, content_type="application/json")
    assert segment.status_code == 200


@pytest.mark.django_db
def test_a_step_call_that_fails_spends_nothing(client, world, settings):
    settings.STEP_CALLS_PER_HOUR = 2
    world.llm.fail_words = {"Eiffel": 500}

    failed = [judge(client).status_code for _ in range(3)]
    world.llm.fail_words = {}

    assert all(status >= 500 for status in failed)
    assert [judge(client).status_code for _ in range(2)] == [200, 200]
    assert judge(client).status_code == 429


@pytest.mark.django_db
def test_retry_after_is_when_enough_of_the_oldest_spending_leaves_the_window(client, configured, settings):
    settings.STEP_CALLS_PER_HOUR = 2
    key = limits.client_key("127.0.0.1")
    spent_earlier(key, "step", minutes_ago=70)  # out of the window
    spent_earlier(key, "step", minutes_ago=45)
    spent_earlier(key, "step", minutes_ago=20)

    response = client.post("/api/steps/decompose", {"sentence": SENTENCE}, content_type="application/json")

    assert response.status_code == 429
    assert 895 <= int(response["Retry-After"]) <= 900  # the one of 45 minutes ago leaves in 15
    # What left the window is forgotten; the refused call is not recorded.
    assert Spending.objects.filter(client=key).count() == 2


@pytest.mark.django_db
def test_retries_over_the_hourly_limit_get_429_from_the_api_and_the_page(client, configured, settings):
    settings.RETRIES_PER_HOUR = 1
    run = Verification.objects.create(text=SENTENCE, settings={}, status="failed", finished_at=timezone.now())
    Spending.objects.create(client=limits.client_key("127.0.0.1"), kind="retry")

    api = client.post(f"/api/verifications/{run.pk}/retry", content_type="application/json")
    page = client.post(f"/v/{run.pk}/retry")

    assert api.status_code == 429 and "RETRIES_PER_HOUR=1" in api.json()["detail"]
    assert page.status_code == 429 and "Too many retries from your address" in page.content.decode()
    assert int(page["Retry-After"]) > 0
    assert Verification.objects.get(pk=run.pk).retries == 0  # nothing was queued again


@pytest.mark.django_db
def test_a_refused_retry_spends_nothing(client, configured, settings):
    settings.RETRIES_PER_HOUR = 1
    token = ownership.new_token()
    run = Verification.objects.create(  # 409: still going
        text=SENTENCE, settings={}, status="running", creator=ownership.creator_key(token)
    )

    answers = [
        client.post(
            f"/api/verifications/{run.pk}/retry", content_type="application/json", headers={ownership.HEADER: token}
        )
        for _ in range(3)
    ]

    assert [a.status_code for a in answers] == [409, 409, 409]
    assert not Spending.objects.exists()


def files_post(client, names, size):
    payload = {"text": SENTENCE, "settings": {"evidence": "both"}}
    files = [
        SimpleUploadedFile(name, NOTES + b"x" * (size - len(NOTES)), content_type="text/markdown") for name in names
    ]
    return client.post(
        "/api/verifications",
        {"payload": json.dumps(payload), "files": files},
        headers={"X-Requested-With": "test"},
    )


@pytest.mark.django_db
def test_uploads_over_the_hourly_megabytes_get_429_and_store_nothing(client, configured, settings):
    settings.UPLOAD_MB_PER_HOUR = 1
    settings.MAX_UPLOAD_BYTES = 2**20

    first = files_post(client, ["a.md", "b.md"], 300_000)
    second = files_post(client, ["c.md", "d.md"], 300_000)

    assert first.status_code == 201, first.content
    assert second.status_code == 429
    assert second.json()["detail"].startswith("Too many megabytes uploaded from your address: 1 in the last hour")
    assert "UPLOAD_MB_PER_HOUR=1" in second.json()["detail"]
    assert Verification.objects.count() == 1


@pytest.mark.django_db
def test_the_form_keeps_the_text_when_uploads_are_over_the_limit(client, configured, settings):
    settings.UPLOAD_MB_PER_HOUR = 1
    Spending.objects.create(client=limits.client_key("127.0.0.1"), kind="upload", amount=2**20)

    response = client.post(
        "/", {"text": SENTENCE, "evidence": "both", "files": [SimpleUploadedFile("n.md", NOTES * 100)]}
    )

    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many megabytes uploaded from your address" in page and SENTENCE in page
    assert not Verification.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("setting", ["STEP_CALLS_PER_HOUR", "RETRIES_PER_HOUR", "UPLOAD_MB_PER_HOUR"])
def test_zero_turns_a_spending_limit_off(client, configured, settings, setting):
    setattr(settings, setting, 0)
    budget = {"STEP_CALLS_PER_HOUR": limits.STEP_CALLS, "RETRIES_PER_HOUR": limits.RETRIES}.get(setting, limits.UPLOADS)

    outcomes = [limits.spend("someone", budget, 10**9) for _ in range(3)]

    assert outcomes == [None, None, None]
    assert not Spending.objects.exists()  # nothing is recorded for a limit that is off


@pytest.mark.django_db
def test_the_daily_cleanup_forgets_spending_no_window_counts(configured):
    from verification.worker import resume

    spent_earlier("gone", "step", minutes_ago=90)
    spent_earlier("recent", "step", minutes_ago=10)

    resume.delete_old_runs()

    assert list(Spending.objects.values_list("client", flat=True)) == ["recent"]
