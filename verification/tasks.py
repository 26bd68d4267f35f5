"""Thin Celery tasks: ids in, load rows, call one pipeline step, save through services, fan out.

No task waits for another. Joins happen where the last arrival notices it is last (the
conditional transitions in services.py). A step's readable failure (StepError) marks its item
failed and the run goes on; an unexpected error does the same once Celery's retries are spent,
so a run always ends."""

import logging
from dataclasses import replace

from celery.contrib.django.task import DjangoTask
from django.db import OperationalError

from factsite.celery import app
from verification import providers, services
from verification.cache import cache_key, lookup, remember, store
from verification.models import FINISHED, Claim, Evidence, SearchResult, Sentence, Source, Status, Verification
from verification.pipeline import categorize, decompose, extract, judge, passages, search, segment
from verification.pipeline.types import EvidenceToJudge, SegmentedSentence, StepError

logger = logging.getLogger(__name__)


class StepTask(DjangoTask):
    """Retries what a retry can fix (a busy database); when it gives up, `give_up` marks the
    task's item failed so the run still ends."""

    acks_late = True
    autoretry_for = (OperationalError,)
    retry_backoff = 0.5
    retry_jitter = True
    max_retries = 5
    give_up = None

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        logger.error("task %s%r failed: %s", self.name, args, exc, exc_info=exc)
        if self.give_up is not None:
            # A StepError here came from outside the step's own try (e.g. building its client):
            # its text is still the readable reason.
            reason = (
                str(exc) if isinstance(exc, StepError) else f"internal error while {self.doing} ({type(exc).__name__})"
            )
            self.give_up(*args, reason=reason)


def step(doing: str, give_up=None):
    # staticmethod: a plain function stored on the task class would be bound to the task.
    return app.task(base=StepTask, doing=doing, give_up=staticmethod(give_up) if give_up else None)


def enqueue_verification(verification: Verification) -> None:
    """Start a run once the row is committed (the worker must be able to read it)."""
    _ensure_worker(keep=verification.pk)
    verification_start.delay_on_commit(str(verification.pk))


def retry_failed(verification_id) -> int:
    """Re-queue only the failed items of a finished run, in place; returns how many."""
    plan = services.verification_retry(verification_id)
    if not plan.items:
        return 0
    _ensure_worker(keep=verification_id)
    if plan.start:
        verification_start.delay_on_commit(str(verification_id))
    for sentence_id in plan.sentences:
        sentence_decompose.delay_on_commit(sentence_id)
    for claim_id in plan.searches:
        claim_search.delay_on_commit(claim_id)
    for source_id in [*plan.fetches, *plan.reads]:
        source_fetch.delay_on_commit(source_id)
    for claim_id, evidence_ids in plan.judging.items():
        for batch in judge.batches(evidence_ids):
            evidence_judge.delay_on_commit(claim_id, batch)
    for claim_id in plan.rereads:
        _maybe_judge(claim_id)
    for source in plan.retypes:
        _categorize(source)
    # Source types known at once (rules, another run's answer) end nothing by themselves.
    services.verification_finish(verification_id)
    return plan.items


def _ensure_worker(*, keep) -> None:
    from factsite.celery import ensure_embedded_worker

    if ensure_embedded_worker():
        # The in-memory queue died with the previous process: its unfinished runs cannot end.
        services.verifications_interrupt(reason="interrupted: the server restarted before this run ended", keep=keep)


# --- fail-and-continue handlers, also used by StepTask.give_up


def _fail_run(verification_id, *, reason: str) -> None:
    services.verification_fail(verification_id, reason=reason)


def _fail_sentence(sentence_id, *, reason: str) -> None:
    services.sentence_fail(sentence_id, reason=reason)
    _after_sentence(Sentence.objects.get(pk=sentence_id))


def _fail_claim(claim_id, *, reason: str) -> None:
    services.claim_fail(claim_id, reason=reason)
    _after_claim(Claim.objects.select_related("sentence").get(pk=claim_id))


def _fail_source(source_id, *, reason: str) -> None:
    services.source_fail(source_id, reason=reason)
    _read_waiting(source_id)


def _fail_categorize(host, verification_id, *, reason: str) -> None:
    _after_hosts_typed(services.host_category_answer(host, source_type="other", decided_by=f"fallback: {reason}"))


def _fail_judging(claim_id, evidence_ids, *, reason: str) -> None:
    services.evidence_fail(evidence_ids, reason=reason)
    _after_judging(claim_id)


# --- the joins


def _after_sentence(sentence: Sentence) -> None:
    services.verification_finish(sentence.verification_id)


