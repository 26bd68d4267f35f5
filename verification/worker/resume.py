"""Runs that stopped moving: *Retry failed parts* (in place), and the sweeper, which resumes a
run nobody is working on any more (Celery beat, or a timer in the embedded worker; see
verification/tasks.py for when), and deletes runs past their retention."""

import logging
from datetime import timedelta

from celery.signals import worker_ready
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from factsite.celery import app
from verification import services
from verification.access import limits
from verification.models import (
    FINISHED,
    Sentence,
    Verification,
    WorkerProcess,
)
from verification.pipeline import judge
from verification.worker import base, categorize, chunks, heartbeat, joins, start, trail

logger = logging.getLogger(__name__)


def retry_failed(verification_id) -> int:
    """Re-queue only the failed items of a finished run, in place; returns how many."""
    # A failed trail claim goes on from its finished rounds: its failed selections are asked again.
    services.trail_retry_reset(verification_id)
    plan = services.verification_retry(verification_id)
    if not plan.items:
        return 0
    start.take(verification_id, Verification.objects.get(pk=verification_id).settings)
    requeue(plan)
    # Source types known at once (rules, another run's answer) end nothing by themselves.
    services.verification_finish(verification_id)
    return plan.items


@base.task
def sweep() -> int:
    """Resume every run nobody is working on any more (see the module's docstring); returns
    how many. Runs that stayed silent for RUN_TIMEOUT in spite of that are failed with the
    reason."""
    silent_for = timedelta(seconds=settings.RUN_STALLED_AFTER)
    if _queued_messages():
        # Runs behind a backlog are silent too, but their tasks are only waiting: resuming them
        # would queue each again (and a duplicate taken while the first still runs does the
        # work twice). Only a much longer silence then means a task was lost. (A run whose
        # owner stopped beating is resumed at once all the same.)
        silent_for *= BACKLOG_PATIENCE
    gone_after = timedelta(seconds=heartbeat.GONE_AFTER_S)
    ended = _ended_here(gone_after)
    _send_orphaned_tasks(gone_after, ended)
    services.worker_processes_forget(gone_for=timedelta(days=1))
    stalled = services.verifications_stalled(silent_for=silent_for, gone_after=gone_after)
    return sum(_resume_stalled(pk, silent_for=silent_for) for pk in dict.fromkeys([*stalled, *_runs_of(ended)]))


BACKLOG_PATIENCE = 5


def _resume_stalled(verification_id, *, silent_for: timedelta) -> bool:
    """Resume the run unless it finished, timed out, another sweeper took it, or it was started
    with another configuration; whether it was resumed."""
    verification = services.verification_expire_if_stale(
        Verification.objects.get(pk=verification_id), timeout_s=settings.RUN_TIMEOUT
    )
    owner = heartbeat.process_name() if settings.CELERY_EMBEDDED_WORKER else ""
    if verification.status in FINISHED or not services.verification_claim_sweep(
        verification_id, silent_for=silent_for, owner=owner
    ):
        return False
    if start.refuse_other_configuration(verification):
        return False
    logger.warning("resuming %s: nobody has worked on it for a while", verification)
    resume(verification_id)
    return True


def _ended_here(gone_after: timedelta) -> list[str]:
    """The `celery worker` processes that still look alive (they beat within `gone_after`) but
    are known to have ended on this machine (heartbeat.ended_here): killed, and another worker
    started in their place."""
    alive = services.worker_processes_alive(gone_after=gone_after).filter(kind=WorkerProcess.Kind.CELERY)
    return [name for name in alive.values_list("name", flat=True) if heartbeat.ended_here(name)]


def _runs_of(processes: list[str]) -> list:
    """The unfinished runs these processes owned: a task of theirs may have been taken too
    shortly before they ended to be recorded (heartbeat.RECORD_TAKEN_WITHIN_S), so the run is
    resumed, as a run whose owner stopped beating is."""
    if not processes:
        return []
    return list(
        Verification.objects.filter(owner__in=processes).exclude(status__in=FINISHED).values_list("pk", flat=True)
    )


