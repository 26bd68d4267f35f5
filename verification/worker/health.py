"""Health of a deployment, for container healthchecks and load balancers.

`GET /healthz`: the services every process needs answer: the database, the broker and the cache.
200 when they all do, else 503 naming those that did not. `GET /readyz`: this process can serve:
its database has every migration applied (503 until the one-shot `migrate` has run).

Both are answered by the first middleware, before the allowed-hosts check and the https redirect:
a healthcheck asks for them on 127.0.0.1 over plain http. They say only ok or down (the error
goes to the log), so they tell a stranger nothing about the deployment.

`python -m verification.worker.health web|worker|beat` is each container's healthcheck: the web server's
two endpoints answer 200; a `celery worker` of this host has beaten (its WorkerProcess row, every
5 s); `celery beat` has ticked lately (BeatScheduler touches a file beside its schedule)."""

import logging
import os
import secrets
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import timedelta
from pathlib import Path

from celery.beat import PersistentScheduler
from django.conf import settings
from django.http import HttpResponseNotAllowed, JsonResponse

logger = logging.getLogger(__name__)

# A check with no answer by then counts as down: a healthcheck must answer even when a service
# holds connections open without answering.
CHECK_TIMEOUT_S = 5.0
_migrated = False  # once every migration is applied, it stays so for this process


class HealthMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response
        # Imported at start-up, not by the first checks (seconds on a busy machine, counted
        # against their timeout): the clients of the services and Django's migration loader.
        import django.core.cache.backends.redis  # noqa: F401
        import django.db.migrations.executor  # noqa: F401
        import redis  # noqa: F401

    def __call__(self, request):
        endpoint = ENDPOINTS.get(request.path_info)
        if endpoint is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        return endpoint()


def healthz() -> JsonResponse:
    return _answer(run_checks({"database": check_database, "broker": check_broker, "cache": check_cache}))


def readyz() -> JsonResponse:
    global _migrated
    if not _migrated:
        checks = run_checks({"migrations": check_migrations})
        _migrated = checks["migrations"] == "ok"
    else:
        checks = {"migrations": "ok"}
    checks.update(models_checked())
    return _answer(checks)


def models_checked() -> dict[str, str]:
    """`models`: "down" when `manage.py check_llm` last found a configured model unusable (a
    refused key, an unknown model or address), "ok" when it found them all usable; nothing when
    no check is kept. Read from the cache only: a readiness probe never asks the model itself."""
    from verification.clients import providers

    try:
        found = providers.model_checks()
    except Exception:  # the cache is down: /healthz says so
        return {}
    if not found:
        return {}
    unusable = {name: problem for name, problem in found.items() if problem}
    for name, problem in unusable.items():
        logger.warning("readyz: the model %s cannot be used: %s", name, problem)
    return {"models": "down" if unusable else "ok"}


ENDPOINTS = {"/healthz": healthz, "/readyz": readyz}


def _answer(checks: dict[str, str]) -> JsonResponse:
    down = [name for name, state in checks.items() if state == "down"]
    body = {"status": "down" if down else "ok", "checks": checks}
    if down:
        body["down"] = down
    return JsonResponse(body, status=503 if down else 200)


def run_checks(checks: dict[str, Callable[[], str]]) -> dict[str, str]:
    """Each check's answer ("ok", or what it found instead of a service: "embedded", "off"), or
    "down" when it raised or did not answer within CHECK_TIMEOUT_S. In threads, all at once, so
    one hanging service neither holds up the others nor the answer."""
    pool = ThreadPoolExecutor(max_workers=len(checks), thread_name_prefix="health")
    futures = {name: pool.submit(check) for name, check in checks.items()}
    wait(futures.values(), timeout=CHECK_TIMEOUT_S)
    pool.shutdown(wait=False, cancel_futures=True)
    states = {}
    for name, future in futures.items():
        if not future.done():
            logger.warning("health: %s did not answer within %g s", name, CHECK_TIMEOUT_S)
            states[name] = "down"
        elif future.exception() is not None:
            error = future.exception()
            logger.warning("health: %s is down: %s: %s", name, type(error).__name__, error)
            states[name] = "down"
        else:
            states[name] = future.result()
    return states


