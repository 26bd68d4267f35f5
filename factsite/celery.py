"""The Celery app. With REDIS_URL set, separate `celery worker` processes consume from Redis.
Without it, the broker is in memory and `ensure_embedded_worker()` starts a worker thread pool
inside the process that enqueues (web server or CLI), so a fresh clone needs nothing installed."""

import logging
import os
import threading

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "factsite.settings")

app = Celery("factsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)
_embedded_lock = threading.Lock()
_embedded_worker = None


def ensure_embedded_worker() -> bool:
    """Start the in-process worker once, if this deployment uses one. Returns True when it
    was started by this call (the caller may then recover runs a previous process left)."""
    global _embedded_worker
    from django.conf import settings

    if not settings.CELERY_EMBEDDED_WORKER:
        return False
    with _embedded_lock:
        if _embedded_worker is not None:
            return False
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
        _embedded_worker = worker
        logger.info("started the embedded Celery worker (no REDIS_URL set)")
        return True
