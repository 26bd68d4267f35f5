"""How far a trail run has gone, in a trail's own terms (issue 38.8): the final text split into
claims, the rounds judged, the texts read (one selection per candidate text and round) and the
claims followed to the end of their trail. A web run's words ("claims searched", "pages") said
nothing true of it, and its bar sat at 0 % until whole claims ended."""

from django.db.models import Count, Exists, Max, Min, OuterRef, Q

from verification import services
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Sentence,
    Status,
    TrailNode,
    TrailRound,
    TrailSelection,
    Verification,
)

# The bar's share for splitting the final text into claims; the rest is the claims' trails.
SPLIT_SHARE = 10


def trail_progress(verification: Verification) -> dict:
    """Counts per stage and a percentage that never goes back: each claim counts its judged
    rounds, and the texts read in its current round, against the trail's depth (the most rounds
    a claim can take), and a claim whose trail ended counts whole."""
    sentences = Sentence.objects.filter(verification=verification)
    split = sentences.filter(Q(status__in=FINISHED) | Exists(Claim.objects.filter(sentence=OuterRef("pk")))).count()
    total_sentences = sentences.count()
    claims = _claims(verification)
    rounds = TrailRound.objects.filter(claim__sentence__verification=verification).aggregate(
        total=Count("id"), judged=Count("id", filter=Q(status__in=FINISHED))
    )
    texts = TrailSelection.objects.filter(round__claim__sentence__verification=verification).aggregate(
        total=Count("id"), read=Count("id", filter=Q(status__in=FINISHED))
    )
    documents = TrailNode.objects.filter(verification=verification).exclude(url="")
    return {
        "kind": "trail",
        "percent": _percent(verification, split, total_sentences, claims),
        "sentences": {"total": total_sentences, "split": split},
        "claims": {"total": len(claims), "ended": sum(1 for claim in claims if claim["ended"])},
        "rounds": {"total": rounds["total"], "judged": rounds["judged"]},
        "texts": {"total": texts["total"], "read": texts["read"]},
        "documents": {
            "total": documents.count(),
            "read": documents.exclude(status=Status.PENDING).count(),
        },
    }


def _claims(verification: Verification) -> list[dict]:
    """Each claim: whether its trail ended, and how many of its rounds were judged."""
    rows = (
        Claim.objects.filter(sentence__verification=verification)
        .annotate(judged=Count("trail_rounds", filter=Q(trail_rounds__status__in=FINISHED)))
        .values("pk", "status", "judged")
    )
    ended = (ClaimStatus.DONE, ClaimStatus.FAILED)
    return [{**row, "ended": row["status"] in ended} for row in rows]


def _current_round_share(verification: Verification) -> dict[int, float]:
    """Per claim, the share of its unjudged rounds' texts already read (a round's selections run
    in parallel, and its verdict waits for the last of them)."""
    counts = (
        TrailSelection.objects.filter(round__claim__sentence__verification=verification)
        .exclude(round__status__in=FINISHED)
        .values("round__claim_id")
        .annotate(total=Count("id"), read=Count("id", filter=Q(status__in=FINISHED)))
    )
    return {row["round__claim_id"]: row["read"] / row["total"] for row in counts if row["total"]}


def _depth(verification: Verification) -> int:
    """The most rounds a claim can take: one per stage between the final text and the sources."""
    stages = TrailNode.objects.filter(verification=verification).aggregate(low=Min("stage"), high=Max("stage"))
    if stages["high"] is None:
        return 1
    return max(1, stages["high"] - stages["low"])


def _percent(verification: Verification, split: int, total_sentences: int, claims: list[dict]) -> int:
    if verification.status in FINISHED:
        return 100
    done = SPLIT_SHARE * split / total_sentences if total_sentences else 0.0
    if claims:
        depth, reading = _depth(verification), _current_round_share(verification)
        traced = [
            1.0 if claim["ended"] else min(1.0, (claim["judged"] + reading.get(claim["pk"], 0.0)) / depth)
            for claim in claims
        ]
        done += (100 - SPLIT_SHARE) * sum(traced) / len(traced)
    # Found work (a claim's later rounds, more claims) can lower the sum: the bar keeps its highest.
    computed = min(99, round(done))
    if computed > verification.progress:
        services.progress_record(verification.pk, computed)
    return max(computed, verification.progress)
