"""The rows of the processes that run tasks: their beats, who is alive."""

from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone

from verification.models import (
    WorkerProcess,
)

# A process that runs tasks beats this often (worker/heartbeat.py); one that has not beaten for
# GONE_AFTER_S is gone: three beats missed.
BEAT_INTERVAL_S = 5.0
GONE_AFTER_S = 3 * BEAT_INTERVAL_S


def worker_process_beat(name: str, *, embedded: bool, warm: bool) -> None:
    now = timezone.now()
    kind = WorkerProcess.Kind.EMBEDDED if embedded else WorkerProcess.Kind.CELERY
    updated = WorkerProcess.objects.filter(name=name).update(beat_at=now, kind=kind)
    if not updated:
        WorkerProcess.objects.get_or_create(name=name, defaults={"kind": kind, "started_at": now, "beat_at": now})
    if warm:
        WorkerProcess.objects.filter(name=name, warm_at__isnull=True).update(warm_at=now)


def worker_processes_alive(*, gone_after: timedelta = timedelta(seconds=GONE_AFTER_S)) -> QuerySet:
    return WorkerProcess.objects.filter(beat_at__gte=timezone.now() - gone_after)


def worker_processes_forget(*, gone_for: timedelta) -> None:
    """Rows of processes long gone (every start adds one)."""
    WorkerProcess.objects.filter(beat_at__lt=timezone.now() - gone_for).delete()
