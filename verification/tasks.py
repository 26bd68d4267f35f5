"""Thin Celery tasks: ids in, load rows, call one pipeline step, save through services, fan out.

No task waits for another. Joins happen where the last arrival notices it is last (the
conditional transitions in services.py). A step's readable failure (StepError) marks its item
failed and the run goes on; an unexpected error does the same once Celery's retries are spent,
so a run always ends.

The database rows are the truth, not the queue: a worker killed mid-task, a Redis restart or a
message that could not be sent leaves rows unfinished, and `sweep` (Celery beat, or a timer in
the embedded worker) enqueues them again once nobody is working on the run: its owner process
stopped beating, or, on the shared broker, no task of it ran for RUN_STALLED_AFTER seconds
(services.verifications_stalled, heartbeat.py). Every step starts again from any unfinished
state and skips finished items."""

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta

from celery.contrib.django.task import DjangoTask
from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import OperationalError
from django.db.models import Count, Min, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from factsite.celery import app, ensure_embedded_worker
from verification import services
from verification.access import limits
from verification.clients import providers
from verification.clients.cache import cache_key, lookup, remember, store
from verification.inputs import domain_lists
from verification.inputs.documents import is_upload
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    Origin,
    SearchResult,
    Sentence,
    Source,
    Status,
    Upload,
    Verification,
)
from verification.pipeline import categorize, decompose, domains, duplicates, judge, search, segment
from verification.pipeline.pdf import is_pdf
from verification.pipeline.types import (
    ClaimToJudge,
    EvidenceToJudge,
    FetchedDocument,
    PageSentences,
    SegmentedSentence,
    StepError,
)
from verification.worker import cpu, heartbeat

logger = logging.getLogger(__name__)


class RunCancelled(Exception):
    """The task's run was cancelled: the task ends without spending anything on it."""


def _hold(verification_id) -> None:
    """The task works for this run (heartbeat.hold), unless its creator cancelled it."""
    heartbeat.hold(verification_id)
    if Verification.objects.filter(pk=verification_id, status=Status.CANCELLED).exists():
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


def step(doing: str, give_up=None):
    # staticmethod: a plain function stored on the task class would be bound to the task.
    return app.task(base=StepTask, doing=doing, give_up=staticmethod(give_up) if give_up else None)


def send(task, *args, countdown: float | None = None) -> None:
    """Enqueue after the current transaction commits (to run `countdown` seconds later). A
    broker that cannot take the message (Redis restarting) loses nothing: the item's row stays
    unfinished and the sweeper sends it again."""
    try:
        task.apply_async_on_commit(args, countdown=countdown)
    except BrokerError as error:
        logger.warning("could not enqueue %s%r (%s); the sweeper will resume it", task.name, args, error)


def enqueue_verification(verification: Verification) -> None:
    """Start a run once the row is committed (the worker must be able to read it)."""
    _take(verification.pk, verification.settings)
    send(verification_start, str(verification.pk))


def retry_failed(verification_id) -> int:
    """Re-queue only the failed items of a finished run, in place; returns how many."""
    plan = services.verification_retry(verification_id)
    if not plan.items:
        return 0
    _take(verification_id, Verification.objects.get(pk=verification_id).settings)
    _enqueue(plan)
    # Source types known at once (rules, another run's answer) end nothing by themselves.
    services.verification_finish(verification_id)
    return plan.items


def _take(verification_id, run_settings: dict) -> None:
    """This process queues the run's work: on its own embedded worker, which then owns the run
    and runs it with this process's configuration, or on the shared broker, where the first
    worker to start it records its own (verification_start)."""
    if ensure_embedded_worker():
        services.verification_take(
            verification_id, owner=heartbeat.process_name(), needs=providers.run_needs(run_settings)
        )
    else:
        services.verification_take(verification_id, owner="", needs={})


@app.task(ignore_result=True)
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
    services.worker_processes_forget(gone_for=timedelta(days=1))
    resumed = 0
    for verification_id in services.verifications_stalled(silent_for=silent_for, gone_after=gone_after):
        verification = services.verification_expire_if_stale(
            Verification.objects.get(pk=verification_id), timeout_s=settings.RUN_TIMEOUT
        )
        owner = heartbeat.process_name() if settings.CELERY_EMBEDDED_WORKER else ""
        if verification.status in FINISHED or not services.verification_claim_sweep(
            verification_id, silent_for=silent_for, owner=owner
        ):
            continue
        if _refuse_other_configuration(verification):
            continue
        logger.warning("resuming %s: nobody has worked on it for a while", verification)
        resume(verification_id)
        resumed += 1
    return resumed


