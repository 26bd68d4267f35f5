"""The writes of a trail run (issue 26): the run with its nodes, each claim's rounds and their
selections, and the claim's result. Transitions are conditional UPDATEs, as everywhere: the one
caller that wins a transition does what follows (the verdict of a round whose selections are
all in, exactly once).

A round is pending while its selections run and once they are all in, until a verdict task takes
it (pending → running: its own task, or another claim's that asks its verdict in the same call,
trail_rounds_take_peers), then done with its verdict."""

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Q

from verification.models import (
    FINISHED,
    Claim,
    ClaimStatus,
    Status,
    TrailNode,
    TrailRound,
    TrailSelection,
    Verification,
)
from verification.pipeline import languages, segment
from verification.pipeline.citations import read_citations
from verification.pipeline.trail_graph import Trail
from verification.pipeline.types import SegmentedSentence
from verification.services.rows import sentences_save, transition


@transaction.atomic
def trail_create(
    *,
    trail: Trail,
    settings: dict,
    segments: Sequence[SegmentedSentence] | None = None,
    client: str = "",
    creator: str = "",
) -> Verification:
    """A trail run: its text is the final node's (decomposed into claims as any run's), and every
    node is a row. A node given as a document waits to be read (worker/trail.trail_node_read)."""
    final = trail.node(trail.final)
    verification = Verification.objects.create(
        text=final.text or "",
        settings={**settings, "evidence": "trail"},
        client=client,
        creator=creator,
        # Told from its own words, as a pasted text's (services.runs): not its markers or reference list.
        language=languages.detect_language(read_citations(final.text or "").text) or "",
    )
    TrailNode.objects.bulk_create(
        TrailNode(
            verification=verification,
            index=index,
            key=node.id,
            text=node.text or "",
            url=node.document.url if node.document else "",
            inputs=list(node.inputs),
            step=node.step or "",
            stage=trail.stage(node.id),
            status=Status.DONE if node.text is not None else Status.PENDING,
        )
        for index, node in enumerate(trail.nodes)
    )
    sentences_save(
        verification=verification, segments=segment.segment(verification.text) if segments is None else segments
    )
    return verification


def trail_node_read(node_id: int, *, text: str = "", error: str = "") -> bool:
    """A document node's text (or why it could not be read: it is then an empty text, which
    supports nothing). True for the caller that recorded it."""
    status = Status.FAILED if error else Status.DONE
    return transition(TrailNode.objects.filter(pk=node_id, status=Status.PENDING), to=status, text=text, error=error)


def trail_nodes_unread(verification_id) -> bool:
    return TrailNode.objects.filter(verification_id=verification_id, status=Status.PENDING).exists()


@transaction.atomic
def trail_round_open(*, claim: Claim, index: int, candidates) -> TrailRound:
    """The claim's round `index` with a pending selection per candidate (the one already there
    when a redelivered task opens it again)."""
    trail_round, created = TrailRound.objects.get_or_create(
        claim=claim, index=index, defaults={"candidates": list(candidates)}
    )
    if created:
        TrailSelection.objects.bulk_create(
            TrailSelection(round=trail_round, position=position, node_key=node)
            for position, node in enumerate(candidates)
        )
    return trail_round


def trail_selection_begin(selection_id: int) -> bool:
    """Pending → running, for one taker: the selection's own task, or another claim's task that
    takes it into its call (trail_selections_take_peers). One left running by a dead worker is
    made pending again when its run is resumed (trail_selections_reset)."""
    return transition(TrailSelection.objects.filter(pk=selection_id, status=Status.PENDING), to=Status.RUNNING)


def trail_selections_take_peers(selection: TrailSelection, *, limit: int) -> list[TrailSelection]:
    """Other claims' pending selections in the same text of the same run, taken (pending →
    running) to be asked in the same call; at most `limit`."""
    if limit <= 0:
        return []
    candidates = (
        TrailSelection.objects.filter(
            node_key=selection.node_key,
            status=Status.PENDING,
            round__status=Status.PENDING,
            round__claim__status=ClaimStatus.SEARCHING,
            round__claim__sentence__verification_id=selection.round.claim.sentence.verification_id,
        )
        .exclude(pk=selection.pk)
        .select_related("round__claim")
        .order_by("pk")[: limit * 2]
    )
    taken: list[TrailSelection] = []
    for peer in candidates:
        if len(taken) < limit and trail_selection_begin(peer.pk):
            taken.append(peer)
    return taken


def trail_selections_release(selection_ids) -> None:
    """Taken selections given back (running → pending), for their own tasks to ask again."""
    TrailSelection.objects.filter(pk__in=list(selection_ids), status=Status.RUNNING).update(status=Status.PENDING)


def trail_selections_reset(verification_id) -> None:
    """A resumed run (nobody works on it any more): selections and round verdicts its dead
    worker had taken are pending again."""
    TrailSelection.objects.filter(
        status=Status.RUNNING,
        round__status=Status.PENDING,
        round__claim__sentence__verification_id=verification_id,
    ).update(status=Status.PENDING)
    TrailRound.objects.filter(status=Status.RUNNING, claim__sentence__verification_id=verification_id).update(
        status=Status.PENDING, taken_by=""
    )


