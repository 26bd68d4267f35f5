"""/healthz and /readyz, and the healthcheck commands of the web server, worker and beat
(verification/worker/health.py). With real processes and services: tests/test_image.py."""

import os
import socket
import threading
import time
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from tests.conftest import free_port
from verification.models import WorkerProcess
from verification.worker import health


@pytest.fixture
def redis_services(settings):
    """The broker on Redis, as in a deployment (the tests default to the embedded worker)."""
    settings.CELERY_EMBEDDED_WORKER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"
    return settings


@pytest.fixture
def answering_broker(redis_services, redis_url):
    redis_services.CELERY_BROKER_URL = redis_url
    return redis_services


def redis_cache(url: str) -> dict:
    return {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}}


class HungService:
    """A port that takes connections and answers none (a hung service) until `hang_up()`, which
    closes it: the connections waiting in it are reset. `hung_up` is set before they are. It
    hangs up by itself after `hold_s`: a check that waits for it ends then (and its test fails
    on the order of events) instead of holding the suite."""

    def __init__(self, hold_s: float = 60.0) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(8)
        self.url = f"redis://127.0.0.1:{self._socket.getsockname()[1]}/0"
        self.hung_up = threading.Event()
        self._lock = threading.Lock()
        self._timer = threading.Timer(hold_s, self.hang_up)
        self._timer.daemon = True
        self._timer.start()

    def hang_up(self) -> None:
        self._timer.cancel()
        with self._lock:
            if not self.hung_up.is_set():
                self.hung_up.set()
                self._socket.close()


@pytest.fixture
def silent_server():
    service = HungService()
    yield service
    service.hang_up()


def test_healthz_is_200_when_the_database_broker_and_cache_answer(client, db, answering_broker, settings, redis_url):
    settings.CACHES = redis_cache(redis_url)

    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok", "cache": "ok"}}


def test_healthz_says_the_broker_is_embedded_without_redis(client, db):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "broker": "embedded", "cache": "ok"}


def test_healthz_is_503_naming_the_broker_when_redis_does_not_answer(client, db, redis_services):
    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "down",
        "checks": {"database": "ok", "broker": "down", "cache": "ok"},
        "down": ["broker"],
    }


def test_healthz_is_503_naming_the_cache_when_it_does_not_answer(client, db, answering_broker, settings):
    settings.CACHES = redis_cache(f"redis://127.0.0.1:{free_port()}/0")

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["down"] == ["cache"]


def test_a_service_that_hangs_is_down_within_the_check_timeout(
    client, db, redis_services, silent_server, settings, monkeypatch
):
    monkeypatch.setattr(health, "CHECK_TIMEOUT_S", 0.5)
    settings.CELERY_BROKER_URL = silent_server.url
    settings.CACHES = redis_cache(silent_server.url)

    response = client.get("/healthz")

    # The answer came while the service still held every connection unanswered: the checks
    # gave up on it, it did not end them (however slow the machine, it holds them for 60 s).
    assert not silent_server.hung_up.is_set(), "/healthz answered only once the hung service hung up"
    assert response.status_code == 503
    assert response.json()["down"] == ["broker", "cache"]


def test_health_endpoints_answer_on_any_host_over_plain_http_and_only_to_get(client, db, settings):
    settings.ALLOWED_HOSTS = ["factsite.example.org"]
    settings.SECURE_SSL_REDIRECT = True

    assert client.get("/healthz", HTTP_HOST="127.0.0.1:8000").status_code == 200
    assert client.head("/readyz", HTTP_HOST="127.0.0.1:8000").status_code == 200
    assert client.post("/healthz", HTTP_HOST="127.0.0.1:8000").status_code == 405
    assert client.get("/", HTTP_HOST="127.0.0.1:8000").status_code == 400  # everything else still checks


def test_readyz_is_503_until_every_migration_is_applied(client, transactional_db, monkeypatch):
    monkeypatch.setattr(health, "_migrated", False)
    recorder = MigrationRecorder.Migration.objects
    last = recorder.filter(app="verification").latest("id")
    last.delete()
    try:
        not_ready = client.get("/readyz")
    finally:
        recorder.create(app=last.app, name=last.name)

    ready = client.get("/readyz")

    assert not_ready.status_code == 503
    assert not_ready.json() == {"status": "down", "checks": {"migrations": "down"}, "down": ["migrations"]}
    assert ready.status_code == 200
    assert ready.json() == {"status": "ok", "checks": {"migrations": "ok"}}


# --- the healthcheck commands


def beat_row(name: str, seconds_ago: float, kind=WorkerProcess.Kind.CELERY) -> None:
    at = timezone.now() - timedelta(seconds=seconds_ago)
    WorkerProcess.objects.create(name=name, kind=kind, started_at=at, beat_at=at)


def test_the_worker_check_passes_only_when_a_celery_worker_of_this_host_beat_lately(db):
    here = socket.gethostname()
    beat_row(f"{here}:7:old", seconds_ago=60)
    beat_row("other-host:7:new", seconds_ago=1)
    beat_row(f"{here}:8:embedded", seconds_ago=1, kind=WorkerProcess.Kind.EMBEDDED)
    assert "no worker on" in health.worker_is_healthy()

    beat_row(f"{here}:9:new", seconds_ago=1)

    assert health.worker_is_healthy() is None


def test_the_beat_check_passes_only_when_beat_ticked_within_three_sweep_intervals(settings, tmp_path):
    settings.CELERY_BEAT_SCHEDULE_FILENAME = str(tmp_path / "schedule")
    settings.SWEEP_INTERVAL = 10
    marker = health.beat_marker(settings.CELERY_BEAT_SCHEDULE_FILENAME)
    assert "has not ticked yet" in health.beat_is_healthy()

    marker.touch()
    assert health.beat_is_healthy() is None

    os.utime(marker, (time.time() - 41, time.time() - 41))
    assert "has not ticked for" in health.beat_is_healthy()


def test_the_web_check_reports_what_the_server_answered(live_server, settings):
    settings.CELERY_EMBEDDED_WORKER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"

    problem = health.web_is_healthy(live_server.url)

    assert problem.startswith("/healthz: 503 ") and '"down": ["broker"]' in problem
    assert health.web_is_healthy(f"http://127.0.0.1:{free_port()}").startswith("/readyz: ")


def test_a_healthcheck_that_cannot_reach_the_database_fails_with_the_reason_in_one_line(monkeypatch, capsys):
    def unreachable():
        raise OperationalError('connection to server at "127.0.0.1", port 9 failed: Connection refused')

    monkeypatch.setattr(health, "worker_is_healthy", unreachable)

    assert health.main(["worker"]) == 1
    assert capsys.readouterr().err == (
        'OperationalError: connection to server at "127.0.0.1", port 9 failed: Connection refused\n'
    )
    assert health.main(["nothing"]) == 2