def _refuse_other_configuration(verification: Verification) -> bool:
    """A run is never run with other keys, servers or search providers than it was started
    with: a process configured otherwise fails it with what differs, for a person to retry it
    where that configuration is."""
    unmet = providers.needs_unmet(verification.needs, verification.settings)
    if unmet:
        services.verification_fail(
            verification.pk,
            reason=f"this run was started with another configuration than this process has ({', '.join(unmet)}); "
            "retry it from a process configured as the one that started it",
        )
    return bool(unmet)


BACKLOG_PATIENCE = 5


def _queued_messages() -> int:
    """Messages waiting in the broker's default queue (0 when it cannot tell)."""
    try:
        with app.connection_for_read() as connection:
            queue = connection.default_channel.queue_declare(queue=app.conf.task_default_queue, passive=True)
            return queue.message_count
    except Exception:  # no such queue yet, or the broker is away: behave as without a backlog
        return 0


@app.task(ignore_result=True)
def delete_old_runs() -> int:
    """Runs older than RUN_RETENTION_DAYS go, with all their rows (Celery beat, daily), and the
    spending rows no hourly limit counts any more."""
    services.spending_forget_before(timezone.now() - limits.WINDOW)
    return services.verifications_delete_older_than(settings.RUN_RETENTION_DAYS)


def resume(verification_id) -> None:
    """Enqueue a running run's unfinished items again and redo the joins that may have missed
    their last arrival; finishes the run if nothing is left."""
    plan = services.verification_resume_plan(verification_id)
    _enqueue(plan, ask_types_again=True)
    for claim_id in plan.judged:
        _after_judging(claim_id)
    for sentence in Sentence.objects.filter(pk__in=plan.settled):
        if services.sentence_finish(sentence.pk):
            _after_sentence(sentence)
    services.verification_finish(verification_id)


def _enqueue(plan: services.RetryPlan, *, ask_types_again: bool = False) -> None:
    if plan.start:
        send(verification_start, str(plan.verification_id))
    for chunk in _decompose_chunks(Sentence.objects.filter(pk__in=plan.sentences)):
        send(sentences_decompose, chunk)
    for claim_id in plan.searches:
        send(claim_search, claim_id)
    for source_id in [*plan.fetches, *plan.reads]:
        send(source_fetch, source_id)
    for batch in judge.pack(list(plan.judging.values())):
        send(evidence_judge_batch, batch)
    for claim_id in plan.rereads:
        _maybe_judge(claim_id)
    _categorize(plan.retypes, ask_again=ask_types_again)


# --- fail-and-continue handlers, also used by StepTask.give_up


def _fail_run(verification_id, *, reason: str, transient: bool = True) -> None:
    services.verification_fail(verification_id, reason=reason, transient=transient)


def _fail_sentences(sentence_ids, *, reason: str, transient: bool = True) -> None:
    for sentence_id in sentence_ids:
        _fail_sentence(sentence_id, reason=reason, transient=transient)


def _fail_sentence(sentence_id, *, reason: str, transient: bool = True) -> None:
    services.sentence_fail(sentence_id, reason=reason, transient=transient)
    _after_sentence(Sentence.objects.get(pk=sentence_id))


def _fail_claim(claim_id, *, reason: str, transient: bool = True) -> None:
    services.claim_fail(claim_id, reason=reason, transient=transient)
    _after_claim(Claim.objects.select_related("sentence").get(pk=claim_id))


def _fail_source(source_id, *, reason: str, transient: bool = True) -> None:
    services.source_fail(source_id, reason=reason, transient=transient)
    _read_waiting(source_id)


def _fail_categorize(host, verification_id, *, reason: str, transient: bool = True) -> None:
    _fail_categorize_hosts([host], verification_id, reason=reason, transient=transient)


def _fail_categorize_hosts(hosts, verification_id, *, reason: str, transient: bool = True) -> None:
    # A type asked again on a retry whatever the failure: the fallback ("other") is a guess.
    for host in hosts:
        _after_hosts_typed(services.host_category_answer(host, source_type="other", decided_by=f"fallback: {reason}"))


