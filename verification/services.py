"""Every database write. Status changes are conditional UPDATEs (`…WHERE status = expected`):
the one caller that wins a transition does the follow-up work, so joins need no locks and a
redelivered task cannot do anything twice."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from verification.documents import UPLOAD_SCHEME, DocumentDraft, is_upload
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    HostCategory,
    Origin,
    SearchResult,
    Sentence,
    Source,
    SourceType,
    Status,
    Upload,
    Verification,
    WorkerProcess,
)
from verification.pipeline.types import (
    ClaimDraft,
    Judgement,
    LLMUsage,
    PageSentences,
    Passage,
    SearchHit,
    SegmentedSentence,
)

STALE_QUESTION = timedelta(minutes=10)
# In a run's settings: {claim id: {refusal: search results its domain lists left out}}.
LEFT_OUT_KEY = "left_out_by_claim"


def _transition(queryset, *, to: str, **changes) -> bool:
    return queryset.update(status=to, **changes) == 1


@transaction.atomic
def verification_create(
    *,
    text: str,
    settings: dict,
    edited_from: Verification | None = None,
    client: str = "",
    documents: Sequence[DocumentDraft] = (),
) -> Verification:
    verification = Verification.objects.create(text=text, settings=settings, edited_from=edited_from, client=client)
    documents_save(verification=verification, drafts=documents)
    return verification


def documents_save(*, verification: Verification, drafts: Sequence[DocumentDraft]) -> list[Source]:
    """The user's documents as the run's sources, in the order given. Typed at once ("your
    document", decided by the user): they never go to the categorizer."""
    sources = []
    for draft in drafts:
        source = Source.objects.create(
            verification=verification,
            url=draft.url,
            host=draft.host,
            title=draft.name,
            origin=Origin.DOCUMENT,
            source_type=SourceType.YOUR_DOCUMENT,
            type_decided_by="user",
        )
        if draft.is_upload:
            Upload.objects.create(
                source=source,
                name=draft.name,
                content_type=draft.content_type,
                sha256=draft.url.removeprefix(UPLOAD_SCHEME),
                body=draft.body,
            )
        sources.append(source)
    return sources


def verification_begin(verification: Verification) -> bool:
    return _transition(Verification.objects.filter(pk=verification.pk, status=Status.PENDING), to=Status.RUNNING)


def verification_fail(verification_id, *, reason: str) -> None:
    Verification.objects.filter(pk=verification_id).exclude(status__in=FINISHED).update(
        status=Status.FAILED, error=reason, finished_at=timezone.now()
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


def worker_process_beat(name: str, *, embedded: bool, warm: bool) -> None:
    now = timezone.now()
    kind = WorkerProcess.Kind.EMBEDDED if embedded else WorkerProcess.Kind.CELERY
    updated = WorkerProcess.objects.filter(name=name).update(beat_at=now, kind=kind)
    if not updated:
        WorkerProcess.objects.get_or_create(name=name, defaults={"kind": kind, "started_at": now, "beat_at": now})
    if warm:
        WorkerProcess.objects.filter(name=name, warm_at__isnull=True).update(warm_at=now)


def worker_processes_alive(*, gone_after: timedelta) -> QuerySet:
    return WorkerProcess.objects.filter(beat_at__gte=timezone.now() - gone_after)


def worker_processes_forget(*, gone_for: timedelta) -> None:
    """Rows of processes long gone (every start adds one)."""
    WorkerProcess.objects.filter(beat_at__lt=timezone.now() - gone_for).delete()


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


def usage_add(verification_id, *, usage: LLMUsage | None = None, searches: int = 0) -> None:
    changes = {}
    if usage and usage.calls:
        changes.update(
            llm_calls=F("llm_calls") + usage.calls,
            prompt_tokens=F("prompt_tokens") + usage.prompt_tokens,
            completion_tokens=F("completion_tokens") + usage.completion_tokens,
        )
    if searches:
        changes["searches"] = F("searches") + searches
    if changes:
        Verification.objects.filter(pk=verification_id).update(**changes)


def sentences_save(*, verification: Verification, segments: Sequence[SegmentedSentence]) -> list[Sentence]:
    Sentence.objects.bulk_create(
        [
            Sentence(
                verification=verification,
                index=s.index,
                text=s.text,
                start=s.start,
                end=s.end,
                paragraph_index=s.paragraph_index,
                context=list(s.context),
                position_in_context=s.position_in_context,
            )
            for s in segments
        ],
        ignore_conflicts=True,  # a redelivered start task finds them already there
    )
    return list(verification.sentences.all())


def sentence_begin(sentence: Sentence) -> bool:
    """False when the sentence already finished (a redelivered task)."""
    return Sentence.objects.filter(pk=sentence.pk).exclude(status__in=FINISHED).update(status=Status.RUNNING) == 1


def sentence_fail(sentence_id: int, *, reason: str) -> None:
    Sentence.objects.filter(pk=sentence_id).exclude(status__in=FINISHED).update(status=Status.FAILED, error=reason)


def claims_save(*, sentence: Sentence, drafts: Sequence[ClaimDraft], budget: int = 0) -> list[Claim] | None:
    """Save a sentence's claims, taking them from the run's budget of `budget` claims (0: no
    limit). None when they do not fit in what is left: the sentence is then not checked."""
    existing = list(sentence.claims.all())
    if existing:  # a redelivered task: the budget was taken the first time
        return existing
    if budget and drafts and not _budget_take(sentence.verification_id, len(drafts), budget):
        return None
    Claim.objects.bulk_create(
        [Claim(sentence=sentence, index=i, text=d.text, query=d.query) for i, d in enumerate(drafts)],
        ignore_conflicts=True,
    )
    return list(sentence.claims.all())


def _budget_take(verification_id, count: int, budget: int) -> bool:
    # One conditional UPDATE: sentences decomposed at once cannot overspend together.
    return (
        Verification.objects.filter(pk=verification_id, claims_used__lte=budget - count).update(
            claims_used=F("claims_used") + count
        )
        == 1
    )


def claim_begin_search(claim: Claim) -> bool:
    """Also from reading with no result saved: its search found nothing and the worker died
    before finishing it (a resumed run searches again)."""
    unsearched = Q(status__in=[ClaimStatus.PENDING, ClaimStatus.SEARCHING]) | Q(
        status=ClaimStatus.READING, search_results__isnull=True
    )
    return Claim.objects.filter(unsearched, pk=claim.pk).update(status=ClaimStatus.SEARCHING) == 1


def claim_fail(claim_id: int, *, reason: str) -> None:
    Claim.objects.filter(pk=claim_id).exclude(status__in=[ClaimStatus.DONE, ClaimStatus.FAILED]).update(
        status=ClaimStatus.FAILED, error=reason
    )


@transaction.atomic
def search_results_save(*, claim: Claim, hits: Sequence[SearchHit], host_of) -> list[Source]:
    """One Source per URL per run (shared by every claim that finds it) and one SearchResult
    per hit; the claim then waits for its pages. Returns the sources this call takes to fetch:
    exactly one of the claims that find a page takes it (a conditional update, in the same
    transaction so the whole save is one write)."""
    verification_id = claim.sentence.verification_id
    urls = sorted({hit.url for hit in hits})
    existing = set(Source.objects.filter(verification_id=verification_id, url__in=urls).values_list("url", flat=True))
    # In URL order, and skipping conflicts: two claims saving the same pages at once then
    # neither fail nor deadlock (PostgreSQL did when each went in its own rank order).
    Source.objects.bulk_create(
        [
            Source(verification_id=verification_id, url=hit.url, host=host_of(hit.url), title=hit.title)
            for hit in sorted(hits, key=lambda hit: hit.url)
            if hit.url not in existing
        ],
        ignore_conflicts=True,
    )
    sources = {s.url: s for s in Source.objects.filter(verification_id=verification_id, url__in=urls)}
    SearchResult.objects.bulk_create(
        [
            SearchResult(
                claim=claim, source=sources[hit.url], rank=hit.rank, snippet=hit.snippet, provider=hit.provider
            )
            for hit in hits
        ],
        ignore_conflicts=True,
    )
    Claim.objects.filter(pk=claim.pk, status=ClaimStatus.SEARCHING).update(status=ClaimStatus.READING)
    return [
        source
        for source in sources.values()
        if source.status == Status.PENDING
        and _transition(Source.objects.filter(pk=source.pk, status=Status.PENDING), to=Status.RUNNING)
    ]


@transaction.atomic
def claim_results_save(*, claim: Claim, hits: Sequence[SearchHit], host_of, documents: bool) -> list[Source]:
    """A claim's web hits and, with `documents`, every document of its run, in one write (a
    claim never waits for only part of its pages). Returns the sources this call takes to fetch."""
    taken = search_results_save(claim=claim, hits=hits, host_of=host_of)
    if documents:
        taken += document_results_save(claim=claim, first_rank=len(hits) + 1)
    return taken


@transaction.atomic
def document_results_save(*, claim: Claim, first_rank: int = 1) -> list[Source]:
    """The claim cites every document of its run, ranked in the order they were given (no
    search chose them). Returns the documents this call takes to fetch, as search_results_save."""
    documents = list(
        Source.objects.filter(verification_id=claim.sentence.verification_id, origin=Origin.DOCUMENT).order_by("pk")
    )
    SearchResult.objects.bulk_create(
        [SearchResult(claim=claim, source=source, rank=first_rank + i) for i, source in enumerate(documents)],
        ignore_conflicts=True,  # a document the web search found too is cited once
    )
    Claim.objects.filter(pk=claim.pk, status=ClaimStatus.SEARCHING).update(status=ClaimStatus.READING)
    return [
        source
        for source in documents
        if source.status == Status.PENDING
        and _transition(Source.objects.filter(pk=source.pk, status=Status.PENDING), to=Status.RUNNING)
    ]


def source_type_set(source: Source, *, source_type: str, decided_by: str) -> bool:
    """True when this call typed the source (the caller then tries to finish its run: the
    type may be the last thing the run was waiting for)."""
    return (
        Source.objects.filter(pk=source.pk, source_type="").update(source_type=source_type, type_decided_by=decided_by)
        == 1
    )


def host_category_claim(host: str) -> tuple[HostCategory, bool]:
    """The host's known type, or the right to ask the LLM (True: this caller asks)."""
    category, created = HostCategory.objects.get_or_create(host=host)
    if not created and not category.source_type and category.requested_at < timezone.now() - STALE_QUESTION:
        # Asked long ago and never answered (a worker died): ask again.
        created = (
            HostCategory.objects.filter(pk=category.pk, requested_at=category.requested_at).update(
                requested_at=timezone.now()
            )
            == 1
        )
    return category, created


def host_category_answer(host: str, *, source_type: str, decided_by: str) -> list:
    """Type every waiting source of the host; returns the runs they belong to."""
    if decided_by == "llm":
        HostCategory.objects.filter(host=host).update(source_type=source_type)
    else:
        HostCategory.objects.filter(host=host, source_type="").delete()  # let a later run ask again
    Source.objects.filter(host=host, source_type="").update(source_type=source_type, type_decided_by=decided_by)
    # Listed after the update, not before: a run whose source of this host was saved in
    # between is typed by the update too, and must be told (it may have nothing else left).
    return list(
        Source.objects.filter(host=host, verification__status=Status.RUNNING)
        .values_list("verification_id", flat=True)
        .distinct()
    )


def host_category_get(host: str) -> str | None:
    return HostCategory.objects.filter(host=host).exclude(source_type="").values_list("source_type", flat=True).first()


def host_category_save(*, host: str, source_type: str) -> None:
    HostCategory.objects.update_or_create(host=host, defaults={"source_type": source_type})


def source_fetched(source: Source, *, page: PageSentences) -> None:
    # An upload keeps its file name as its title: that is how the person knows it.
    title = source.title if is_upload(source.url) else page.title or source.title
    Source.objects.filter(pk=source.pk).update(
        status=Status.DONE, title=title, final_url=page.final_url, published=page.published
    )


def source_fail(source_id: int, *, reason: str, was_read: bool = False) -> None:
    """`was_read`: a page fetched earlier that cannot be read again (gone from the cache and
    from the web) fails too."""
    sources = Source.objects.filter(pk=source_id)
    if not was_read:
        sources = sources.exclude(status__in=FINISHED)
    sources.update(status=Status.FAILED, error=reason)


@transaction.atomic
def results_read(reads: Sequence[tuple[SearchResult, Sequence[Passage] | None]]) -> set[int]:
    """Record the passages chosen for each search result (None: its page could not be read),
    for the results nobody recorded yet, in one transaction. Returns the claims touched: the
    caller asks `claim_start_judging` for each AFTER the commit, so that of two pages of one
    claim finishing at once, the later commit sees both."""
    touched = set()
    for result, chosen in reads:
        status = Status.FAILED if chosen is None else Status.DONE
        if not _transition(SearchResult.objects.filter(pk=result.pk, status=Status.PENDING), to=status):
            continue  # recorded by another task that read the same page
        Evidence.objects.bulk_create(
            [
                Evidence(
                    claim_id=result.claim_id,
                    source_id=result.source_id,
                    index=i,
                    passage=passage.text,
                    highlights=[list(span) for span in passage.highlights],
                    relevance=round(passage.score, 4),
                )
                for i, passage in enumerate(chosen or ())
            ],
            ignore_conflicts=True,
        )
        touched.add(result.claim_id)
    return touched


def claim_start_judging(claim_id: int) -> bool:
    """The last of a claim's pages moves it to judging; False while pages are outstanding."""
    if SearchResult.objects.filter(claim_id=claim_id).exclude(status__in=FINISHED).exists():
        return False
    return _transition(Claim.objects.filter(pk=claim_id, status=ClaimStatus.READING), to=ClaimStatus.JUDGING)


@transaction.atomic
def judgements_save(judgements: Iterable[Judgement]) -> None:
    judged = []
    for judgement in judgements:
        changes = (
            {"status": Status.DONE, "verdict": judgement.verdict, "rationale": judgement.rationale}
            if judgement.verdict
            else {"status": Status.FAILED, "error": judgement.error}
        )
        Evidence.objects.filter(pk=int(judgement.key), status=Status.PENDING).update(**changes)
        judged.append(int(judgement.key))
    _duplicates_follow(judged)


@transaction.atomic
def evidence_fail(evidence_ids: Iterable[int], *, reason: str) -> None:
    evidence_ids = list(evidence_ids)
    Evidence.objects.filter(pk__in=evidence_ids, status=Status.PENDING).update(status=Status.FAILED, error=reason)
    _duplicates_follow(evidence_ids)


@transaction.atomic
def evidence_mark_duplicates(duplicates: dict[int, int]) -> None:
    """{duplicate id: id of the item that counts for it}, of one claim. Only evidence not judged
    yet becomes a copy (a judged item keeps its own verdict); a copy of an item already judged
    takes its verdict at once."""
    for duplicate_id, original_id in duplicates.items():
        Evidence.objects.filter(pk=duplicate_id, status=Status.PENDING, duplicate_of__isnull=True).update(
            duplicate_of_id=original_id
        )
    _duplicates_follow(set(duplicates.values()))


def _duplicates_follow(evidence_ids: Iterable[int]) -> None:
    """Copies of a text are never judged on their own: they take the verdict (or failure) of the
    item that counts for them once it has one, so they stop holding their claim open."""
    originals = Evidence.objects.filter(pk__in=list(evidence_ids), status__in=FINISHED, duplicates__isnull=False)
    for original in originals.distinct():
        original.duplicates.filter(status=Status.PENDING).update(
            status=original.status, verdict=original.verdict, rationale=original.rationale, error=original.error
        )


@transaction.atomic
def claim_left_out_record(*, claim: Claim, counts: dict[str, int]) -> None:
    """How many of a claim's search results its run's domain lists left out, by refusal. Set per
    claim, not added, so a search done again does not count twice."""
    # Kept in the run's settings JSON (under LEFT_OUT_KEY) for want of a column; the row is
    # locked so that claims searched at once do not overwrite each other's counts.
    run = Verification.objects.select_for_update().only("settings").get(pk=claim.sentence.verification_id)
    left_out = {**run.settings.get(LEFT_OUT_KEY, {}), str(claim.pk): dict(counts)}
    Verification.objects.filter(pk=run.pk).update(settings={**run.settings, LEFT_OUT_KEY: left_out})


def claim_finish(claim_id: int, *, note: str = "", failed: bool = False) -> bool:
    """Judging → done once no evidence is left to judge (or straight from reading, with `note`,
    when there was nothing to judge; `failed` when that was because every page failed)."""
    if Evidence.objects.filter(claim_id=claim_id, status=Status.PENDING).exists():
        return False
    if SearchResult.objects.filter(claim_id=claim_id).exclude(status__in=FINISHED).exists():
        return False  # a page is still being read (a resumed join may ask early)
    return _transition(
        Claim.objects.filter(pk=claim_id, status__in=[ClaimStatus.READING, ClaimStatus.JUDGING]),
        to=ClaimStatus.FAILED if failed else ClaimStatus.DONE,
        error=note,
    )


def sentence_finish(sentence_id: int, *, note: str = "") -> bool:
    if (
        Claim.objects.filter(sentence_id=sentence_id)
        .exclude(status__in=[ClaimStatus.DONE, ClaimStatus.FAILED])
        .exists()
    ):
        return False
    return _transition(Sentence.objects.filter(pk=sentence_id, status=Status.RUNNING), to=Status.DONE, error=note)


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
            status, error = Status.FAILED, f"no evidence could be judged: {failure}"
    return _transition(
        Verification.objects.filter(pk=verification_id, status=Status.RUNNING),
        to=status,
        error=error,
        finished_at=timezone.now(),
    )


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


@transaction.atomic
def verification_retry(verification_id) -> RetryPlan:
    """Put the failed items of a finished run back to pending, in place, and the run, its
    sentences and claims back to running, so that the same joins finish it again. Items a
    failed run left unfinished (it timed out, its worker died) are queued again too. Only one
    caller wins the run's transition; the others (and runs with nothing to do) get an empty
    plan."""
    plan = _retry_plan(verification_id)
    run = Verification.objects.filter(pk=verification_id, status__in=FINISHED)
    if not plan.items or not _transition(run, to=Status.PENDING if plan.start else Status.RUNNING):
        return RetryPlan()
    Verification.objects.filter(pk=verification_id).update(
        error="", finished_at=None, retried_at=timezone.now(), retries=F("retries") + 1
    )
    Sentence.objects.filter(pk__in=plan.sentences).update(status=Status.PENDING, error="")
    Claim.objects.filter(pk__in=plan.searches).update(status=ClaimStatus.PENDING, error="")
    Source.objects.filter(pk__in=plan.fetches).update(status=Status.PENDING, error="")
    waiting_pages = SearchResult.objects.filter(source_id__in=plan.fetches, status=Status.FAILED)
    reading = {*waiting_pages.values_list("claim_id", flat=True), *plan.rereads}
    waiting_pages.update(status=Status.PENDING)
    Claim.objects.filter(pk__in=reading).update(status=ClaimStatus.READING, error="")
    Claim.objects.filter(pk__in=plan.judging).update(status=ClaimStatus.JUDGING, error="")
    Evidence.objects.filter(claim__sentence__verification_id=verification_id, status=Status.FAILED).update(
        status=Status.PENDING, error=""
    )
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
    plan.start = plan.start or Verification.objects.filter(pk=verification_id, status=Status.PENDING).exists()
    return plan


def _retry_plan(verification_id, *, failed: bool = True) -> RetryPlan:
    """Each stranded item, and each failed one when `failed`, with the step that will run it
    again."""
    again = (Status.FAILED, *UNFINISHED) if failed else UNFINISHED
    sentences = Sentence.objects.filter(verification_id=verification_id)
    claims = Claim.objects.filter(sentence__verification_id=verification_id)
    sources = Source.objects.filter(verification_id=verification_id)
    evidence = Evidence.objects.filter(claim__sentence__verification_id=verification_id)
    redone = Q(status__in=UNFINISHED, claims__isnull=True)
    redone_sentences = list(
        sentences.filter(redone | Q(status=Status.FAILED) if failed else redone).values_list("pk", flat=True).distinct()
    )
    fetches = list(sources.filter(status__in=again).values_list("pk", flat=True))
    unread = SearchResult.objects.filter(source_id__in=fetches).exclude(status=Status.DONE)
    refetched_claims = set(unread.values_list("claim_id", flat=True))
    finished_claims = [ClaimStatus.DONE] if failed else [ClaimStatus.DONE, ClaimStatus.FAILED]
    stalled_claims = (
        claims.exclude(status__in=finished_claims)
        .exclude(sentence_id__in=redone_sentences)
        .exclude(pk__in=refetched_claims)
        .annotate(results=Count("search_results"))
    )
    judging: dict[int, list[int]] = {}
    # Copies of a text are not judged: they follow the item that counts for them.
    retried = evidence.filter(status__in=again, duplicate_of__isnull=True)
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
        start=not sentences.exists(),
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
