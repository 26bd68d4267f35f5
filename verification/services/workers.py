"""The rows of the processes that run tasks: their beats, who is alive."""

from collections.abc import Iterable
from datetime import timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from verification.models import (
    WorkerProcess,
)

# A process that runs tasks beats this often (worker/heartbeat.py); one that has not beaten for
# GONE_AFTER_S is gone: three beats missed.
BEAT_INTERVAL_S = 5.0
GONE_AFTER_S = 3 * BEAT_INTERVAL_S


def worker_process_beat(name: str, *, embedded: bool, warm: bool, tasks: list | None = None) -> None:
    now = timezone.now()
    kind = WorkerProcess.Kind.EMBEDDED if embedded else WorkerProcess.Kind.CELERY
    tasks = tasks or []
    updated = WorkerProcess.objects.filter(name=name).update(beat_at=now, kind=kind, tasks=tasks)
    if not updated:
        WorkerProcess.objects.get_or_create(
            name=name, defaults={"kind": kind, "started_at": now, "beat_at": now, "tasks": tasks}
        )
    if warm:
        WorkerProcess.objects.filter(name=name, warm_at__isnull=True).update(warm_at=now)


def worker_processes_alive(*, gone_after: timedelta = timedelta(seconds=GONE_AFTER_S)) -> QuerySet:
    return WorkerProcess.objects.filter(beat_at__gte=timezone.now() - gone_after)


def worker_process_gone(name: str, *, gone_after: timedelta = timedelta(seconds=GONE_AFTER_S)) -> bool:
    """Whether the process beat once and has stopped (died, killed, stopped); one that never beat
    is not known to be gone."""
    return WorkerProcess.objects.filter(name=name, beat_at__lt=timezone.now() - gone_after).exists()


def worker_tasks_orphaned(
    *, gone_after: timedelta = timedelta(seconds=GONE_AFTER_S), ended: Iterable[str] = ()
) -> list[tuple[str, list]]:
    """The tasks that `celery worker` processes which stopped beating, or are known to have ended
    (`ended`, names), had taken and not finished, each process's taken by one caller only (the
    one that sends them again)."""
    gone = WorkerProcess.objects.filter(kind=WorkerProcess.Kind.CELERY).filter(
        Q(beat_at__lt=timezone.now() - gone_after) | Q(name__in=list(ended))
    )
    orphaned = []
    for process in gone.exclude(tasks=[]):
        if WorkerProcess.objects.filter(name=process.name, beat_at=process.beat_at).exclude(tasks=[]).update(tasks=[]):
            orphaned.append((process.name, process.tasks))
    return orphaned


def worker_processes_forget(*, gone_for: timedelta) -> None:
    """Rows of processes long gone (every start adds one)."""
    WorkerProcess.objects.filter(beat_at__lt=timezone.now() - gone_for).delete()