def trail_selection_save(selection_id: int, *, result: dict, prompt_tokens: int, completion_tokens: int) -> bool:
    """The node's selection; True for the one caller that finds its round's selections all
    done (its round then goes to the verdict)."""
    saved = transition(
        TrailSelection.objects.filter(pk=selection_id, status=Status.RUNNING),
        to=Status.DONE,
        result=result,
        error="",
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )
    return saved and trail_round_ready(TrailSelection.objects.get(pk=selection_id).round_id)


def _selecting():
    """The rounds that have a selection not in yet."""
    return TrailSelection.objects.exclude(status=Status.DONE).values("round_id")


def trail_round_ready(round_id: int) -> bool:
    """Whether the round waits for its verdict: its selections all in, nobody judging it."""
    return TrailRound.objects.filter(pk=round_id, status=Status.PENDING).exclude(pk__in=_selecting()).exists()


def trail_round_begin(round_id: int, *, taker: str) -> bool:
    """A ready round taken for its verdict (pending → running) by one taker, marked as its."""
    ready = TrailRound.objects.filter(pk=round_id, status=Status.PENDING).exclude(pk__in=_selecting())
    return transition(ready, to=Status.RUNNING, taken_by=taker)


def trail_rounds_take_peers(trail_round: TrailRound, *, taker: str, limit: int) -> list[TrailRound]:
    """Other claims' rounds of the same run waiting for their verdict, taken (pending → running)
    to be judged in the same call; at most `limit`, the earliest first."""
    if limit <= 0:
        return []
    candidates = (
        TrailRound.objects.filter(
            status=Status.PENDING,
            claim__status=ClaimStatus.SEARCHING,
            claim__sentence__verification_id=trail_round.claim.sentence.verification_id,
        )
        .exclude(pk=trail_round.pk)
        .exclude(pk__in=_selecting())
        .select_related("claim")
        .order_by("pk")[: limit * 2]
    )
    taken: list[TrailRound] = []
    for peer in candidates:
        if len(taken) < limit and trail_round_begin(peer.pk, taker=taker):
            taken.append(peer)
    return taken


def trail_rounds_taken(taker: str) -> list[TrailRound]:
    """The rounds a taker holds and has not judged yet."""
    return list(TrailRound.objects.filter(status=Status.RUNNING, taken_by=taker).select_related("claim"))


def trail_rounds_take_over(previous: str, *, taker: str) -> bool:
    """The rounds of a taker that will not judge them (its process died; it is this task before
    a retry) pass to `taker`; False when another caller took them first."""
    return TrailRound.objects.filter(status=Status.RUNNING, taken_by=previous).update(taken_by=taker) > 0


def trail_rounds_release(round_ids) -> None:
    """Taken rounds given back (running → pending), for their own tasks to judge."""
    TrailRound.objects.filter(pk__in=list(round_ids), status=Status.RUNNING).update(status=Status.PENDING, taken_by="")


def trail_selection_fail(selection_id: int, *, reason: str, transient: bool = True) -> None:
    TrailSelection.objects.filter(pk=selection_id).exclude(status=Status.DONE).update(
        status=Status.FAILED, error=reason, transient=transient
    )


def trail_round_judged(
    round_id: int, *, verdict: str, reasoning: str, calls: int, prompt_tokens: int, completion_tokens: int
) -> bool:
    return transition(
        TrailRound.objects.filter(pk=round_id, status=Status.RUNNING),
        to=Status.DONE,
        taken_by="",
        verdict=verdict,
        reasoning=reasoning,
        calls=calls,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def trail_claim_finish(claim_id: int, *, result: dict) -> bool:
    """A claim whose trail ended, with its result; its sentence and run may end after it."""
    return transition(
        Claim.objects.filter(pk=claim_id, status=ClaimStatus.SEARCHING), to=ClaimStatus.DONE, trail=result, error=""
    )


def trail_retry_reset(verification_id) -> None:
    """Retry: the failed selections of the failed claims' open rounds, and the rounds whose
    verdict failed, go back to pending, so a retried claim goes on from the rounds it had
    finished instead of starting over."""
    TrailSelection.objects.filter(
        Q(status=Status.FAILED) | Q(status=Status.RUNNING),
        round__claim__sentence__verification_id=verification_id,
        round__status=Status.PENDING,
    ).update(status=Status.PENDING, error="")
    TrailRound.objects.filter(status=Status.RUNNING, claim__sentence__verification_id=verification_id).update(
        status=Status.PENDING, taken_by=""
    )
    TrailNode.objects.filter(verification_id=verification_id, status=Status.FAILED).exclude(url="").update(
        status=Status.PENDING, error=""
    )


def trail_claims_waiting(verification_id) -> list[int]:
    """Claims of a trail run still being checked (their next step is decided from their rows)."""
    return list(
        Claim.objects.filter(sentence__verification_id=verification_id)
        .exclude(status__in=[*FINISHED, ClaimStatus.DONE, ClaimStatus.FAILED, ClaimStatus.PENDING])
        .values_list("pk", flat=True)
    )