def check_database() -> str:
    from django.db import connection

    try:  # this thread's own connection, closed when done
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        connection.close()
    return "ok"


def check_migrations() -> str:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    try:
        executor = MigrationExecutor(connection)
        unapplied = executor.migration_plan(executor.loader.graph.leaf_nodes())
    finally:
        connection.close()
    if unapplied:
        raise RuntimeError(f"{len(unapplied)} migrations not applied")
    return "ok"


def check_broker() -> str:
    if settings.CELERY_EMBEDDED_WORKER:
        return "embedded"  # an in-memory queue in this very process
    import redis

    client = redis.Redis.from_url(
        settings.CELERY_BROKER_URL, socket_connect_timeout=CHECK_TIMEOUT_S, socket_timeout=CHECK_TIMEOUT_S
    )
    try:
        client.ping()
    finally:
        client.close()
    return "ok"


def check_cache() -> str:
    if settings.CACHE_TTL <= 0:
        return "off"
    from django.core.cache import cache

    key, value = f"factsite:health:{secrets.token_hex(8)}", secrets.token_hex(8)
    cache.set(key, value, 60)
    read = cache.get(key)
    cache.delete(key)
    if read != value:
        raise RuntimeError("a value written to the cache was not read back")
    return "ok"


# --- celery beat: a sign of life on every tick


def beat_marker(schedule_filename: str) -> Path:
    return Path(f"{schedule_filename}.alive")


class BeatScheduler(PersistentScheduler):
    """Celery's own scheduler (the schedule kept in a file) that also touches a file after every
    tick. A tick comes at least every SWEEP_INTERVAL seconds (the sweeper is sent that often), so
    a file left untouched for longer means a beat that stopped sending."""

    def tick(self, *args, **kwargs):
        interval = super().tick(*args, **kwargs)
        beat_marker(self.schedule_filename).touch()
        return interval


# --- the healthcheck commands


def web_is_healthy(base_url: str) -> str | None:
    """None when /readyz and /healthz both answer 200, else what one answered."""
    for path in ("/readyz", "/healthz"):
        try:
            with urllib.request.urlopen(base_url.rstrip("/") + path, timeout=2 * CHECK_TIMEOUT_S):
                pass
        except urllib.error.HTTPError as error:
            return f"{path}: {error.code} {error.read().decode(errors='replace')}"
        except OSError as error:
            return f"{path}: {error}"
    return None


def worker_is_healthy() -> str | None:
    """None when a `celery worker` of this host (its container) has beaten lately."""
    from verification import services
    from verification.models import WorkerProcess
    from verification.worker import heartbeat

    alive = services.worker_processes_alive(gone_after=timedelta(seconds=heartbeat.GONE_AFTER_S)).filter(
        name__startswith=f"{socket.gethostname()}:", kind=WorkerProcess.Kind.CELERY
    )
    return None if alive.exists() else f"no worker on {socket.gethostname()} beat in {heartbeat.GONE_AFTER_S:g} s"


def beat_is_healthy() -> str | None:
    """None when beat has ticked within three sweep intervals (and 10 s to send them)."""
    marker = beat_marker(settings.CELERY_BEAT_SCHEDULE_FILENAME)
    limit = 3 * settings.SWEEP_INTERVAL + 10
    try:
        silent = time.time() - marker.stat().st_mtime
    except FileNotFoundError:
        return f"beat has not ticked yet ({marker} is missing)"
    return None if silent <= limit else f"beat has not ticked for {silent:.0f} s ({marker})"


def main(argv: list[str]) -> int:
    usage = "usage: python -m verification.worker.health web [BASE_URL] | worker | beat"
    if not argv or argv[0] not in ("web", "worker", "beat"):
        print(usage, file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "factsite.settings")
    if argv[0] == "web":
        problem = web_is_healthy(argv[1] if len(argv) > 1 else "http://127.0.0.1:8000")
    else:
        import django

        django.setup()
        try:
            problem = worker_is_healthy() if argv[0] == "worker" else beat_is_healthy()
        except Exception as error:  # the database is down, say: unhealthy, with why in one line
            problem = f"{type(error).__name__}: {error}"
    print(problem or "ok", file=sys.stderr if problem else sys.stdout)
    return 1 if problem else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
