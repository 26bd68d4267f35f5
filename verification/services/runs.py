"""A run's life: create, begin, finish, fail, usage, sweep and adoption, retry and resume plans, cleanup."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from verification.inputs.documents import DocumentDraft
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    SearchResult,
    Sentence,
    Source,
    Status,
    Verification,
    WorkerProcess,
)
from verification.pipeline import segment
from verification.pipeline.types import LLMUsage, SegmentedSentence
from verification.services.documents import documents_save
from verification.services.rows import sentences_save, transition
from verification.services.workers import worker_processes_alive


@transaction.atomic
def verification_create(
    *,
    text: str,
    settings: dict,
    edited_from: Verification | None = None,
    client: str = "",
    creator: str = "",
    documents: Sequence[DocumentDraft] = (),
    segments: Sequence[SegmentedSentence] | None = None,
) -> Verification:
    """A run and its sentences, split here (or given, as the form that validated the text split
    it): the worker's first task then only has to send them on, and on a cold worker it does not
    wait for the sentence splitter to load (seconds of CPU while everything else starts)."""
    verification = Verification.objects.create(
        text=text, settings=settings, edited_from=edited_from, client=client, creator=creator
    )
    sentences_save(verification=verification, segments=segment.segment(text) if segments is None else segments)
    documents_save(verification=verification, drafts=documents)
    return verification


def verification_begin(verification: Verification) -> bool:
    return transition(Verification.objects.filter(pk=verification.pk, status=Status.PENDING), to=Status.RUNNING)


def verification_fail(verification_id, *, reason: str, transient: bool = True) -> None:
    Verification.objects.filter(pk=verification_id).exclude(status__in=FINISHED).update(
        status=Status.FAILED, error=reason, transient=transient, finished_at=timezone.now()
    )


def verification_expire_if_stale(verification: Verification, *, timeout_s: float) -> Verification:
    """The backstop of "a run always ends": one that showed no sign of life for `timeout_s`
    (no task of it ran, and the sweeper's resumes did not help) is failed with that reason,
    when someone looks at it. Counted from its last activity, not its submission, so a run
    waiting behind a backlog is not failed for it."""
    if verification.status in FINISHED or last_activity(verification) > timezone.now() - timedelta(seconds=timeout_s):
        return verification
    reason = f"timed out: no progress for {timeout_s / 60:g} minutes; items still pending were lost"
    verification_fail(verification.pk, reason=reason)
    verification.refresh_from_db()
    return verification


def last_activity(verification: Verification):
    return max(t for t in (verification.created_at, verification.retried_at, verification.touched_at) if t)


def verification_take(verification_id, *, owner: str, needs: dict) -> None:
    """Who runs it (`owner`: the process whose embedded worker has its tasks; "" for the
    shared broker) and with what configuration (providers.run_needs): set when it is queued,
    by its start or a retry."""
    Verification.objects.filter(pk=verification_id).update(owner=owner, needs=needs)


def verification_needs_record(verification_id, *, needs: dict) -> None:
    """The configuration of the first worker that started it (on the shared broker)."""
    Verification.objects.filter(pk=verification_id, needs={}).update(needs=needs)


def verifications_touch(verification_ids: Iterable, *, owner: str) -> None:
    """A sign of life from a worker process that holds tasks of these runs (heartbeat.py): it
    is their owner now."""
    Verification.objects.filter(pk__in=list(verification_ids)).exclude(status__in=FINISHED).update(
        touched_at=timezone.now(), owner=owner
    )


def verifications_stalled(*, silent_for: timedelta, gone_after: timedelta) -> list:
    """Unfinished runs nobody is working on, not swept within `silent_for`:
    - its owner stopped beating (it died, or was stopped) and the run was silent since;
    - or no live process owns it (a run on the shared broker whose owner's tasks ended) and no
      task of it ran for `silent_for`: a message was lost (a Redis restart).
    A run owned by a live embedded worker is never stalled: its tasks wait in that process's
    memory, where no other process could take them (a slow model, a queue, a warm-up)."""
    now = timezone.now()
    alive = worker_processes_alive(gone_after=gone_after)
    owner_alive = Q(owner__in=alive.values("name"))
    owned_by_embedded = Q(owner__in=alive.filter(kind=WorkerProcess.Kind.EMBEDDED).values("name"))
    quiet_since = now - min(silent_for, gone_after)
    # Older than that too: a process's first beat may land just after it took its first run.
    quiet = Q(touched_at__lt=quiet_since) | Q(touched_at__isnull=True, created_at__lt=quiet_since)
    owner_gone = ~Q(owner="") & ~owner_alive & quiet
    silent = Q(touched_at__lt=now - silent_for) | Q(touched_at__isnull=True, created_at__lt=now - silent_for)
    not_just_handled = (Q(retried_at__isnull=True) | Q(retried_at__lt=quiet_since)) & (
        Q(swept_at__isnull=True) | Q(swept_at__lt=now - silent_for)
    )
    return list(
        Verification.objects.exclude(status__in=FINISHED)
        .exclude(owned_by_embedded)
        .filter(owner_gone | silent)
        .filter(not_just_handled)
        .values_list("pk", flat=True)
    )


def verification_claim_sweep(verification_id, *, silent_for: timedelta, owner: str) -> bool:
    """Only one sweeper (of several processes) resumes a run per quiet period, and becomes its
    owner (`owner`: "" when the run goes back to the shared broker)."""
    cutoff = timezone.now() - silent_for
    return (
        Verification.objects.filter(pk=verification_id)
        .exclude(status__in=FINISHED)
        .filter(Q(swept_at__isnull=True) | Q(swept_at__lt=cutoff))
        .update(swept_at=timezone.now(), resumes=F("resumes") + 1, owner=owner)
        == 1
    )


def usage_add(
    verification_id,
    *,
    usage: LLMUsage | None = None,
    searches: int = 0,
    llm_cached: int = 0,
    searches_cached: int = 0,
) -> None:
    """What a step spent, and the answers it took from the cross-run cache instead."""
    changes = {}
    if usage and usage.calls:
        changes.update(
            llm_calls=F("llm_calls") + usage.calls,
            prompt_tokens=F("prompt_tokens") + usage.prompt_tokens,
            completion_tokens=F("completion_tokens") + usage.completion_tokens,
        )
    if searches:
        changes["searches"] = F("searches") + searches
    if llm_cached:
        changes["llm_cached"] = F("llm_cached") + llm_cached
    if searches_cached:
        changes["searches_cached"] = F("searches_cached") + searches_cached
    if changes:
        Verification.objects.filter(pk=verification_id).update(**changes)


# How a run whose failures left nothing judged fails; its problems list says which failures.
NO_EVIDENCE_JUDGED = "no evidence could be judged"


def verification_finish(verification_id) -> bool:
    """The run ends when every sentence has ended and every source has a type. A run in which
    failures left no evidence judged at all has failed (its result would only look clean)."""
    if Sentence.objects.filter(verification_id=verification_id).exclude(status__in=FINISHED).exists():
        return False
    if Source.objects.filter(verification_id=verification_id, source_type="").exists():
        return False
    status, error = Status.DONE, ""
    judged = Evidence.objects.filter(claim__sentence__verification_id=verification_id, status=Status.DONE)
    if not judged.exists():
        failure = first_failure(verification_id)
        if failure:
            status, error = Status.FAILED, f"{NO_EVIDENCE_JUDGED}: {failure}"
    return transition(
        Verification.objects.filter(pk=verification_id, status=Status.RUNNING),
        to=status,
        error=error,
        finished_at=timezone.now(),
    )


def pass_seconds(*, created_at, retried_at, finished_at) -> float:
    """The working time of a run's latest pass: from its start (or its last retry) to its end."""
    if finished_at is None:
        return 0.0
    return max(0.0, (finished_at - (retried_at or created_at)).total_seconds())


def working_seconds(verification: Verification) -> float | None:
    """The time the run was working: every pass (the first, then each retry), not the idle time
    between a pass's end and the next retry. None while it runs."""
    if verification.finished_at is None:
        return None
    latest = pass_seconds(
        created_at=verification.created_at, retried_at=verification.retried_at, finished_at=verification.finished_at
    )
    return verification.worked_seconds + latest


def first_failure(verification_id) -> str:
    """The reason of the earliest step that failed in a run, or "" when nothing failed."""
    for reasons in (
        Sentence.objects.filter(verification_id=verification_id, status=Status.FAILED).values_list("error", flat=True),
        Claim.objects.filter(sentence__verification_id=verification_id, status=ClaimStatus.FAILED).values_list(
            "error", flat=True
        ),
        Evidence.objects.filter(claim__sentence__verification_id=verification_id, status=Status.FAILED).values_list(
            "error", flat=True
        ),
    ):
        reason = reasons.order_by("pk").first()
        if reason is not None:
            return reason
    return ""


def progress_record(verification_id, percent: int) -> None:
    """Keep the highest progress shown, so the bar never goes back when new work is found."""
    Verification.objects.filter(pk=verification_id, progress__lt=percent).update(progress=percent)


@dataclass
class RetryPlan:
    """What `verification_retry` put back to work (or `verification_resume_plan` found
    stranded), for the tasks to enqueue."""

    verification_id: object = None
    start: bool = False
    sentences: list[int] = field(default_factory=list)
    searches: list[int] = field(default_factory=list)
    fetches: list[int] = field(default_factory=list)
    reads: list[int] = field(default_factory=list)
    judging: dict[int, list[int]] = field(default_factory=dict)
    rereads: list[int] = field(default_factory=list)
    retypes: list[Source] = field(default_factory=list)
    # Only when resuming: joins that may have missed their last arrival.
    judged: list[int] = field(default_factory=list)
    settled: list[int] = field(default_factory=list)

    @property
    def items(self) -> int:
        return (
            self.start
            + len(self.sentences)
            + len(self.searches)
            + len(self.fetches)
            + len(self.reads)
            + sum(map(len, self.judging.values()))
            + len(self.rereads)
            + len(self.retypes)
            + len(self.judged)
            + len(self.settled)
        )


UNFINISHED = (Status.PENDING, Status.RUNNING)


def verification_retryable(verification_id) -> int:
    """How many items "Retry failed parts" would queue again now: 0 when every failure is one a
    retry would meet again (HTTP 403, not a web page …), and then no retry is offered."""
    return _retry_plan(verification_id).items


@transaction.atomic
def verification_retry(verification_id) -> RetryPlan:
    """Put the failed items of a finished run that a retry may change (transient failures) back
    to pending, in place, and the run, its sentences and claims back to running, so that the
    same joins finish it again. Items a failed run left unfinished (it timed out, its worker
    died) are queued again too. Only one caller wins the run's transition; the others (and runs
    with nothing to do) get an empty plan."""
    plan = _retry_plan(verification_id)
    previous = Verification.objects.filter(pk=verification_id).values("created_at", "retried_at", "finished_at").first()
    # A cancelled run stays cancelled: its creator stopped it.
    run = Verification.objects.filter(pk=verification_id, status__in=(Status.DONE, Status.FAILED))
    if not plan.items or not transition(run, to=Status.PENDING if plan.start else Status.RUNNING):
        return RetryPlan()
    Verification.objects.filter(pk=verification_id).update(
        error="",
        finished_at=None,
        retried_at=timezone.now(),
        retries=F("retries") + 1,
        worked_seconds=F("worked_seconds") + pass_seconds(**previous),
    )
    Sentence.objects.filter(pk__in=plan.sentences).update(status=Status.PENDING, error="")
    Claim.objects.filter(pk__in=plan.searches).update(status=ClaimStatus.PENDING, error="")
    Source.objects.filter(pk__in=plan.fetches).update(status=Status.PENDING, error="")
    waiting_pages = SearchResult.objects.filter(source_id__in=plan.fetches, status=Status.FAILED)
    reading = {*waiting_pages.values_list("claim_id", flat=True), *plan.rereads}
    waiting_pages.update(status=Status.PENDING)
    Claim.objects.filter(pk__in=reading).update(status=ClaimStatus.READING, error="")
    Claim.objects.filter(pk__in=plan.judging).update(status=ClaimStatus.JUDGING, error="")
    Evidence.objects.filter(
        claim__sentence__verification_id=verification_id, status=Status.FAILED, transient=True
    ).update(status=Status.PENDING, error="")
    Source.objects.filter(pk__in=[s.pk for s in plan.retypes]).update(source_type="", type_decided_by="")
    touched = Claim.objects.filter(pk__in=[*plan.searches, *reading, *plan.judging])
    Sentence.objects.filter(pk__in=touched.values("sentence_id")).exclude(pk__in=plan.sentences).update(
        status=Status.RUNNING, error=""
    )
    return plan


def verification_resume_plan(verification_id) -> RetryPlan:
    """The unfinished items of a running run that nothing may be working on any more (its
    worker died, its message was lost), left in their states: every step starts again from
    any unfinished state, and finished items are skipped, so enqueuing them twice is safe.
    Failures stay failures (the person decides to retry them)."""
    plan = _retry_plan(verification_id, failed=False)
    claims = Claim.objects.filter(sentence__verification_id=verification_id)
    plan.judged = list(
        claims.filter(status=ClaimStatus.JUDGING)
        .exclude(evidence__status=Status.PENDING)
        .values_list("pk", flat=True)
        .distinct()
    )
    plan.settled = list(
        Sentence.objects.filter(verification_id=verification_id, status__in=UNFINISHED, claims__isnull=False)
        .exclude(claims__status__in=[s for s in ClaimStatus if s not in (ClaimStatus.DONE, ClaimStatus.FAILED)])
        .values_list("pk", flat=True)
        .distinct()
    )
    if plan.start or Verification.objects.filter(pk=verification_id, status=Status.PENDING).exists():
        # Not begun: the start task sends its sentences on (they are saved with the run), once.
        plan.start, plan.sentences = True, []
    return plan


def _retry_plan(verification_id, *, failed: bool = True) -> RetryPlan:
    """Each stranded item, and each failed one a retry may change when `failed`, with the step
    that will run it again."""
    unfinished = Q(status__in=UNFINISHED)
    failed_transient = Q(status=Status.FAILED, transient=True)
    again = unfinished | failed_transient if failed else unfinished
    sentences = Sentence.objects.filter(verification_id=verification_id)
    claims = Claim.objects.filter(sentence__verification_id=verification_id)
    sources = Source.objects.filter(verification_id=verification_id)
    evidence = Evidence.objects.filter(claim__sentence__verification_id=verification_id)
    redone = Q(status__in=UNFINISHED, claims__isnull=True)
    redone_sentences = list(
        sentences.filter(redone | failed_transient if failed else redone).values_list("pk", flat=True).distinct()
    )
    fetches = list(sources.filter(again).values_list("pk", flat=True))
    unread = SearchResult.objects.filter(source_id__in=fetches).exclude(status=Status.DONE)
    refetched_claims = set(unread.values_list("claim_id", flat=True))
    finished_claims = [ClaimStatus.DONE] if failed else [ClaimStatus.DONE, ClaimStatus.FAILED]
    stalled_claims = (
        claims.exclude(status__in=finished_claims)
        .exclude(status=ClaimStatus.FAILED, transient=False)
        .exclude(sentence_id__in=redone_sentences)
        .exclude(pk__in=refetched_claims)
        .annotate(results=Count("search_results"))
    )
    judging: dict[int, list[int]] = {}
    # Copies of a text are not judged: they follow the item that counts for them.
    retried = evidence.filter(again, duplicate_of__isnull=True)
    for evidence_id, claim_id in retried.values_list("pk", "claim_id"):
        if claim_id not in refetched_claims:  # those are judged with their new pages
            judging.setdefault(claim_id, []).append(evidence_id)
    unsearched = {
        ClaimStatus.PENDING,
        ClaimStatus.SEARCHING,
        ClaimStatus.READING,  # with no result: its search found nothing (see claim_begin_search)
        *([ClaimStatus.FAILED] if failed else []),
    }
    untyped = Q(type_decided_by__startswith="fallback") | Q(source_type="") if failed else Q(source_type="")
    return RetryPlan(
        verification_id=verification_id,
        # A run that failed before it had sentences starts again, unless that failure would
        # repeat (a text with no sentence to check).
        start=not sentences.exists() and Verification.objects.filter(pk=verification_id, transient=True).exists(),
        sentences=redone_sentences,
        searches=[c.pk for c in stalled_claims if not c.results and c.status in unsearched],
        fetches=fetches,
        # Pages finished (a failed one too) whose results were not recorded as read.
        reads=list(
            sources.filter(status__in=FINISHED, search_results__status=Status.PENDING)
            .exclude(pk__in=fetches)
            .values_list("pk", flat=True)
            .distinct()
        ),
        judging=judging,
        rereads=[c.pk for c in stalled_claims if c.results and c.pk not in judging],
        retypes=list(sources.filter(untyped)),
    )


def verifications_delete_older_than(days: int) -> int:
    """Deletes the runs that finished (or, with no finish time, were created) more than `days`
    days ago, with all their rows, and returns how many. A run under way is kept whatever its
    age, since its tasks still write to it. `days` <= 0 keeps every run (RUN_RETENTION_DAYS=0)."""
    if days <= 0:
        return 0
    cutoff = timezone.now() - timedelta(days=days)
    old = Verification.objects.filter(status__in=FINISHED).filter(
        Q(finished_at__lt=cutoff) | Q(finished_at__isnull=True, created_at__lt=cutoff)
    )
    deleted = 0
    # In batches: a run has hundreds of rows, and one long transaction would hold SQLite's write
    # lock against the workers. The batch is filtered again, so a run retried meanwhile stays.
    while batch := list(old.values_list("pk", flat=True)[:100]):
        with transaction.atomic():
            deleted += old.filter(pk__in=batch).delete()[1].get(Verification._meta.label, 0)
    return deleted