def _after_claim(claim: Claim) -> None:
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
    if verification.status != Status.RUNNING and not services.verification_begin(verification):
        return
    sentences = services.sentences_save(verification=verification, segments=segment.segment(verification.text))
    if not sentences:
        services.verification_fail(verification_id, reason="the text has no sentences to check")
    for sentence in sentences:
        sentence_decompose.delay_on_commit(sentence.pk)


@step("finding the claims of a sentence", give_up=_fail_sentence)
def sentence_decompose(sentence_id: int) -> None:
    sentence = Sentence.objects.select_related("verification").get(pk=sentence_id)
    if not services.sentence_begin(sentence):
        return
    llm = providers.llm_client(sentence.verification.settings["model"])
    segmented = _segmented(sentence)
    key = cache_key("decompose", llm.base_url, llm.model, decompose.SYSTEM_PROMPT, decompose.build_prompt(segmented))
    try:
        drafts = remember(key, lambda: decompose.decompose_sentence(llm, segmented))
    except StepError as error:
        return _fail_sentence(sentence_id, reason=f"finding claims failed: {error}")
    finally:
        services.usage_add(sentence.verification_id, usage=llm.usage)
    claims = services.claims_save(sentence=sentence, drafts=drafts)
    if not claims and services.sentence_finish(sentence_id, note="no checkable claim in this sentence"):
        _after_sentence(sentence)
    for claim in claims:
        claim_search.delay_on_commit(claim.pk)


@step("searching the web for a claim", give_up=_fail_claim)
def claim_search(claim_id: int) -> None:
    claim = Claim.objects.select_related("sentence__verification").get(pk=claim_id)
    if not services.claim_begin_search(claim):
        return
    verification = claim.sentence.verification
    provider, top_k = providers.search_provider(), verification.settings["top_k_results"]
    key = cache_key("search", provider.endpoint, claim.query, top_k)
    hits = lookup(key)
    if hits is None:
        try:
            hits = search.search_claim(provider, claim.query, top_k)
        except StepError as error:
            return _fail_claim(claim_id, reason=f"web search failed: {error}")
        finally:
            # Its own short write: the run's row is every task's counter, so no long lock on it.
            services.usage_add(verification.pk, searches=1)
        store(key, hits)
    new_sources = services.search_results_save(claim=claim, hits=hits, host_of=providers.host_of)
    if not hits:
        if services.claim_finish(claim_id, note="the web search found no pages"):
            _after_claim(claim)
        return
    for source in new_sources:  # downloads first: they are on the critical path, types are not
        source_fetch.delay_on_commit(source.pk)
    for source in new_sources:
        _categorize(source)
    # Pages another claim of this run already fetched: choose passages here, no second
    # download. (Read after our results are committed, so a fetch finishing meanwhile either
    # sees our result or we see its page.)
    ready = claim.search_results.filter(source__status__in=FINISHED, status=Status.PENDING).select_related(
        "source__verification"
    )
    for result in ready:
        _read_results(result.source, [result])


@step("fetching a page", give_up=_fail_source)
def source_fetch(source_id: int) -> None:
    source = Source.objects.get(pk=source_id)
    if source.status not in FINISHED:  # a redelivered fetch of a finished page only reads results
        try:
            page = remember(
                cache_key("page", source.url), lambda: extract.fetch_page(providers.page_fetcher(), source.url)
            )
            services.source_fetched(source, page=page, sentences=passages.page_sentences(page.text))
        except StepError as error:
            services.source_fail(source_id, reason=str(error))
    _read_waiting(source_id)


@step("deciding a source's type", give_up=_fail_categorize)
def host_categorize(host: str, verification_id: str) -> None:
    """Asked by the first run that met the host; its usage counts there."""
    llm = providers.llm_client(Verification.objects.get(pk=verification_id).settings["model"])
    title = Source.objects.filter(verification_id=verification_id, host=host).values_list("title", flat=True).first()
    try:
        source_type = categorize.categorize_with_llm(llm, host, title or "")
    except StepError as error:
        return _fail_categorize(host, verification_id, reason=str(error))
    finally:
        services.usage_add(verification_id, usage=llm.usage)
    _after_hosts_typed(services.host_category_answer(host, source_type=source_type.value, decided_by="llm"))