def _fail_judging(claim_id, evidence_ids, *, reason: str, transient: bool = True) -> None:
    _fail_evidence(evidence_ids, reason=reason, transient=transient)


def _fail_evidence(evidence_ids, *, reason: str, transient: bool = True) -> None:
    services.evidence_fail(evidence_ids, reason=reason, transient=transient)
    for claim_id in sorted(set(Evidence.objects.filter(pk__in=evidence_ids).values_list("claim_id", flat=True))):
        _after_judging(claim_id)


# --- the joins


def _after_sentence(sentence: Sentence) -> None:
    services.verification_finish(sentence.verification_id)


def _after_claim(claim: Claim) -> None:
    # A claim that ended without judging (its search failed, it found no page) may have been
    # the last one its chunk's judging batch waited for.
    _judge_ready(claim.sentence)
    if services.sentence_finish(claim.sentence_id):
        _after_sentence(claim.sentence)


def _after_judging(claim_id: int) -> None:
    if services.claim_finish(claim_id):
        _after_claim(Claim.objects.select_related("sentence").get(pk=claim_id))


def _after_hosts_typed(verification_ids) -> None:
    for verification_id in verification_ids:
        services.verification_finish(verification_id)


# --- the steps


@step("splitting the text into sentences", give_up=_fail_run)
def verification_start(verification_id: str) -> None:
    verification = Verification.objects.get(pk=verification_id)
    _hold(verification_id)
    if not verification.needs:
        services.verification_needs_record(verification_id, needs=providers.run_needs(verification.settings))
    elif _refuse_other_configuration(verification):
        return
    if verification.status != Status.RUNNING and not services.verification_begin(verification):
        return
    # Split when the run was created (services.verification_create); runs created before that
    # was so are split here.
    sentences = list(verification.sentences.all()) or services.sentences_save(
        verification=verification, segments=segment.segment(verification.text)
    )
    if not sentences:
        services.verification_fail(verification_id, reason="the text has no sentences to check", transient=False)
    for chunk in _decompose_chunks(s for s in sentences if s.status not in FINISHED):
        send(sentences_decompose, chunk)


@step("finding the claims of sentences", give_up=_fail_sentences)
def sentences_decompose(sentence_ids: list[int]) -> None:
    """One LLM call for a chunk of sentences (decompose.chunks); each sentence's claims are
    cached on their own, so an edited text asks again only about the sentences whose paragraph
    changed."""
    sentences = list(Sentence.objects.filter(pk__in=sentence_ids).select_related("verification").order_by("index"))
    if not sentences:
        return
    _hold(sentences[0].verification_id)
    begun = [sentence for sentence in sentences if services.sentence_begin(sentence)]
    # A redelivered task (its worker died while the model still wrote): the sentences whose
    # claims were saved before go on with them, and only the others are asked about again.
    decomposed = set(Claim.objects.filter(sentence__in=begun).values_list("sentence_id", flat=True))
    for sentence in begun:
        if sentence.pk in decomposed:
            _claims_save(sentence, [])
    begun = [sentence for sentence in begun if sentence.pk not in decomposed]
    if not begun:
        return
    llm = providers.llm_client(begun[0].verification.settings["model"])
    segmented = {sentence.pk: _segmented(sentence) for sentence in begun}
    keys = {
        pk: cache_key("decompose", llm.base_url, llm.model, decompose.SYSTEM_PROMPT, decompose.build_prompt([s]))
        for pk, s in segmented.items()
    }
    found = {pk: drafts for pk in keys if (drafts := lookup(keys[pk])) is not None}
    services.usage_add(begun[0].verification_id, llm_cached=len(found))
    for sentence in begun:
        if sentence.pk in found:
            _claims_save(sentence, found[sentence.pk])
    unknown = {sentence.index: sentence for sentence in begun if sentence.pk not in found}
    if not unknown:
        return

    def answered(index: int, drafts: list) -> None:
        # As the model writes them: the first sentences' claims are searched while it writes
        # the rest of the chunk.
        sentence = unknown.pop(index)
        store(keys[sentence.pk], drafts)
        _claims_save(sentence, drafts)

    asked = [segmented[sentence.pk] for sentence in unknown.values()]
    try:
        answers = decompose.decompose_chunk(llm, asked, on_sentence=answered)
    except StepError as error:
        answers = {}
        _fail_sentences(
            [sentence.pk for sentence in unknown.values()],
            reason=f"finding claims failed: {error}",
            transient=error.transient,
        )
    finally:
        services.usage_add(begun[0].verification_id, usage=llm.usage)
    if answers:
        for sentence in unknown.values():
            _fail_sentence(sentence.pk, reason=f"finding claims failed: {decompose.NOT_ANSWERED}")


