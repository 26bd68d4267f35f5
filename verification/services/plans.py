"""What goes back to work: the failed items a *Retry failed parts* puts back (in place), and the
unfinished items of a run the sweeper resumes, as one plan for the worker to enqueue."""

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

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
)
from verification.services.rows import transition
from verification.services.runs import pass_seconds


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
    # A claim's second search (joins._search_again) left unfinished: it has the first's results.
    searches = [
        c.pk
        for c in stalled_claims
        if (not c.results and c.status in unsearched) or (c.status == ClaimStatus.SEARCHING and c.second_query)
    ]
    return RetryPlan(
        verification_id=verification_id,
        # A run that failed before it had sentences starts again, unless that failure would
        # repeat (a text with no sentence to check).
        start=not sentences.exists() and Verification.objects.filter(pk=verification_id, transient=True).exists(),
        sentences=redone_sentences,
        searches=searches,
        fetches=fetches,
        # Pages finished (a failed one too) whose results were not recorded as read.
        reads=list(
            sources.filter(status__in=FINISHED, search_results__status=Status.PENDING)
            .exclude(pk__in=fetches)
            .values_list("pk", flat=True)
            .distinct()
        ),
        judging=judging,
        rereads=[c.pk for c in stalled_claims if c.results and c.pk not in judging and c.pk not in searches],
        retypes=list(sources.filter(untyped)),
    )
