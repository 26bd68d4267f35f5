"""What every step's task shares: the task class (retries, failing its item when it gives up,
ending quietly when its run was cancelled), the decorator that registers a step under its
public name, and `send`, which enqueues a step by that name after the current transaction.

Tasks are named `verification.tasks.<function>` whatever module holds them: the names are what
queued messages and beat's schedule carry, so they stay as they were before the worker was split
into modules (verification/tasks.py imports every module, for Celery's autodiscovery). Steps send
each other by name, not by importing each other's task objects: the joins send the judge, whose
tasks call the joins, and names keep that loop out of the imports."""

import logging

from celery.contrib.django.task import DjangoTask
from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, OperationalError, transaction
from kombu.exceptions import OperationalError as BrokerError

from factsite.celery import app
from verification.models import Status, Verification
from verification.pipeline.types import StepError
from verification.worker import heartbeat

TASK_PREFIX = "verification.tasks."

logger = logging.getLogger(__name__)


class RunCancelled(Exception):
    """The task's run was cancelled: the task ends without spending anything on it."""


def hold(verification_id) -> None:
    """The task works for this run (heartbeat.hold), unless its creator cancelled or deleted it."""
    heartbeat.hold(verification_id)
    status = Verification.objects.filter(pk=verification_id).values_list("status", flat=True).first()
    if status is None or status == Status.CANCELLED:
        raise RunCancelled


class StepTask(DjangoTask):
    """Retries what a retry can fix (a busy database); when it gives up, `give_up` marks the
    task's item failed so the run still ends."""

    acks_late = True
    autoretry_for = (OperationalError,)
    retry_backoff = 0.5
    retry_jitter = True
    max_retries = 5
    give_up = None

    def __call__(self, *args, **kwargs):
        with heartbeat.task_scope():
            try:
                return super().__call__(*args, **kwargs)
            except RunCancelled:
                return None
            except (ObjectDoesNotExist, IntegrityError, KeyError) as error:
                # Its run was deleted while the task waited or ran (its owner deleted it, or
                # RUN_RETENTION_DAYS): its rows are gone, and so is the work. Not an error to log.
                if not _run_gone(error):
                    raise
                logger.info("task %s%r ended: its run was deleted (%s)", self.name, args, type(error).__name__)
                return None

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        logger.error("task %s%r failed: %s", self.name, args, exc, exc_info=exc)
        if self.give_up is not None:
            # A StepError here came from outside the step's own try (e.g. building its client):
            # its text is still the readable reason.
            reason = (
                str(exc) if isinstance(exc, StepError) else f"internal error while {self.doing} ({type(exc).__name__})"
            )
            # An unexpected error may be a busy moment as well as a bug: a retry may pass.
            transient = exc.transient if isinstance(exc, StepError) else True
            try:
                self.give_up(*args, reason=reason, transient=transient)
            except ObjectDoesNotExist:
                # The item's run was deleted (RUN_RETENTION_DAYS, `manage.py cleanup`) while the
                # task waited in the queue: nothing is left to mark failed.
                logger.info("task %s%r: its item no longer exists", self.name, args)


def _run_gone(error: Exception) -> bool:
    """Whether the run the failed task works for no longer exists: the runs it held, or, when
    it failed before it knew its run, its own row (rows are deleted only with their run)."""
    held = heartbeat.held_now()
    if held:
        return Verification.objects.filter(pk__in=held).count() < len(set(held))
    return isinstance(error, ObjectDoesNotExist)


def step(doing: str, give_up=None):
    """Registers a step's function as a task named `verification.tasks.<function>`."""

    def register(function):
        # staticmethod: a plain function stored on the task class would be bound to the task.
        return app.task(
            function,
            name=TASK_PREFIX + function.__name__,
            base=StepTask,
            doing=doing,
            give_up=staticmethod(give_up) if give_up else None,
        )

    return register


def task(function):
    """Registers a task that is not a step (the sweeper's) under its public name."""
    return app.task(function, name=TASK_PREFIX + function.__name__, ignore_result=True)


# Message priorities on Redis (settings.CELERY_BROKER_TRANSPORT_OPTIONS' priority_steps): kombu
# keeps a list per step and a worker takes from the lowest-numbered non-empty one first. Every
# step is ROUTINE; a task lost with its worker, and the sweeper that sends it again, are URGENT,
# ahead of whatever backlog the queue holds. (The memory broker of the embedded worker ignores them.)
URGENT, ROUTINE = 0, 9


def send(task_name: str, *args, countdown: float | None = None, urgent: bool = False) -> None:
    """Enqueue the task `verification.tasks.<task_name>` after the current transaction commits
    (to run `countdown` seconds later; `urgent`: ahead of the queued tasks). A broker that cannot
    take the message (Redis restarting) loses nothing: the item's row stays unfinished and the
    sweeper sends it again."""
    try:
        # A signature by name: this process need not have imported the task's module (it is
        # sent as a plain message then).
        signature = app.signature(
            TASK_PREFIX + task_name, args=args, countdown=countdown, priority=URGENT if urgent else ROUTINE
        )
        transaction.on_commit(signature.apply_async)
    except BrokerError as error:
        logger.warning("could not enqueue %s%r (%s); the sweeper will resume it", task_name, args, error)