@step("finding the claims of a sentence", give_up=_fail_sentence)
def sentence_decompose(sentence_id: int) -> None:
    """The one-sentence form of sentences_decompose (messages queued before chunks existed)."""
    sentences_decompose([sentence_id])


def _claims_save(sentence: Sentence, drafts: list) -> None:
    budget = settings.MAX_CLAIMS_PER_RUN
    claims = services.claims_save(sentence=sentence, drafts=drafts, budget=budget)
    if claims is None:
        reason = f"skipped: this run's budget of {budget} claims (MAX_CLAIMS_PER_RUN) was spent"
        # A retry finds the budget as spent as now.
        return _fail_sentence(sentence.pk, reason=reason, transient=False)
    if not claims and services.sentence_finish(sentence.pk, note="no checkable claim in this sentence"):
        _after_sentence(sentence)
    for claim in claims:
        send(claim_search, claim.pk)


@step("searching the web for a claim", give_up=_fail_claim)
def claim_search(claim_id: int) -> None:
    claim = Claim.objects.select_related("sentence__verification").get(pk=claim_id)
    _hold(claim.sentence.verification_id)
    if not services.claim_begin_search(claim):
        return
    # "documents": the run's own documents only, no search at all; "both": the web's and them.
    mode = claim.sentence.verification.settings.get("evidence", "web")
    hits = [] if mode == "documents" else _web_hits(claim)
    if hits is None:
        return
    hits = _readable_hits(claim, hits)
    new_sources = services.claim_results_save(
        claim=claim, hits=hits, host_of=providers.host_of, documents=mode != "web"
    )
    if not claim.search_results.exists():
        if services.claim_finish(claim_id, note="the web search found no pages"):
            _after_claim(claim)
        return
    for source in new_sources:  # downloads first: they are on the critical path, types are not
        send(source_fetch, source.pk)
    _categorize(source for source in new_sources if not source.source_type)  # documents are typed already
    # Pages another claim of this run already fetched: choose passages here, no second
    # download. (Read after our results are committed, so a fetch finishing meanwhile either
    # sees our result or we see its page.)
    ready = claim.search_results.filter(source__status__in=FINISHED, status=Status.PENDING).select_related(
        "source__verification"
    )
    for result in ready:
        _read_results(result.source, [result])


def _web_hits(claim: Claim) -> list | None:
    """The claim's web search results (cached across runs), or None when the search failed
    (the claim is then failed with the reason)."""
    verification = claim.sentence.verification
    # More than the run reads when domain lists may leave some out (see _readable_hits).
    top_k = domains.search_depth(verification.settings["top_k_results"], domain_lists.rules_for(verification.settings))
    provider = providers.search_provider()
    key = cache_key("search", provider.endpoint, claim.query, top_k)
    hits = lookup(key)
    if hits is not None:
        services.usage_add(verification.pk, searches_cached=1)
    else:
        try:
            hits = search.search_claim(provider, claim.query, top_k)
        except StepError as error:
            _fail_claim(claim.pk, reason=f"web search failed: {error}", transient=error.transient)
            return None
        finally:
            # Its own short write: the run's row is every task's counter, so no long lock on it.
            services.usage_add(verification.pk, searches=1)
        store(key, hits)
    return hits


def _readable_hits(claim: Claim, hits: list) -> list:
    """The hits the run's domain lists let it read (the search cache holds them all, since
    runs differ in their lists), at most its top-k; how many were left out is recorded, so the
    result says so."""
    run_settings = claim.sentence.verification.settings
    kept, left_out = domains.filter_hits(hits, domain_lists.rules_for(run_settings), run_settings["top_k_results"])
    if left_out:
        services.claim_left_out_record(claim=claim, counts=left_out)
    return kept


