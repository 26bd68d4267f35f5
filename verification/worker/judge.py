"""Judging evidence: one LLM call for a batch of evidence of one or more claims, answers cached
per claim and passage; and the chunk whose claims waited for each other (joins.judge_ready)."""

import logging
from dataclasses import replace

from verification import services
from verification.clients import providers
from verification.clients.cache import cache_key, lookup, store
from verification.models import (
    Evidence,
    Sentence,
    Status,
    Verification,
)
from verification.pipeline import judge
from verification.pipeline.types import (
    ClaimToJudge,
    EvidenceToJudge,
    StepError,
)
from verification.worker import base, joins

logger = logging.getLogger(__name__)


def _fail_judging(claim_id, evidence_ids, *, reason: str, transient: bool = True) -> None:
    _fail_evidence(evidence_ids, reason=reason, transient=transient)


def _fail_evidence(evidence_ids, *, reason: str, transient: bool = True) -> None:
    services.evidence_fail(evidence_ids, reason=reason, transient=transient)
    for claim_id in sorted(set(Evidence.objects.filter(pk__in=evidence_ids).values_list("claim_id", flat=True))):
        joins.after_judging(claim_id)


@base.step("judging evidence", give_up=_fail_evidence)
def evidence_judge_batch(evidence_ids: list[int]) -> None:
    """One LLM call for a batch of evidence of one or more claims (judge.pack); answers are
    cached per claim and passage."""
    batch = list(
        Evidence.objects.filter(pk__in=evidence_ids)
        .select_related("source", "claim__sentence__verification")
        .order_by("claim__sentence__index", "claim__index", "pk")
    )
    if not batch:
        return
    verification = batch[0].claim.sentence.verification
    base.hold(verification.pk)
    items = [e for e in batch if e.status == Status.PENDING]
    if items:
        judge_items(verification, items)
    for claim_id in dict.fromkeys(e.claim_id for e in batch):
        joins.after_judging(claim_id)


@base.step("judging evidence", give_up=_fail_judging)
def evidence_judge(claim_id: int, evidence_ids: list[int]) -> None:
    """The one-claim form of evidence_judge_batch (messages queued before batches existed)."""
    evidence_judge_batch(evidence_ids)


def judge_items(verification: Verification, items: list[Evidence]) -> None:
    # With one slot at a local server, a run's first sentences are judged first.
    priority = min(e.claim.sentence.index for e in items)
    llm = providers.llm_client(verification.settings["model"], priority=priority)
    # A snippet is shown to the judge as one (pipeline/judge.py): its verdict is not a page's. The
    # claim's and the page's languages are told to the judge and decide what of the passage it reads.
    keys = {
        e.pk: cache_key(
            "judge",
            llm.base_url,
            llm.model,
            judge.SYSTEM_PROMPT,
            e.claim.text,
            e.passage,
            *(["snippet"] * e.snippet_only),
            verification.language,
            e.source.language,
        )
        for e in items
    }
    known = {e.pk: lookup(keys[e.pk]) for e in items}
    services.judgements_save(replace(j, key=str(pk)) for pk, j in known.items() if j is not None)
    services.usage_add(verification.pk, llm_cached=sum(j is not None for j in known.values()))
    unknown = [e for e in items if known[e.pk] is None]
    if not unknown:
        return
    by_claim: dict[int, list[Evidence]] = {}
    for e in unknown:
        by_claim.setdefault(e.claim_id, []).append(e)
    claims = [
        ClaimToJudge(
            text=group[0].claim.text,
            context="",  # decomposed claims stand alone (see pipeline/judge.py)
            language=verification.language,
            items=tuple(
                EvidenceToJudge(
                    key=str(e.pk),
                    source_title=e.source.title,
                    passage=e.passage,
                    highlights=tuple(tuple(h) for h in e.highlights),
                    snippet_only=e.snippet_only,
                    language=e.source.language,
                )
                for e in group
            ),
        )
        for group in by_claim.values()
    ]
    try:
        judgements = judge.judge_claims(llm, claims, prompt_tokens=llm.prompt_budget())
    except StepError as error:
        services.evidence_fail([e.pk for e in unknown], reason=f"judging failed: {error}", transient=error.transient)
        return
    finally:
        services.usage_add(verification.pk, usage=llm.usage)
    services.judgements_save(judgements)
    for judgement in judgements:
        if judgement.verdict is not None:
            store(keys[int(judgement.key)], judgement)


@base.step("judging evidence")
def judge_lingered(sentence_id: int) -> None:
    """The claims of a chunk that waited joins.JUDGE_LINGER_S for others go to the judge now."""
    sentence = Sentence.objects.filter(pk=sentence_id).first()
    if sentence is None:  # its run was deleted meanwhile
        return
    base.hold(sentence.verification_id)
    joins.judge_ready(sentence, lingered=True)
