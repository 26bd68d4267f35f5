"""What comes next: the joins, where the last arrival notices it is last (the conditional
transitions in services), and the judge's batching: which claims of a decompose chunk go to
the judge together, and when; or, for a claim too few of whose pages could be read, a second
search before the judge."""

import logging

from django.db.models import Count, Exists, OuterRef, Q

from verification import services
from verification.inputs.forms import SECOND_SEARCH_BELOW, cited_only
from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Evidence,
    Origin,
    SearchResult,
    Sentence,
    Status,
    Verification,
)
from verification.pipeline import duplicates, judge, search
from verification.worker import base, chunks

logger = logging.getLogger(__name__)


def after_sentence(sentence: Sentence) -> None:
    services.verification_finish(sentence.verification_id)


def after_claim(claim: Claim) -> None:
    # A claim that ended without judging (its search failed, it found no page) may have been
    # the last one its chunk's judging batch waited for.
    judge_ready(claim.sentence)
    if services.sentence_finish(claim.sentence_id):
        after_sentence(claim.sentence)


def after_judging(claim_id: int) -> None:
    if services.claim_finish(claim_id):
        after_claim(Claim.objects.select_related("sentence").get(pk=claim_id))


def after_hosts_typed(verification_ids) -> None:
    for verification_id in verification_ids:
        services.verification_finish(verification_id)


def maybe_judge(claim_id: int) -> None:
    """A claim's last page is read: judge its chunk's ready claims (see judge_ready)."""
    judge_ready(Claim.objects.select_related("sentence").get(pk=claim_id).sentence)


def judge_ready(sentence: Sentence, *, lingered: bool = False) -> None:
    """Send the ready claims (every page read) of the sentence's decompose chunk to the judge,
    packed into batches, once they fill a batch, or nothing else of the chunk is still being
    searched or read, or the first of them has waited JUDGE_LINGER_S (JUDGE_LINGER_LATER_S
    once the chunk has claims judged or judging; `lingered`): claims share calls, and a slow
    page elsewhere in the chunk holds a sentence's colour back by at most that. A ready claim
    with nothing to judge finishes at once. One caller at a time decides for a chunk
    (services.judging_turn)."""
    grouped = chunks.decompose_chunks(Sentence.objects.filter(verification_id=sentence.verification_id))
    sentence_ids = next(ids for ids in grouped if sentence.pk in ids)
    with services.judging_turn(sentence_ids[0]):
        _send_ready_claims(Claim.objects.filter(sentence_id__in=sentence_ids), sentence, lingered=lingered)


def search_again(claim: Claim) -> bool:
    """Whether the claim, whose search found no page, is searched once more (see _search_again)."""
    return claim.pk in _search_again(Claim.objects.filter(pk=claim.pk), claim.sentence, found_nothing=True)