@step("fetching a page", give_up=_fail_source)
def source_fetch(source_id: int) -> None:
    source = Source.objects.get(pk=source_id)
    _hold(source.verification_id)
    page = None
    if source.status not in FINISHED:  # a redelivered fetch of a finished page only reads results
        try:
            page = _page_sentences(source)
            _refuse_final_host(source, page)
            services.source_fetched(source, page=page)
        except StepError as error:
            page = None
            services.source_fail(source_id, reason=str(error), transient=error.transient)
    _read_waiting(source_id, page)


@step("deciding a source's type", give_up=_fail_categorize_hosts)
def hosts_categorize(hosts: list[str], verification_id: str) -> None:
    _ask_types(hosts, verification_id)


@step("deciding a source's type", give_up=_fail_categorize)
def host_categorize(host: str, verification_id: str) -> None:
    """One host: what queues filled before hosts were asked together still hold."""
    _ask_types([host], verification_id)


def _ask_types(hosts: list[str], verification_id: str) -> None:
    """Asked by the first run that met the hosts, in one call; its usage counts there. Hosts
    the model's answer left out are asked once more, one by one."""
    heartbeat.hold(verification_id)  # even if cancelled: other runs wait for the answer
    llm = providers.llm_client(Verification.objects.get(pk=verification_id).settings["model"])
    titles = dict(Source.objects.filter(verification_id=verification_id, host__in=hosts).values_list("host", "title"))
    try:
        if len(hosts) == 1:
            found = {hosts[0]: categorize.categorize_with_llm(llm, hosts[0], titles.get(hosts[0]) or "")}
        else:
            found = categorize.categorize_many_with_llm(llm, [(host, titles.get(host) or "") for host in hosts])
    except StepError as error:
        return _fail_categorize_hosts(hosts, verification_id, reason=str(error))
    finally:
        services.usage_add(verification_id, usage=llm.usage)
    for host, source_type in found.items():
        _after_hosts_typed(services.host_category_answer(host, source_type=source_type.value, decided_by="llm"))
    left_out = [host for host in hosts if host not in found]
    for host in left_out:
        send(hosts_categorize, [host], verification_id)


@step("judging evidence", give_up=_fail_evidence)
def evidence_judge_batch(evidence_ids: list[int]) -> None:
    """One LLM call for a batch of evidence of one or more claims (judge.pack); answers are
    cached per claim and passage."""
    batch = list(
        Evidence.objects.filter(pk__in=evidence_ids)
        .select_related("source", "claim__sentence__verification")
        .order_by("claim__sentence__index", "claim__index", "pk")
    )
    if not batch:
        return
    verification = batch[0].claim.sentence.verification
    _hold(verification.pk)
    items = [e for e in batch if e.status == Status.PENDING]
    if items:
        _judge(verification, items)
    for claim_id in dict.fromkeys(e.claim_id for e in batch):
        _after_judging(claim_id)


@step("judging evidence", give_up=_fail_judging)
def evidence_judge(claim_id: int, evidence_ids: list[int]) -> None:
    """The one-claim form of evidence_judge_batch (messages queued before batches existed)."""
    evidence_judge_batch(evidence_ids)


def _judge(verification: Verification, items: list[Evidence]) -> None:
    llm = providers.llm_client(verification.settings["model"])
    keys = {
        e.pk: cache_key("judge", llm.base_url, llm.model, judge.SYSTEM_PROMPT, e.claim.text, e.passage) for e in items
    }
    known = {e.pk: lookup(keys[e.pk]) for e in items}
    services.judgements_save(replace(j, key=str(pk)) for pk, j in known.items() if j is not None)
    services.usage_add(verification.pk, llm_cached=sum(j is not None for j in known.values()))
    unknown = [e for e in items if known[e.pk] is None]
    if not unknown:
        return
    by_claim: dict[int, list[Evidence]] = {}
    for e in unknown:
        by_claim.setdefault(e.claim_id, []).append(e)
    claims = [
        ClaimToJudge(
            text=group[0].claim.text,
            context="",  # decomposed claims stand alone (see pipeline/judge.py)
            items=tuple(EvidenceToJudge(key=str(e.pk), source_title=e.source.title, passage=e.passage) for e in group),
        )
        for group in by_claim.values()
    ]
    try:
        judgements = judge.judge_claims(llm, claims)
    except StepError as error:
        services.evidence_fail([e.pk for e in unknown], reason=f"judging failed: {error}", transient=error.transient)
        return
    finally:
        services.usage_add(verification.pk, usage=llm.usage)
    services.judgements_save(judgements)
    for judgement in judgements:
        if judgement.verdict is not None:
            store(keys[int(judgement.key)], judgement)