@step("judging evidence", give_up=_fail_judging)
def evidence_judge(claim_id: int, evidence_ids: list[int]) -> None:
    claim = Claim.objects.select_related("sentence__verification").get(pk=claim_id)
    items = list(
        Evidence.objects.filter(pk__in=evidence_ids, status=Status.PENDING).select_related("source").order_by("pk")
    )
    if items:
        llm = providers.llm_client(claim.sentence.verification.settings["model"])
        keys = {
            e.pk: cache_key("judge", llm.base_url, llm.model, judge.SYSTEM_PROMPT, claim.text, e.passage) for e in items
        }
        known = {e.pk: lookup(keys[e.pk]) for e in items}
        services.judgements_save(replace(j, key=str(pk)) for pk, j in known.items() if j is not None)
        unknown = [e for e in items if known[e.pk] is None]
        if unknown:
            try:
                judgements = judge.judge_claim(
                    llm,
                    claim=claim.text,
                    context=" ".join(claim.sentence.context),
                    items=[
                        EvidenceToJudge(key=str(e.pk), source_title=e.source.title, passage=e.passage) for e in unknown
                    ],
                )
            except StepError as error:
                return _fail_judging(claim_id, [e.pk for e in unknown], reason=f"judging failed: {error}")
            finally:
                services.usage_add(claim.sentence.verification_id, usage=llm.usage)
            services.judgements_save(judgements)
            for judgement in judgements:
                if judgement.verdict is not None:
                    store(keys[int(judgement.key)], judgement)
    _after_judging(claim_id)


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


def _categorize(source: Source) -> None:
    """Rule table or the per-host answer now; else the LLM, once per host (whoever claims the
    question asks; the others' sources are typed by its answer), in its own task off the
    critical path."""
    rule = categorize.categorize_by_rules(source.host)
    if rule:
        services.source_type_set(source, source_type=rule.value, decided_by="rules")
        return
    category, asking = services.host_category_claim(source.host)
    if category.source_type:
        services.source_type_set(source, source_type=category.source_type, decided_by="cache")
    elif asking:
        host_categorize.delay_on_commit(source.host, str(source.verification_id))


def _read_waiting(source_id: int) -> None:
    source = Source.objects.select_related("verification").get(pk=source_id)
    _read_results(source, list(SearchResult.objects.filter(source=source, status=Status.PENDING)))


def _read_results(source: Source, results: list[SearchResult]) -> None:
    """Choose each result's passages from its (fetched or failed) page, record them in one
    write, and send every claim whose pages are now all read to the judge."""
    if source.status not in FINISHED or not results:
        return
    run_settings = source.verification.settings
    claims = Claim.objects.in_bulk([r.claim_id for r in results])
    reads = [
        (r, None if source.status == Status.FAILED else _choose(claims[r.claim_id].text, source, run_settings))
        for r in results
    ]
    for claim_id in services.results_read(reads):
        _maybe_judge(claim_id)


def _choose(claim: str, source: Source, run_settings: dict) -> list:
    """The page's evidence for the claim: its best passages as one excerpt (one page, one
    item), or nothing when no sentence matched."""
    chosen = passages.select_passages(
        claim,
        source.sentences,
        top_k=run_settings["top_k_passages"],
        context=run_settings["context_size"],
        embedder=providers.embedder() if run_settings["retrieval_mode"] == "dense" else None,
    )
    excerpt = passages.page_excerpt(chosen)
    return [excerpt] if excerpt else []


def _maybe_judge(claim_id: int) -> None:
    """When the claim's last page is read, send its evidence to the judge in batches."""
    if not services.claim_start_judging(claim_id):
        return
    evidence_ids = list(Evidence.objects.filter(claim_id=claim_id, status=Status.PENDING).values_list("pk", flat=True))
    if not evidence_ids and Evidence.objects.filter(claim_id=claim_id).exists():
        _after_judging(claim_id)  # judged before (a retried run): nothing new to judge
        return
    if not evidence_ids:
        _finish_without_evidence(claim_id)
        return
    for batch in judge.batches(evidence_ids):
        evidence_judge.delay_on_commit(claim_id, batch)


def _finish_without_evidence(claim_id: int) -> None:
    reason, failed = _no_evidence_reason(claim_id)
    if services.claim_finish(claim_id, note=reason, failed=failed):
        _after_claim(Claim.objects.select_related("sentence").get(pk=claim_id))


def _no_evidence_reason(claim_id: int) -> tuple[str, bool]:
    """Why a claim whose pages are all read has no evidence, and whether that is a failure
    (every page failed) rather than a finding (the pages do not mention it)."""
    failed = list(
        SearchResult.objects.filter(claim_id=claim_id, source__status=Status.FAILED).values_list(
            "source__error", flat=True
        )
    )
    if failed and len(failed) == SearchResult.objects.filter(claim_id=claim_id).count():
        return f"no page could be read: {failed[0]}", True
    return "no passage on the pages found matched the claim", False
