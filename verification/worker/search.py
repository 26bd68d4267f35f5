"""Searching the web for a claim (cached across runs), keeping the hits the run's domain lists
allow, and sending each new page to be fetched and typed."""

import logging

from verification import services
from verification.clients import providers
from verification.clients.cache import cache_key, lookup, store
from verification.inputs import domain_lists
from verification.models import (
    FINISHED,
    Claim,
    Status,
)
from verification.pipeline import domains, search
from verification.pipeline.types import (
    StepError,
)
from verification.worker import base, categorize, joins, read

logger = logging.getLogger(__name__)


def _fail_claim(claim_id, *, reason: str, transient: bool = True) -> None:
    services.claim_fail(claim_id, reason=reason, transient=transient)
    joins.after_claim(Claim.objects.select_related("sentence").get(pk=claim_id))


@base.step("searching the web for a claim", give_up=_fail_claim)
def claim_search(claim_id: int) -> None:
    claim = Claim.objects.select_related("sentence__verification").get(pk=claim_id)
    base.hold(claim.sentence.verification_id)
    if not services.claim_begin_search(claim):
        return
    # "documents": the run's own documents only, no search at all; "both": the web's and them.
    mode = claim.sentence.verification.settings.get("evidence", "web")
    if mode == "trail":  # checked down the steps that made the text, not searched (worker/trail.py)
        base.send("trail_continue", claim_id)
        return
    hits = [] if mode == "documents" else _web_hits(claim)
    if hits is None:
        return
    hits = _readable_hits(claim, hits)
    new_sources = services.claim_results_save(
        claim=claim, hits=hits, host_of=providers.host_of, documents=mode != "web"
    )
    if not claim.search_results.exists():
        if services.claim_finish(claim_id, note="the web search found no pages"):
            joins.after_claim(claim)
        return
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