# --- helpers of the steps


def _segmented(sentence: Sentence) -> SegmentedSentence:
    return SegmentedSentence(
        index=sentence.index,
        text=sentence.text,
        start=sentence.start,
        end=sentence.end,
        paragraph_index=sentence.paragraph_index,
        context=tuple(sentence.context),
        position_in_context=sentence.position_in_context,
    )


def _categorize(sources: Iterable[Source], *, ask_again: bool = False) -> None:
    """Each source's type from the rule table or the per-host answer now; else the LLM, once
    per host (whoever claims the question asks; the others' sources are typed by its answer),
    the hosts of one run asked together in a task of their own, off the critical path.
    `ask_again`: the sweeper asks even if a question is in flight (its asker may have died with it)."""
    to_ask: dict[str, list[str]] = defaultdict(list)
    for source in sources:
        rule = categorize.categorize_by_rules(source.host)
        if rule:
            _type_source(source, rule.value, "rules")
            continue
        category, asking = services.host_category_claim(source.host)
        if category.source_type:
            _type_source(source, category.source_type, "cache")
        elif (asking or ask_again) and source.host not in to_ask[str(source.verification_id)]:
            to_ask[str(source.verification_id)].append(source.host)
    for verification_id, hosts in to_ask.items():
        for start in range(0, len(hosts), categorize.HOSTS_PER_CALL):
            send(hosts_categorize, hosts[start : start + categorize.HOSTS_PER_CALL], verification_id)


def _type_source(source: Source, source_type: str, decided_by: str) -> None:
    # The type can be the last thing the run waits for: its pages may all be read and judged
    # already (the fetch was enqueued before this), so the join is tried here too.
    if services.source_type_set(source, source_type=source_type, decided_by=decided_by):
        services.verification_finish(source.verification_id)


def _page_sentences(source: Source) -> PageSentences:
    """The page, split for passage selection: from the shared cache, else downloaded (here) or
    read from its upload, and parsed (in the CPU pool)."""

    def read() -> PageSentences:
        document = _document(source)
        # Read before the pages of later sentences (cpu.run's `place`).
        first = SearchResult.objects.filter(source=source).aggregate(first=Min("claim__sentence__index"))["first"]
        try:
            return cpu.run(
                cpu.read_page,
                document,
                pdf_max_pages=settings.PDF_MAX_PAGES,
                time_limit=settings.CPU_TIME_LIMIT,
                place=first or 0,
            )
        except cpu.TookTooLong as error:
            raise StepError(f"the {'PDF' if is_pdf(document) else 'page'} took too long to read ({error})") from None

    return remember(cache_key("page-sentences", source.url), read)


def _domain_refusal(source: Source):
    """Why the run must not read a page at a given URL (its domain lists), for a page the web
    search found; None when nothing is refused. The user's own documents are read as given."""
    rules = domain_lists.rules_for(source.verification.settings)
    return rules.reason if rules and source.origin == Origin.WEB else None


def _refuse_final_host(source: Source, page: PageSentences) -> None:
    """A page that redirected to a refused host: the fetcher stops such redirects, but a copy
    cached by a run without the list may have followed one."""
    refusal = _domain_refusal(source)
    reason = refusal(page.final_url) if refusal and page.final_url != source.url else None
    if reason:
        raise StepError(f"the page redirected to another site: {reason}", transient=False)


def _document(source: Source) -> FetchedDocument:
    if not is_upload(source.url):
        return providers.page_fetcher().fetch(source.url, refuse=_domain_refusal(source))
    upload = Upload.objects.filter(source=source).first()
    if upload is None:
        raise StepError("the uploaded file is no longer stored", transient=False)
    # bytes(): PostgreSQL hands binary columns back as memoryview.
    return FetchedDocument(source.url, source.url, upload.content_type, None, bytes(upload.body))


def _read_waiting(source_id: int, page: PageSentences | None = None) -> None:
    source = Source.objects.select_related("verification").get(pk=source_id)
    _read_results(source, list(SearchResult.objects.filter(source=source, status=Status.PENDING)), page)


