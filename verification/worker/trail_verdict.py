"""A round's verdict, asked together with the other claims' rounds of the run waiting for theirs
(issue 38: one call per claim and round was most of a trail's calls). The claims reach their
verdicts at about the same time, as their selections are shared (worker/trail.trail_select);
trail.send_verdicts sends the first ready round's verdict at once, and its task takes the other
claims' rounds ready at that moment (at most TRAIL_BATCH_CLAIMS in a call:
pipeline/trail_verdict_many).
Each round's verdict is cached on its own (claim, evidence, model). The rounds a task takes carry
its mark (TrailRound.taken_by): a retry of it, or the task sent again when its worker died
(resume._send_orphaned_tasks), takes over all it held, finding in the cache what was answered."""

import secrets

from celery import current_task
from django.conf import settings

from verification import services
from verification.clients import providers
from verification.clients.cache import cache_key, lookup, store
from verification.models import ClaimStatus, Status, TrailRound
from verification.pipeline.trail_graph import Trail
from verification.pipeline.trail_select import NodeSelection
from verification.pipeline.trail_verdict import SYSTEM_PROMPT, RoundVerdict, TrailVerdict, build_prompt
from verification.pipeline.trail_verdict_many import judge_rounds
from verification.pipeline.types import StepError
from verification.worker import base, heartbeat
from verification.worker.trail import fail_claim, load_trail


def _give_up(round_id: int, *, reason: str, transient: bool = True) -> None:
    """The task failed for good: its claim fails with the reason, and the other claims' rounds
    it had taken are judged each on its own."""
    trail_round = TrailRound.objects.get(pk=round_id)
    others = []
    if trail_round.taken_by and _abandoned(trail_round.taken_by):
        others = [r for r in services.trail_rounds_taken(trail_round.taken_by) if r.pk != round_id]
    fail_claim(trail_round.claim_id, reason=f"the verdict failed: {reason}", transient=transient)
    _ask_alone(others)


@base.step("judging a round of a claim's trail", give_up=_give_up)
def trail_verdict(round_id: int, alone: bool = False) -> None:
    trail_round = TrailRound.objects.select_related("claim__sentence__verification").get(pk=round_id)
    claim = trail_round.claim
    verification = claim.sentence.verification
    base.hold(verification.pk)
    if claim.status != ClaimStatus.SEARCHING or trail_round.status == Status.DONE:
        return
    batch = _take(trail_round, alone=alone)
    if not batch:
        return  # a live task judges it
    llm = providers.llm_client(verification.settings["model"], priority=claim.sentence.index)
    trail = load_trail(verification.pk)
    selections = {r.pk: _selections(r) for r in batch}
    keys = {r.pk: _key(llm, trail, r.claim.text, selections[r.pk]) for r in batch}
    verdicts = {r.pk: _verdict_of(found) for r in batch if (found := lookup(keys[r.pk]))}
    services.usage_add(verification.pk, llm_cached=len(verdicts))
    asked = [r for r in batch if r.pk not in verdicts]
    try:
        found = judge_rounds(llm, trail, [(r.claim.text, selections[r.pk]) for r in asked])
    except StepError as error:
        if len(batch) > 1:
            return _ask_alone(batch)
        return _give_up(round_id, reason=str(error), transient=error.transient)
    finally:
        services.usage_add(verification.pk, usage=llm.usage)
    called = {r.pk for r, verdict in zip(asked, found, strict=True) if verdict.called}
    for r, verdict in zip(asked, found, strict=True):
        verdicts[r.pk] = verdict
        if verdict.called:
            store(keys[r.pk], {"verdict": verdict.verdict.value, "reasoning": verdict.reasoning})
    share = max(len(called), 1)  # the calls' tokens, split between the claims they answered
    for r in batch:
        tokens = (llm.usage.prompt_tokens // share, llm.usage.completion_tokens // share) if r.pk in called else (0, 0)
        _save(r, verdicts[r.pk], tokens=tokens)


def _take(trail_round: TrailRound, *, alone: bool) -> list[TrailRound]:
    """The rounds this task judges: its own with the other claims' rounds ready now; or, when
    its round's taker will not judge it (this very task before a retry, a task whose process
    died), all that taker held. Empty when a live task judges it."""
    me = _taker()
    if services.trail_round_begin(trail_round.pk, taker=me):
        limit = 0 if alone else settings.TRAIL_BATCH_CLAIMS - 1
        return [trail_round, *services.trail_rounds_take_peers(trail_round, taker=me, limit=limit)]
    trail_round.refresh_from_db(fields=["status", "taken_by"])
    previous = trail_round.taken_by
    abandoned = trail_round.status == Status.RUNNING and previous and _abandoned(previous)
    if abandoned and services.trail_rounds_take_over(previous, taker=me):
        return services.trail_rounds_taken(me)
    return []


def _taker() -> str:
    """This task's mark on the rounds it takes: its task id (a retry keeps it) and process."""
    task_id = getattr(current_task.request, "id", None) if current_task else None
    return f"{task_id or secrets.token_hex(8)} {heartbeat.process_name()}"


def _abandoned(taker: str) -> bool:
    """Whether a taker's rounds wait for nobody: it is this task (retried), or its process died
    (known at once on its own machine, elsewhere once it missed its beats)."""
    process = taker.partition(" ")[2]
    return taker == _taker() or heartbeat.ended_here(process) or services.worker_process_gone(process)


def _selections(trail_round: TrailRound) -> list[NodeSelection]:
    return [NodeSelection.from_dict(row.result) for row in trail_round.selections.order_by("position")]


def _key(llm, trail: Trail, claim: str, selections: list[NodeSelection]) -> str:
    """A round's verdict's cache key: what its claim asked alone would send, whichever call
    answered it."""
    return cache_key("trail-verdict", llm.base_url, llm.model, SYSTEM_PROMPT, build_prompt(trail, claim, selections))


def _verdict_of(found: dict) -> RoundVerdict:
    return RoundVerdict(TrailVerdict(found["verdict"]), found["reasoning"], called=True)


def _save(trail_round: TrailRound, verdict: RoundVerdict, *, tokens: tuple[int, int]) -> None:
    """The round's verdict, with its calls and tokens and those of its selections; the claim
    goes on to its next round."""
    rows = list(trail_round.selections.all())
    judged = services.trail_round_judged(
        trail_round.pk,
        verdict=verdict.verdict.value,
        reasoning=verdict.reasoning,
        calls=verdict.called + sum(NodeSelection.from_dict(row.result).prompts for row in rows),
        prompt_tokens=tokens[0] + sum(row.prompt_tokens for row in rows),
        completion_tokens=tokens[1] + sum(row.completion_tokens for row in rows),
    )
    if judged:
        base.send("trail_continue", trail_round.claim_id)


def _ask_alone(batch: list[TrailRound]) -> None:
    """A shared call failed (or the task that made it): each round is judged again on its own,
    so that a failure costs only the claim it concerns."""
    services.trail_rounds_release([r.pk for r in batch])
    for r in batch:
        base.send("trail_verdict", r.pk, True)