def _send_orphaned_tasks(gone_after: timedelta, ended: list[str]) -> None:
    """The tasks a `celery worker` that stopped beating (or that ended on this machine: `ended`)
    had taken are sent again at once, ahead of the backlog: they left the queue with it, and
    nothing else would run them before its runs went quiet. Only those: the run's other tasks
    are queued or running elsewhere, and every step skips what is finished, so a task that had
    done its work before the process died is a no-op. Run by every sweep, and by a `celery
    worker` as soon as it is ready (below)."""
    for process, tasks in services.worker_tasks_orphaned(gone_after=gone_after, ended=ended):
        logger.warning("sending again the %d tasks %s had taken when it stopped beating", len(tasks), process)
        for name, args in tasks:
            base.send(name.removeprefix(base.TASK_PREFIX), *args, urgent=True)


@worker_ready.connect
def _recover_when_ready(**_) -> None:
    """A `celery worker` started again after its predecessor was killed on this machine sends
    what that one had taken, and resumes the runs it owned, at once: without waiting for its
    beats to be missed, or for a sweep."""
    if settings.CELERY_EMBEDDED_WORKER:  # its tasks were in its own memory, none on the broker
        return
    try:
        gone_after = timedelta(seconds=heartbeat.GONE_AFTER_S)
        ended = _ended_here(gone_after)
        _send_orphaned_tasks(gone_after, ended)
        for verification_id in _runs_of(ended):
            _resume_stalled(verification_id, silent_for=timedelta(seconds=settings.RUN_STALLED_AFTER))
    except Exception:  # a busy database: the sweeps try again
        logger.warning("recovering what workers that ended had taken failed", exc_info=True)
    finally:
        close_old_connections()


def _queued_messages() -> int:
    """Messages waiting in the broker's default queue (0 when it cannot tell)."""
    try:
        with app.connection_for_read() as connection:
            queue = connection.default_channel.queue_declare(queue=app.conf.task_default_queue, passive=True)
            return queue.message_count
    except Exception:  # no such queue yet, or the broker is away: behave as without a backlog
        return 0


@base.task
def delete_old_runs() -> int:
    """Runs older than RUN_RETENTION_DAYS go, with all their rows (Celery beat, daily), and the
    spending rows no hourly limit counts any more."""
    services.spending_forget_before(timezone.now() - limits.WINDOW)
    return services.verifications_delete_older_than(settings.RUN_RETENTION_DAYS)


def resume(verification_id) -> None:
    """Enqueue a running run's unfinished items again and redo the joins that may have missed
    their last arrival; finishes the run if nothing is left."""
    plan = services.verification_resume_plan(verification_id)
    services.trail_selections_reset(verification_id)  # what a dead worker had taken
    requeue(plan, ask_types_again=True)
    trail.begin(verification_id)  # a trail run's documents not read yet
    for claim_id in plan.judged:
        joins.after_judging(claim_id)
    for sentence in Sentence.objects.filter(pk__in=plan.settled):
        if services.sentence_finish(sentence.pk):
            joins.after_sentence(sentence)
    services.verification_finish(verification_id)


def requeue(plan: services.RetryPlan, *, ask_types_again: bool = False) -> None:
    if plan.start:
        base.send("verification_start", str(plan.verification_id))
    for chunk in chunks.decompose_chunks(Sentence.objects.filter(pk__in=plan.sentences)):
        base.send("sentences_decompose", chunk)
    for claim_id in plan.searches:
        base.send("claim_search", claim_id)
    for source_id in [*plan.fetches, *plan.reads]:
        base.send("source_fetch", source_id)
    for batch in judge.pack(list(plan.judging.values())):
        base.send("evidence_judge_batch", batch)
    for claim_id in plan.rereads:
        joins.maybe_judge(claim_id)
    categorize.type_sources(plan.retypes, ask_again=ask_types_again)