def _read_results(source: Source, results: list[SearchResult], page: PageSentences | None = None) -> None:
    """Choose each result's passages from its (fetched or failed) page, record them in one
    write, and send every claim whose pages are now all read to the judge."""
    if source.status not in FINISHED or not results:
        return
    if source.status == Status.DONE and page is None:
        try:
            page = _page_sentences(source)
        except StepError as error:  # no longer in the cache, and the page is gone now
            services.source_fail(source.pk, reason=str(error), transient=error.transient, was_read=True)
            source.status = Status.FAILED
    if source.status == Status.DONE:
        try:
            chosen = _choose(results, page, source.verification.settings)
        except StepError as error:
            services.source_fail(source.pk, reason=str(error), transient=error.transient, was_read=True)
            source.status = Status.FAILED
    if source.status == Status.FAILED:
        reads = [(result, None) for result in results]
    else:
        reads = list(zip(results, chosen, strict=True))
    for claim_id in services.results_read(reads):
        _maybe_judge(claim_id)


def _choose(results: list[SearchResult], page: PageSentences, run_settings: dict) -> list[list]:
    """Each result's evidence from its page: the best passages as one excerpt (one page, one
    item), or nothing when no sentence matched the claim."""
    claims = Claim.objects.select_related("sentence").in_bulk([r.claim_id for r in results])
    try:
        excerpts = cpu.run(
            cpu.choose_excerpts,
            [claims[r.claim_id].text for r in results],
            page.sentences,
            top_k=run_settings["top_k_passages"],
            context=run_settings["context_size"],
            embedding_model=settings.EMBEDDING_MODEL if run_settings["retrieval_mode"] == "dense" else None,
            time_limit=settings.CPU_TIME_LIMIT,
            place=min(claim.sentence.index for claim in claims.values()),
        )
    except cpu.TookTooLong as error:
        raise StepError(f"choosing passages from the page took too long ({error})") from None
    return [[excerpt] if excerpt else [] for excerpt in excerpts]


def _maybe_judge(claim_id: int) -> None:
    """A claim's last page is read: judge its chunk's ready claims (see _judge_ready)."""
    _judge_ready(Claim.objects.select_related("sentence").get(pk=claim_id).sentence)


def _judge_ready(sentence: Sentence, *, lingered: bool = False) -> None:
    """Send the ready claims (every page read) of the sentence's decompose chunk to the judge,
    packed into batches, once they fill a batch, or nothing else of the chunk is still being
    searched or read, or the first of them has waited JUDGE_LINGER_S (JUDGE_LINGER_LATER_S
    once the chunk has claims judged or judging; `lingered`): claims share calls, and a slow
    page elsewhere in the chunk holds a sentence's colour back by at most that. A ready claim
    with nothing to judge finishes at once. One caller at a time decides for a chunk
    (services.judging_turn)."""
    chunks = _decompose_chunks(Sentence.objects.filter(verification_id=sentence.verification_id))
    sentence_ids = next(ids for ids in chunks if sentence.pk in ids)
    with services.judging_turn(sentence_ids[0]):
        _send_ready_claims(Claim.objects.filter(sentence_id__in=sentence_ids), sentence, lingered=lingered)


def _send_ready_claims(claims, sentence: Sentence, *, lingered: bool) -> None:
    unread = SearchResult.objects.filter(claim__in=claims).exclude(status__in=FINISHED).values("claim_id")
    waiting = claims.filter(
        Q(status__in=[ClaimStatus.PENDING, ClaimStatus.SEARCHING])
        | Q(status=ClaimStatus.READING, pk__in=unread)
        | Q(status=ClaimStatus.READING, search_results__isnull=True)
    ).exists()
    ready = list(
        claims.filter(status=ClaimStatus.READING, search_results__isnull=False)
        .exclude(pk__in=unread)
        .annotate(pending=Count("evidence", filter=Q(evidence__status=Status.PENDING), distinct=True))
        .order_by("sentence__index", "index")
        .distinct()
    )
    if waiting and not lingered:
        held = [claim for claim in ready if claim.pending]
        batch = _full_batch(held)
        if len(batch) < len(held):
            started = claims.filter(status__in=[ClaimStatus.JUDGING, ClaimStatus.DONE]).exists()
            send(judge_lingered, sentence.pk, countdown=JUDGE_LINGER_LATER_S if started else JUDGE_LINGER_S)
        ready = [claim for claim in ready if not claim.pending] + batch
    groups = []
    for claim in ready:
        if services.claim_start_judging(claim.pk):
            groups.append(_to_judge(claim.pk))
    for batch in judge.pack([group for group in groups if group]):
        send(evidence_judge_batch, batch)


