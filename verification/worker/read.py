"""Reading a page: fetched (or an upload read), parsed in the CPU pool, cached per URL; then each
search result that cites it gets its passages chosen, and a claim whose pages are all read goes
on to the judge (joins.maybe_judge)."""

import logging

from django.conf import settings
from django.db.models import Min

from verification import services
from verification.clients import providers
from verification.clients.cache import cache_key, remember
from verification.inputs import domain_lists
from verification.inputs.documents import is_upload
from verification.models import (
    FINISHED,
    Claim,
    Origin,
    SearchResult,
    Source,
    Status,
    Upload,
)
from verification.pipeline import languages, refusals
from verification.pipeline.pdf import is_pdf
from verification.pipeline.types import (
    FetchedDocument,
    PageSentences,
    StepError,
)
from verification.worker import base, cpu, joins

logger = logging.getLogger(__name__)


def _fail_source(source_id, *, reason: str, transient: bool = True) -> None:
    services.source_fail(source_id, reason=reason, transient=transient)
    _read_waiting(source_id)


@base.step("fetching a page", give_up=_fail_source)
def source_fetch(source_id: int) -> None:
    source = Source.objects.get(pk=source_id)
    base.hold(source.verification_id)
    page = None
    if source.status not in FINISHED:  # a redelivered fetch of a finished page only reads results
        try:
            page = _page_sentences(source)
            _refuse_final_host(source, page)
            # The page's language, shown beside its passages (their `lang` and `dir`) and told to the judge.
            # (A page cached before languages were read is told from its sentences; one the detector
            # could not tell is not asked again: that would load its model into this process.)
            told = page.language
            language = told if told is not None else languages.detect_language_of(page.sentences) or ""
            services.source_fetched(source, page=page, language=language)
        except StepError as error:
            page = None
            services.source_fail(source_id, reason=str(error), transient=error.transient)
    _read_waiting(source_id, page)


def _page_sentences(source: Source) -> PageSentences:
    """The page, split for passage selection: from the shared cache, else downloaded (here) or
    read from its upload, and parsed (in the CPU pool)."""

    def read() -> PageSentences:
        document = _document(source)
        # Read before the pages of later sentences (cpu.run's `place`).
        first = SearchResult.objects.filter(source=source).aggregate(first=Min("claim__sentence__index"))["first"]
        try:
            page = cpu.run(
                cpu.read_page,
                document,
                pdf_max_pages=settings.PDF_MAX_PAGES,
                time_limit=settings.CPU_TIME_LIMIT,
                place=first or 0,
                for_run=source.verification_id,
            )
        except cpu.TookTooLong as error:
            # The same bytes take as long again: a retry would only spend the time limit once more.
            raise StepError(
                f"the {'PDF' if is_pdf(document) else 'page'} took too long to read ({error})", transient=False
            ) from None
        except StepError:
            # A challenge may read as no text at all: it is still a challenge, and says so.
            _refuse_stand_in(source, document, None)
            raise
        _refuse_stand_in(source, document, page)
        return page

    # "-2": pages cached before they were split in their language (issue 36) are read again.
    return remember(cache_key("page-sentences-2", source.url), read)


def _refuse_stand_in(source: Source, document: FetchedDocument, page: PageSentences | None) -> None:
    """A bot challenge, or a page empty until JavaScript runs, reads as a few lines ("Just a
    moment…", the app's description) or as nothing (`page` None): not the page, and not to be
    judged as it. Only short pages are looked at (a page the text cites too); the user's own
    documents are read as given."""
    if (
        source.origin == Origin.DOCUMENT
        or is_pdf(document)
        or document.content_type not in refusals.HTML_TYPES
        or (page is not None and sum(map(len, page.sentences)) >= refusals.CHECKED_BELOW_CHARS)
    ):
        return
    # Its markers and the words that matter are ASCII: no need to know the page's encoding.
    reason = refusals.stand_in_reason(document.body.decode("utf-8", errors="replace"))
    if reason:
        raise StepError(refusals.stand_in_error(reason), transient=False)


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
    read_results(source, list(SearchResult.objects.filter(source=source, status=Status.PENDING)), page)


def read_results(source: Source, results: list[SearchResult], page: PageSentences | None = None) -> None:
    """Choose each result's passages from its (fetched or failed) page, record them in one
    write, and send every claim whose pages are now all read to the judge."""
    if source.status not in FINISHED or not results:
        return
    if source.status == Status.DONE and page is None:
        try:
            page = _page_sentences(source)
        except StepError as error:  # no longer in the cache, and the page is gone now
            services.source_fail(source.pk, reason=str(error), transient=error.transient, was_read=True)
            source.status, source.error = Status.FAILED, str(error)
    if source.status == Status.DONE:
        try:
            chosen = _choose(results, page, source)
        except StepError as error:
            services.source_fail(source.pk, reason=str(error), transient=error.transient, was_read=True)
            source.status, source.error = Status.FAILED, str(error)
    if source.status == Status.FAILED:
        reads = [(result, None) for result in results]
    else:
        reads = list(zip(results, chosen, strict=True))
    for claim_id in services.results_read(reads, unread_reason=_unread_reason(source)):
        joins.maybe_judge(claim_id)


def _unread_reason(source: Source) -> str:
    """Why a page the web search found was not read, when its search snippet may be judged in
    its place (it refused, timed out, had no text); "" otherwise. Never for the user's own
    documents: no search engine read them."""
    if source.status != Status.FAILED or source.origin != Origin.WEB:
        return ""
    return refusals.unread_reason(source.error) or ""


def _choose(results: list[SearchResult], page: PageSentences, source: Source) -> list[list]:
    """Each result's evidence from its page: the best passages as one excerpt (one page, one
    item), or nothing when no sentence matched the claim. The page is ranked in its language, and
    the claims are the run's text's (a page whose language was not told is taken to be in that)."""
    run_settings = source.verification.settings
    claim_language = source.verification.language or "en"
    claims = Claim.objects.select_related("sentence").in_bulk([r.claim_id for r in results])
    try:
        excerpts = cpu.run(
            cpu.choose_excerpts,
            [claims[r.claim_id].text for r in results],
            page.sentences,
            top_k=run_settings["top_k_passages"],
            context=run_settings["context_size"],
            embedding_model=settings.EMBEDDING_MODEL if run_settings["retrieval_mode"] == "dense" else None,
            language=page.language or source.language or claim_language,
            claim_language=claim_language,
            time_limit=settings.CPU_TIME_LIMIT,
            place=min(claim.sentence.index for claim in claims.values()),
            for_run=claims[results[0].claim_id].sentence.verification_id,
        )
    except cpu.TookTooLong as error:
        raise StepError(f"choosing passages from the page took too long ({error})") from None
    return [[excerpt] if excerpt else [] for excerpt in excerpts]
