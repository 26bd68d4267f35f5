"""A run's life: create, begin, finish, fail, usage, sweep and adoption, cleanup. (Retry and resume plans: plans.py.)"""

from collections.abc import Iterable, Sequence
from datetime import timedelta

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from verification.inputs.documents import DocumentDraft
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    Sentence,
    Source,
    Status,
    Verification,
    WorkerProcess,
)
from verification.pipeline import cited_segments, languages
from verification.pipeline.citations import read_citations
from verification.pipeline.types import LLMUsage, SegmentedSentence
from verification.services.citations import citations_save
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
    # The text's own citations (issue 34): its sentences are split without them (the form split it
    # so too: cited_segments), and each citation is saved with its sentence. Its language is its own
    # words': a reference list's titles are often English whatever the answer's language.
    cited = read_citations(text)
    verification = Verification.objects.create(
        text=text,
        settings=settings,
        edited_from=edited_from,
        client=client,
        creator=creator,
        language=languages.detect_language(cited.text) or "",
    )
    if segments is None:
        segments = cited_segments.segment_cited(cited, verification.language or "en")
    sentences = sentences_save(verification=verification, segments=segments)
    if cited.citations:
        citations_save(
            verification=verification,
            cited=cited,
            sentence_of=cited_segments.sentence_of_citations(cited, segments),
            sentences=sentences,
            cap=django_settings.MAX_CITED_SOURCES,
        )
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
            reasoning_tokens=F("reasoning_tokens") + usage.reasoning_tokens,
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
    failures left no evidence judged at all has failed (its result would only look clean); a
    claim quick mode answered from the model's own knowledge is an answer, not a failure."""
    if Sentence.objects.filter(verification_id=verification_id).exclude(status__in=FINISHED).exists():
        return False
    if Source.objects.filter(verification_id=verification_id, source_type="").exists():
        return False
    status, error = Status.DONE, ""
    judged = Evidence.objects.filter(claim__sentence__verification_id=verification_id, status=Status.DONE)
    answered = Claim.objects.filter(
        sentence__verification_id=verification_id, status=ClaimStatus.DONE, from_model_knowledge=True
    )
    if Verification.objects.filter(pk=verification_id, settings__evidence="trail").exists():
        # A trail run judges no evidence items: a claim whose trail ended is its judged work.
        judged = Claim.objects.filter(sentence__verification_id=verification_id, status=ClaimStatus.DONE)
    if not judged.exists() and not answered.exists():
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