# How long a claim whose pages are all read waits for the other claims of its chunk to be read
# too, so that they share one judge call: briefly for the chunk's first call (the reader waits
# for a first colour), longer once the chunk has one under way. Every call repeats the judge's
# instructions, and a local model answers one call at a time anyway.
JUDGE_LINGER_S = 1.0
JUDGE_LINGER_LATER_S = 3.0


@step("judging evidence")
def judge_lingered(sentence_id: int) -> None:
    """The claims of a chunk that waited JUDGE_LINGER_S for others go to the judge now."""
    sentence = Sentence.objects.filter(pk=sentence_id).first()
    if sentence is None:  # its run was deleted meanwhile
        return
    _hold(sentence.verification_id)
    _judge_ready(sentence, lingered=True)


def _full_batch(ready: list[Claim]) -> list[Claim]:
    """While a chunk's other claims are still read: the first ready claims that fill one
    batch (up to BATCH_SIZE items, or one larger claim), or none when they do not fill it."""
    taken: list[Claim] = []
    for claim in ready:
        if taken and sum(c.pending for c in taken) + claim.pending > judge.BATCH_SIZE:
            break
        taken.append(claim)
    return taken if sum(c.pending for c in taken) >= judge.BATCH_SIZE or len(taken) < len(ready) else []


def _to_judge(claim_id: int) -> list[int]:
    """A claim just taken for judging: its evidence left to judge (copies of a text follow the
    item that counts). With none, the claim finishes here."""
    _mark_duplicates(claim_id)
    pending = Evidence.objects.filter(claim_id=claim_id, status=Status.PENDING, duplicate_of__isnull=True)
    evidence_ids = list(pending.values_list("pk", flat=True))
    if not evidence_ids and Evidence.objects.filter(claim_id=claim_id).exists():
        _after_judging(claim_id)  # judged before (a retried run): nothing new to judge
    elif not evidence_ids:
        _finish_without_evidence(claim_id)
    return evidence_ids


def _decompose_chunks(sentences) -> list[list[int]]:
    """Sentence ids grouped as decompose.chunks groups them (the same groups are judged together)."""
    sentences = list(sentences)
    by_index = {sentence.index: sentence.pk for sentence in sentences}
    segmented = [_segmented(sentence) for sentence in sentences]
    chunked = decompose.chunks(segmented, max_sentences=settings.DECOMPOSE_CHUNK_SENTENCES)
    return [[by_index[s.index] for s in chunk] for chunk in chunked]


def _mark_duplicates(claim_id: int) -> None:
    """The same text found at several URLs is judged once and counts once: each copy is marked
    as a duplicate of the item that counts (one already judged, else the most relevant) and
    takes its verdict (services.evidence_mark_duplicates)."""
    items = Evidence.objects.filter(claim_id=claim_id, duplicate_of__isnull=True).values_list(
        "pk", "passage", "status", "relevance"
    )
    ordered = sorted(items, key=lambda item: (item[2] == Status.PENDING, -item[3], item[0]))
    found = duplicates.find_duplicates([duplicates.Candidate(pk, passage) for pk, passage, *_ in ordered])
    if found:
        services.evidence_mark_duplicates(found)


def _finish_without_evidence(claim_id: int) -> None:
    reason, failed, transient = _no_evidence_reason(claim_id)
    if services.claim_finish(claim_id, note=reason, failed=failed, transient=transient):
        _after_claim(Claim.objects.select_related("sentence").get(pk=claim_id))


def _no_evidence_reason(claim_id: int) -> tuple[str, bool, bool]:
    """Why a claim whose pages are all read has no evidence, whether that is a failure (every
    page failed) rather than a finding (the pages do not mention it), and whether a retry may
    read one of its pages."""
    failed = list(
        SearchResult.objects.filter(claim_id=claim_id, source__status=Status.FAILED).values_list(
            "source__error", "source__transient"
        )
    )
    if failed and len(failed) == SearchResult.objects.filter(claim_id=claim_id).count():
        return f"no page could be read: {failed[0][0]}", True, any(transient for _, transient in failed)
    return "no passage on the pages found matched the claim", False, True
