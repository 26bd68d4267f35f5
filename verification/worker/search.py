"""Searching the web for a claim (cached across runs), keeping the hits the run's domain lists
allow, and sending each new page to be fetched and typed. A claim too few of whose pages could
be read is searched once more (joins.search_again), with another query, for pages it has not
seen."""

import logging
from dataclasses import replace

from django.db.models import Max

from verification import services
from verification.clients import providers
from verification.clients.cache import cache_key, lookup, store
from verification.inputs import domain_lists, forms
from verification.models import (
    FINISHED,
    Claim,
    Source,
    Status,
)
from verification.pipeline import domains, search
from verification.pipeline.types import (
    SearchHit,
    StepError,
)
from verification.selectors.quick import FROM_MODEL_KNOWLEDGE
from verification.worker import base, categorize, joins, read

logger = logging.getLogger(__name__)

NO_PAGES = "the web search found no pages"
NOTHING_CITED = "its sentence cites no source to read, and the run reads cited sources only"


def _fail_claim(claim_id, *, reason: str, transient: bool = True) -> None:
    claim = Claim.objects.select_related("sentence").get(pk=claim_id)
    if claim.second_query and claim.search_results.exists():
        # Its second search failed: it goes on to the judge with the pages of its first.
        services.claim_end_second_search(claim_id)
        joins.maybe_judge(claim_id)
        return
    services.claim_fail(claim_id, reason=reason, transient=transient)
    joins.after_claim(claim)


@base.step("searching the web for a claim", give_up=_fail_claim)
def claim_search(claim_id: int) -> None:
    claim = Claim.objects.select_related("sentence__verification").get(pk=claim_id)
    base.hold(claim.sentence.verification_id)
    if not services.claim_begin_search(claim):
        return
    if claim.from_model_knowledge:  # quick mode: the model knew it well enough (worker/decompose.py)
        if services.claim_finish_from_model_knowledge(claim_id, note=FROM_MODEL_KNOWLEDGE):
            joins.after_claim(claim)
        return
    # "documents": the run's own documents only, no search at all; "both": the web's and them.
    mode = claim.sentence.verification.settings.get("evidence", "web")
    if mode == "trail":  # checked down the steps that made the text, not searched (worker/trail.py)
        base.send("trail_continue", claim_id)
        return
    if claim.second_query:
        _search_again(claim)
        return
    cited_only = forms.cited_only(claim.sentence.verification.settings)
    try:
        hits = [] if mode == "documents" or cited_only else _hits_in_language(claim)
    except StepError as error:
        _fail_claim(claim.pk, reason=f"web search failed: {error}", transient=error.transient)
        return
    hits = _readable_hits(claim, hits)
    new_sources = services.claim_results_save(
        claim=claim, hits=hits, host_of=providers.host_of, documents=mode != "web"
    )
    if not claim.search_results.exists():
        note = NOTHING_CITED if cited_only else NO_PAGES
        if not joins.search_again(claim) and services.claim_finish(claim_id, note=note):
            joins.after_claim(claim)
        return
    _read(claim, new_sources)


def _search_again(claim: Claim) -> None:
    """The claim's second search, with `second_query`: the results it has not seen yet (by URL)
    are saved as its second round and read; then it is judged as usual. When that search fails,
    it goes on with the pages it has."""
    seen = set(claim.search_results.values_list("source__url", flat=True))
    try:
        hits = _web_hits(claim, claim.second_query, seen=len(seen))
    except StepError as error:
        logger.warning("the second search of claim %s failed (%s): judged on its first search's pages", claim.pk, error)
        services.claim_end_second_search(claim.pk)
        _after_second_search(claim, [], [])
        return
    hits = _readable_hits(claim, [hit for hit in hits if hit.url not in seen], search_round=2)
    # Ranked after the first search's results, which came first.
    last = claim.search_results.aggregate(last=Max("rank"))["last"] or 0
    hits = [replace(hit, rank=last + hit.rank) for hit in hits]
    new_sources = services.search_results_save(claim=claim, hits=hits, host_of=providers.host_of, search_round=2)
    _after_second_search(claim, hits, new_sources)


def _after_second_search(claim: Claim, hits: list[SearchHit], new_sources: list[Source]) -> None:
    if not claim.search_results.exists():
        if services.claim_finish(claim.pk, note=NO_PAGES):
            joins.after_claim(claim)
    elif hits:
        _read(claim, new_sources)
    else:  # nothing new: no page read will call the join for it
        joins.maybe_judge(claim.pk)


def _read(claim: Claim, new_sources: list[Source]) -> None:
    for source in new_sources:  # downloads first: they are on the critical path, types are not
        base.send("source_fetch", source.pk)
    categorize.type_sources(source for source in new_sources if not source.source_type)  # documents are typed already
    # Pages another claim of this run already fetched: choose passages here, no second
    # download. (Read after our results are committed, so a fetch finishing meanwhile either
    # sees our result or we see its page.)
    ready = claim.search_results.filter(source__status__in=FINISHED, status=Status.PENDING).select_related(
        "source__verification"
    )
    for result in ready:
        read.read_results(result.source, [result])


def _hits_in_language(claim: Claim) -> list:
    """The claim's first search, in the text's language; with the English query the
    decomposition wrote for a language whose web is thin, that search's results too, taking
    turns with the first's (search.merged). The English search failing leaves the first's."""
    language = claim.sentence.verification.language or None
    hits = _web_hits(claim, claim.query, language=language)
    if not claim.english_query or language in (None, "en"):
        return hits
    try:
        english = _web_hits(claim, claim.english_query, language="en")
    except StepError as error:
        logger.warning("the English search of claim %s failed (%s): its own language's results only", claim.pk, error)
        return hits
    return search.merged(hits, english, max(len(hits), len(english)))


def _web_hits(claim: Claim, query: str, *, seen: int = 0, language: str | None = None) -> list:
    """The web's results for `query` (cached across runs), counted with the run's searches;
    `seen` more than the run reads when that many are already the claim's. `language`: the
    query's, asked of the engines that take one (None: the run's text language). Raises StepError."""
    verification = claim.sentence.verification
    language = language or verification.language or None
    # English is asked as before languages were read, with no country: an English text is as often
    # British, Indian or Australian as American (and its searches keep their cache entries).
    language = None if language == "en" else language
    # More than the run reads when domain lists may leave some out (see _readable_hits).
    top_k = domains.search_depth(
        verification.settings["top_k_results"] + seen, domain_lists.rules_for(verification.settings)
    )
    provider = providers.search_provider()
    # The language is part of what was asked (Google's hl, another Wikipedia); none: as before.
    key = cache_key("search", provider.endpoint, query, top_k, *([language] if language else []))
    hits = lookup(key)
    if hits is not None:
        services.usage_add(verification.pk, searches_cached=1)
        return hits
    try:
        hits = search.search_claim(provider, query, top_k, language=language)
    finally:
        # Its own short write: the run's row is every task's counter, so no long lock on it.
        services.usage_add(verification.pk, searches=1)
    store(key, hits)
    return hits


def _readable_hits(claim: Claim, hits: list, *, search_round: int = 1) -> list:
    """The hits the run's domain lists let it read (the search cache holds them all, since
    runs differ in their lists), at most its top-k; how many were left out is recorded, so the
    result says so."""
    run_settings = claim.sentence.verification.settings
    kept, left_out = domains.filter_hits(hits, domain_lists.rules_for(run_settings), run_settings["top_k_results"])
    if left_out:
        services.claim_left_out_record(claim=claim, counts=left_out, search_round=search_round)
    return kept
