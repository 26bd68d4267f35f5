"""How far a run has gone, and what failed in it."""

from collections import Counter

from django.db.models import Count, Exists, OuterRef, Q

from verification import services
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    Sentence,
    Source,
    Status,
    Verification,
)
from verification.selectors.records import once_finished


def run_is_starting(verification: Verification) -> bool:
    """Whether the run waits for a process that is still warming up (its CPU pool loading the
    model): its owner, or, before a worker took it, every live worker."""
    if verification.status in FINISHED:
        return False
    alive = services.worker_processes_alive()
    if verification.owner:
        return alive.filter(name=verification.owner, warm_at__isnull=True).exists()
    return alive.exists() and not alive.filter(warm_at__isnull=False).exists()


def verification_progress(verification: Verification) -> dict:
    """Counts per stage, labelled for what they count, and a percentage that never goes back."""
    sentences = Sentence.objects.filter(verification=verification)
    split = sentences.filter(Q(status__in=FINISHED) | Exists(Claim.objects.filter(sentence=OuterRef("pk")))).count()
    claims = Claim.objects.filter(sentence__verification=verification).aggregate(
        total=Count("id"),
        searched=Count("id", filter=~Q(status__in=[ClaimStatus.PENDING, ClaimStatus.SEARCHING])),
    )
    # A page that could not be read but whose search snippet was judged in its place is not a
    # failure: it is counted apart, as read from its snippet.
    pages = (
        Source.objects.filter(verification=verification)
        .annotate(snippet=Exists(_snippets()))
        .aggregate(
            total=Count("id"),
            fetched=Count("id", filter=Q(status=Status.DONE)),
            failed=Count("id", filter=Q(status=Status.FAILED, snippet=False)),
            read_from_snippet=Count("id", filter=Q(status=Status.FAILED, snippet=True)),
        )
    )
    judgements = Evidence.objects.filter(claim__sentence__verification=verification).aggregate(
        total=Count("id"), finished=Count("id", filter=Q(status__in=FINISHED))
    )
    total_sentences = sentences.count()
    stages = [
        (split, total_sentences),
        (claims["searched"], claims["total"]),
        (pages["fetched"] + pages["failed"] + pages["read_from_snippet"], pages["total"]),
        (judgements["finished"], judgements["total"]),
    ]
    if verification.status in FINISHED:
        percent = 100
    else:
        # Each stage is a quarter of the bar; a stage not reached yet counts as empty. Found work
        # (more claims, more pages) lowers a stage's share, so the bar keeps its highest value.
        computed = min(99, round(sum(25 * done / total for done, total in stages if total)))
        percent = max(computed, verification.progress)
        if computed > verification.progress:
            services.progress_record(verification.pk, computed)
    return {
        "percent": percent,
        "starting": run_is_starting(verification),
        "sentences": {"total": total_sentences, "decomposed": split},
        "claims": {"total": claims["total"], "searched": claims["searched"]},
        "pages": {key: pages[key] for key in ("total", "fetched", "failed", "read_from_snippet")},
        "judgements": {"total": judgements["total"], "made": judgements["finished"]},
    }


PROBLEM_STEPS = {
    "run": "the run",
    "decompose": "finding claims",
    "search": "web search",
    "fetch": "reading pages",
    "judge": "judging evidence",
    "categorize": "deciding source types",
}


def verification_problems(verification: Verification) -> list[dict]:
    """Failed items grouped by step: how many, and each readable reason with its count. A page
    that could not be read but whose search snippet was judged in its place is listed with its
    reason under "reading pages" yet is no failed item: counted apart (`read_from_snippet`)."""
    # "problems-3": entries cached before reasons said whether they are transient, or before
    # pages read from their snippets were counted apart, are not read.
    return once_finished(verification, "problems-3", lambda: _problems(verification))


def _problems(verification: Verification) -> list[dict]:
    """Each reason with whether a retry may change it (`transient`): the page says which
    failures "Retry failed parts" will not change."""
    run_reasons = []
    if verification.status == Status.FAILED and not verification.error.startswith(services.NO_EVIDENCE_JUDGED):
        run_reasons = [(verification.error, verification.transient)]
    failed_claims = (
        Claim.objects.filter(sentence__verification=verification, status=ClaimStatus.FAILED)
        .annotate(
            results=Count("search_results"),
            failed_results=Count("search_results", filter=Q(search_results__status=Status.FAILED)),
        )
        .values_list("error", "transient", "results", "failed_results")
    )
    reasons = {
        "run": run_reasons,
        "decompose": list(
            Sentence.objects.filter(verification=verification, status=Status.FAILED).values_list("error", "transient")
        ),
        # A claim whose every page failed is told under "reading pages", once per page.
        "search": [
            (error, transient) for error, transient, results, failed in failed_claims if not results or failed < results
        ],
        "fetch": _fetch_reasons(verification, snippet=False),
        "judge": list(
            Evidence.objects.filter(claim__sentence__verification=verification, status=Status.FAILED).values_list(
                "error", "transient"
            )
        ),
        # The fallback type is a guess: asked again on every retry.
        "categorize": [
            (decided.removeprefix("fallback: "), True)
            for decided in verification.sources.filter(type_decided_by__startswith="fallback").values_list(
                "type_decided_by", flat=True
            )
        ],
    }
    # Told with the failed pages, never counted as failed: pages whose snippet was judged instead.
    read_from_snippet = {"fetch": _fetch_reasons(verification, snippet=True)}
    return [
        _problem(step, found, read_from_snippet.get(step, []))
        for step, found in reasons.items()
        if found or read_from_snippet.get(step)
    ]


def _problem(step: str, failed: list[tuple[str, bool]], read_from_snippet: list[tuple[str, bool]]) -> dict:
    """One step's entry: `count` its failed items; `read_from_snippet` its pages that could not
    be read but whose search snippet was judged in their place (no failed item, yet listed)."""
    found = Counter((reason, transient, False) for reason, transient in failed)
    found.update((reason, transient, True) for reason, transient in read_from_snippet)
    return {
        "step": step,
        "label": PROBLEM_STEPS[step],
        "count": len(failed),
        "read_from_snippet": len(read_from_snippet),
        "reasons": [
            {"reason": reason, "count": n, "transient": transient, "read_from_snippet": snippet}
            for (reason, transient, snippet), n in found.most_common()
        ],
    }


# Said of a page that could not be read when its search snippet was judged in its place: nothing
# it could say was lost.
SNIPPET_JUDGED = "judged from its search snippet instead"


def _snippets():
    """A source's items judged from its search snippet (for Exists)."""
    return Evidence.objects.filter(source=OuterRef("pk"), snippet_only=True)


def _fetch_reasons(verification: Verification, *, snippet: bool) -> list[tuple[str, bool]]:
    """The pages that could not be read, with whether a retry may read them: those whose search
    snippet was judged in their place (`snippet`, said so in their reason), or the others."""
    failed = verification.sources.filter(status=Status.FAILED).filter(
        Exists(_snippets()) if snippet else ~Exists(_snippets())
    )
    return [
        (f"{error}; {SNIPPET_JUDGED}" if snippet else error, transient)
        for error, transient in failed.values_list("error", "transient")
    ]