def _search_again(claims, sentence: Sentence, *, found_nothing: bool = False) -> set[int]:
    """The claims whose pages are all read but fewer than the run's SECOND_SEARCH_BELOW of whose
    web results were read as pages (a page that refused, or was judged from its snippet alone,
    does not count) go back to `claim_search` for a second search with another query
    (search.second_query) instead of on to the judge; their ids. Once per claim, decided from
    the rows alone: a resumed or retried run, or two joins at once, never search a claim a
    third time (services.claim_begin_second_search)."""
    run_settings = Verification.objects.values_list("settings", flat=True).get(pk=sentence.verification_id)
    below = run_settings.get(SECOND_SEARCH_BELOW, 0)  # 0 as well for runs from before it
    if not below or run_settings.get("evidence", "web") not in ("web", "both") or cited_only(run_settings):
        return set()
    unread = SearchResult.objects.filter(claim__in=claims).exclude(status__in=FINISHED).values("claim_id")
    candidates = claims.filter(status=ClaimStatus.READING, second_query="").exclude(pk__in=unread)
    if not found_nothing:  # a claim whose first search found pages: only once they are all read
        candidates = candidates.filter(search_results__isnull=False).distinct()
    # Read once: evaluated again below, the claims could include one whose last page was read
    # in between, with no pages counted for it (PostgreSQL did that in CI).
    candidates = list(candidates.only("pk", "text", "query"))
    snippet_only = Evidence.objects.filter(
        claim_id=OuterRef("claim_id"), source_id=OuterRef("source_id"), snippet_only=True
    )
    pages_read = dict(
        SearchResult.objects.filter(
            claim__in=[claim.pk for claim in candidates],
            status=Status.DONE,
            source__status=Status.DONE,
            source__origin=Origin.WEB,
        )
        .exclude(Exists(snippet_only))
        .order_by()
        .values("claim_id")
        .annotate(read=Count("pk"))
        .values_list("claim_id", "read")
    )
    searched = set()
    for claim in candidates:
        query = search.second_query(claim.text, claim.query) if pages_read.get(claim.pk, 0) < below else ""
        if query and services.claim_begin_second_search(claim.pk, query=query):
            base.send("claim_search", claim.pk)
            searched.add(claim.pk)
    return searched


def _send_ready_claims(claims, sentence: Sentence, *, lingered: bool) -> None:
    unread = SearchResult.objects.filter(claim__in=claims).exclude(status__in=FINISHED).values("claim_id")
    ready = list(
        claims.filter(status=ClaimStatus.READING, search_results__isnull=False)
        .exclude(pk__in=unread)
        .annotate(pending=Count("evidence", filter=Q(evidence__status=Status.PENDING), distinct=True))
        .order_by("sentence__index", "index")
        .distinct()
    )
    # The second search is decided for exactly the claims found ready above, never on a query
    # of its own: pages are read (and committed) by other tasks while this one holds the turn,
    # and a claim whose last page was read between the two queries went to the judge on its
    # first search's pages, its second search skipped for good (PostgreSQL, one run in five).
    # A claim ready only after the query above is left to the join of the task that read its
    # last page, which comes next in turn.
    if ready:
        searched = _search_again(claims.filter(pk__in=[claim.pk for claim in ready]), sentence)
        ready = [claim for claim in ready if claim.pk not in searched]
    waiting = claims.filter(
        Q(status__in=[ClaimStatus.PENDING, ClaimStatus.SEARCHING])
        | Q(status=ClaimStatus.READING, pk__in=unread)
        | Q(status=ClaimStatus.READING, search_results__isnull=True)
    ).exists()
    if waiting and not lingered:
        held = [claim for claim in ready if claim.pending]
        batch = _full_batch(held)
        if len(batch) < len(held):
            started = claims.filter(status__in=[ClaimStatus.JUDGING, ClaimStatus.DONE]).exists()
            base.send("judge_lingered", sentence.pk, countdown=JUDGE_LINGER_LATER_S if started else JUDGE_LINGER_S)
        ready = [claim for claim in ready if not claim.pending] + batch
    groups = []
    for claim in ready:
        if services.claim_start_judging(claim.pk):
            groups.append(_to_judge(claim.pk))
    for batch in judge.pack([group for group in groups if group]):
        base.send("evidence_judge_batch", batch)


# How long a claim whose pages are all read waits for the other claims of its chunk to be read
# too, so that they share one judge call: briefly for the chunk's first call (the reader waits
# for a first colour), longer once the chunk has one under way. Every call repeats the judge's
# instructions, and a local model answers one call at a time anyway.
JUDGE_LINGER_S = 1.0


JUDGE_LINGER_LATER_S = 3.0


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
        after_judging(claim_id)  # judged before (a retried run): nothing new to judge
    elif not evidence_ids:
        _finish_without_evidence(claim_id)
    return evidence_ids


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
        after_claim(Claim.objects.select_related("sentence").get(pk=claim_id))


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
