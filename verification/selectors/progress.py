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
    pages = Source.objects.filter(verification=verification).aggregate(
        total=Count("id"),
        fetched=Count("id", filter=Q(status=Status.DONE)),
        failed=Count("id", filter=Q(status=Status.FAILED)),
    )
    judgements = Evidence.objects.filter(claim__sentence__verification=verification).aggregate(
        total=Count("id"), finished=Count("id", filter=Q(status__in=FINISHED))
    )
    total_sentences = sentences.count()
    stages = [
        (split, total_sentences),
        (claims["searched"], claims["total"]),
        (pages["fetched"] + pages["failed"], pages["total"]),
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
        "pages": {"total": pages["total"], "fetched": pages["fetched"], "failed": pages["failed"]},
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
    """Failed items grouped by step: how many, and each readable reason with its count."""
    # "problems-2": entries cached before reasons said whether they are transient are not read.
    return once_finished(verification, "problems-2", lambda: _problems(verification))


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
        "fetch": _fetch_reasons(verification),
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
    return [
        {
            "step": step,
            "label": PROBLEM_STEPS[step],
            "count": len(found),
            "reasons": [
                {"reason": reason, "count": n, "transient": transient}
                for (reason, transient), n in Counter(found).most_common()
            ],
        }
        for step, found in reasons.items()
        if found
    ]


# Said of a page that could not be read when its search snippet was judged in its place: nothing
# it could say was lost.
SNIPPET_JUDGED = "judged from its search snippet instead"


def _fetch_reasons(verification: Verification) -> list[tuple[str, bool]]:
    snippets = Evidence.objects.filter(source=OuterRef("pk"), snippet_only=True)
    failed = verification.sources.filter(status=Status.FAILED).annotate(snippet=Exists(snippets))
    return [
        (f"{error}; {SNIPPET_JUDGED}" if snippet else error, transient)
        for error, transient, snippet in failed.values_list("error", "transient", "snippet")
    ]
