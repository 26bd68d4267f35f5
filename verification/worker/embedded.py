"""The worker inside another process, and a worker process's start and stop.

With REDIS_URL set, separate `celery worker` processes consume from Redis. Without it, the broker
is in memory and `ensure_embedded_worker()` starts a worker thread pool inside the process that
enqueues (web server or CLI), so a fresh clone needs nothing installed. Its sweeper timer stands
in for Celery beat, and names the sweeper's tasks by their dotted names as beat's schedule does."""

import logging
import os
import threading
import time

from celery.signals import task_postrun, task_received, task_rejected, task_revoked, worker_init, worker_shutting_down
from django.conf import settings
from django.db import close_old_connections

from factsite.celery import app
from verification.inputs.forms import DEFAULT_SETTINGS
from verification.worker import base, cpu, heartbeat, lifecycle

logger = logging.getLogger(__name__)
_embedded_lock = threading.Lock()
_embedded_worker = None
SWEEP_TASK = "verification.tasks.sweep"
CLEANUP_TASK = "verification.tasks.delete_old_runs"


def ensure_embedded_worker() -> bool:
    """Start the in-process worker once, if this deployment uses one, with its sweeper timer
    (runs a previous process left unfinished are resumed by it). Returns whether this process
    runs one. It takes tasks at once; the CPU pool warms up in the background meanwhile."""
    global _embedded_worker
    if not settings.CELERY_EMBEDDED_WORKER:
        return False
    with _embedded_lock:
        if _embedded_worker is not None:
            return True
        worker = app.WorkController(
            pool_cls="threads",
            concurrency=settings.CELERY_EMBEDDED_CONCURRENCY,
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            hostname=f"embedded@{os.getpid()}",
            loglevel=logging.WARNING,
        )
        threading.Thread(target=worker.start, name="celery-embedded", daemon=True).start()
        threading.Thread(target=_sweep_forever, args=(settings.SWEEP_INTERVAL,), name="sweeper", daemon=True).start()
        _embedded_worker = worker
        logger.info("started the embedded Celery worker (no REDIS_URL set)")
    heartbeat.start()
    lifecycle.install_stop_handlers()
    return True


def _sweep_forever(interval: float) -> None:
    """The embedded worker's stand-in for Celery beat: resume stalled runs, forever. (The worker's
    start above imported the tasks, as autodiscovery does.)"""
    last_cleanup: float | None = None
    while True:
        try:
            app.tasks[SWEEP_TASK]()
            if last_cleanup is None or time.monotonic() - last_cleanup > 24 * 3600:  # beat's daily schedule
                last_cleanup = time.monotonic()
                app.tasks[CLEANUP_TASK]()
        except Exception:  # a busy database: the next round tries again
            logger.warning("sweeping stalled runs failed", exc_info=True)
        finally:
            close_old_connections()
        time.sleep(interval)


def warm_up(*, wait: bool = False) -> None:
    """Start the CPU process pool now, loading the embedding model in it when runs use it by
    default: the first run after a start then does not wait for it."""
    dense = DEFAULT_SETTINGS["retrieval_mode"] == "dense"
    # Beat at once when warm: the run pages' "starting" notice ends with it.
    cpu.start(warm_embedding_model=settings.EMBEDDING_MODEL if dense else None, wait=wait, on_warm=heartbeat.beat_now)


@worker_init.connect
def _start_worker_process(**_) -> None:
    # In the background: the worker takes tasks at once. A task that needs the CPU pool waits
    # for it, holding its run, so the heartbeat says the run is alive meanwhile. (Also sent by
    # the embedded worker's WorkController.)
    heartbeat.start()
    # The first tasks ask the model (openai): imported now, not by them. Texts come split
    # (the web process, with the embedded worker, loads the splitter itself: wsgi.py). The CPU
    # pool starts after that import: its processes' imports (~1 s of CPU each) otherwise slowed
    # it, and so the first LLM request, by ~1 s on 2 cores, while the pool is first needed only
    # after that request and a search.
    lifecycle.preload_in_background(splitter=False, then=warm_up)


# The step tasks a worker process took and has not finished, for its beats (heartbeat.task_taken):
# the sweeper sends them again if it dies. The sweeper's own tasks are beat's, sent again anyway.
def _is_step(name: str | None) -> bool:
    return bool(name) and name.startswith(base.TASK_PREFIX) and name not in (SWEEP_TASK, CLEANUP_TASK)


@task_received.connect
def _taken(request=None, **_) -> None:
    if request is not None and _is_step(request.name):
        heartbeat.task_taken(request.id, request.name, request.args)


@task_postrun.connect
def _done(task_id=None, **_) -> None:
    heartbeat.task_done(task_id)


@task_revoked.connect
@task_rejected.connect
def _dropped(request=None, **_) -> None:
    if request is not None:
        heartbeat.task_done(request.id)


@worker_shutting_down.connect
def _stop_worker_process(**_) -> None:
    # A `celery worker` asked to stop (SIGTERM, SIGINT): its CPU pool ends now and the process
    # within lifecycle.GRACE_S, whatever its tasks are waiting for.
    lifecycle.stopping()
