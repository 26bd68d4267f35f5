"""A trail run's claims checked down the trail (issue 26; the loop is pipeline/trail_loop.py).

A trail run starts as any run (worker/start.py, decompose.py): its text is the final node's, cut
into claims. Its claims then go here instead of to the web search (search.claim_search hands
them over): `trail_continue` decides each claim's next step from its stored rounds alone, so a
redelivered or resumed task picks up where the claim was:
- an open round whose selections are not all in: `trail_select`, one task per candidate node,
  in parallel; the last one in sends the round to `trail_verdict` (worker/trail_verdict.py),
  which judges it with the other claims' rounds ready at the same time;
- a round judged: the next round's candidates, or a stop rule, which ends the claim with its
  verdict, the step where an unsupported claim entered, or a supported claim's path.
A node given as a web address is read first (`trail_node_read`); claims wait for the last one."""

import functools
import logging

from django.conf import settings
from django.db.models import Count

from verification import services
from verification.clients import providers
from verification.clients.cache import cache_key, lookup, store
from verification.models import (
    Claim,
    ClaimStatus,
    Sentence,
    Status,
    TrailNode,
    TrailRound,
    TrailSelection,
    Verification,
)
from verification.pipeline import trail_citations, trail_loop
from verification.pipeline.trail_graph import DocumentRef, Trail
from verification.pipeline.trail_graph import TrailNode as Node
from verification.pipeline.trail_select import SYSTEM_PROMPT, NodeSelection, SelectionOptions
from verification.pipeline.trail_select_many import select_evidence_many
from verification.pipeline.trail_verdict import TrailVerdict
from verification.pipeline.types import StepError
from verification.worker import base, cpu, joins

logger = logging.getLogger(__name__)


def fail_claim(claim_id: int, *, reason: str, transient: bool = True) -> None:
    services.claim_fail(claim_id, reason=reason, transient=transient)
    joins.after_claim(Claim.objects.select_related("sentence").get(pk=claim_id))


def _fail_selection(selection_id: int, *, reason: str, transient: bool = True) -> None:
    """A node whose evidence could not be selected fails its claim (a retry goes on from the
    claim's finished rounds): a verdict without that node's evidence could say the wrong thing."""
    selection = TrailSelection.objects.select_related("round").get(pk=selection_id)
    services.trail_selection_fail(selection_id, reason=reason, transient=transient)
    fail_claim(selection.round.claim_id, reason=f"selecting evidence in '{selection.node_key}' failed: {reason}")


def _fail_node(node_id: int, *, reason: str, transient: bool = True) -> None:
    _node_done(TrailNode.objects.get(pk=node_id), error=reason)


def load_trail(verification_id) -> Trail:
    """The run's trail from its rows (validated when it was created)."""
    rows = TrailNode.objects.filter(verification_id=verification_id).order_by("index")
    return Trail(
        tuple(
            Node(
                id=row.key,
                text=row.text,
                document=DocumentRef(url=row.url) if row.url else None,
                inputs=tuple(row.inputs),
                step=row.step or None,
                stage=row.stage,
            )
            for row in rows
        )
    )


# Tokens of a selection prompt besides the text's sentences: its instructions and the claims.
PROMPT_ROOM_TOKENS = 1000


def selection_options(prompt_tokens: int = 0) -> SelectionOptions:
    """`prompt_tokens`: what one prompt may hold at the model's server (0: not known), which
    lowers TRAIL_PROMPT_CHARS for a small context (three characters a token, with room for the
    instructions and the claims of a shared call)."""
    top_k = settings.TRAIL_RANK_TOP_K
    chars = settings.TRAIL_PROMPT_CHARS
    if prompt_tokens:
        chars = max(1000, min(chars, (prompt_tokens - PROMPT_ROOM_TOKENS) * 3))
    return SelectionOptions(
        max_sentences_per_prompt=settings.TRAIL_PROMPT_SENTENCES,
        max_chars_per_prompt=chars,
        rank_top_k=top_k or None,
        rank_above_sentences=settings.TRAIL_RANK_ABOVE_SENTENCES if top_k else None,
    )


def _rounds(claim: Claim) -> list[trail_loop.Round]:
    """The claim's judged rounds, as the loop reads them."""
    judged = claim.trail_rounds.filter(status=Status.DONE).prefetch_related("selections").order_by("index")
    return [
        trail_loop.Round(
            index=row.index,
            candidates=tuple(row.candidates),
            selections=tuple(NodeSelection.from_dict(s.result) for s in row.selections.all()),
            verdict=TrailVerdict(row.verdict),
            reasoning=row.reasoning,
            calls=row.calls,
            prompt_tokens=row.prompt_tokens,
            completion_tokens=row.completion_tokens,
        )
        for row in judged
    ]


@base.step("checking a claim along its trail", give_up=fail_claim)
def trail_continue(claim_id: int) -> None:
    claim = Claim.objects.select_related("sentence__verification").get(pk=claim_id)
    verification = claim.sentence.verification
    base.hold(verification.pk)
    if claim.status != ClaimStatus.SEARCHING or services.trail_nodes_unread(verification.pk):
        return  # ended, or waiting for a document (its reader sends the claims on)
    current = claim.trail_rounds.exclude(status=Status.DONE).order_by("-index").first()
    if current is not None:
        _resume_round(current)
        return
    trail, rounds = load_trail(verification.pk), _rounds(claim)
    q = verification.settings.get("trail_q") or settings.TRAIL_Q
    candidates, stop = trail_loop.next_step(
        trail,
        rounds,
        q=q,
        max_node_visits=settings.TRAIL_MAX_NODE_VISITS,
        cited=_cited_by_sentence(verification.pk).get(claim.sentence.index, ()),
    )
    if stop is not None:
        result = trail_loop.conclude(trail, rounds, stop)
        if services.trail_claim_finish(claim_id, result=result_json(result)):
            joins.after_claim(claim)
        return
    opened = services.trail_round_open(claim=claim, index=len(rounds) + 1, candidates=candidates)
    _resume_round(opened)


@functools.lru_cache(maxsize=64)
def _cited_by_sentence(verification_id) -> dict[int, tuple[str, ...]]:
    """The nodes each sentence of the final text cites ("[Data: Reports (7)]": report-7), read
    once per run in a worker process rather than at every round of every claim (a long final text
    takes tens of milliseconds): a run's text, sentences and node ids never change."""
    text = Verification.objects.values_list("text", flat=True).get(pk=verification_id)
    nodes = set(TrailNode.objects.filter(verification_id=verification_id).values_list("key", flat=True))
    spans = Sentence.objects.filter(verification_id=verification_id).values_list("index", "start", "end")
    return trail_citations.cited_nodes(nodes, text, list(spans))


def _resume_round(trail_round: TrailRound) -> None:
    if trail_round.status == Status.RUNNING:
        return  # its verdict is being asked; the task that asks it sends the claim on
    unfinished = trail_round.selections.exclude(status=Status.DONE).values_list("pk", flat=True)
    wait = settings.TRAIL_BATCH_WAIT_S if _others_behind(trail_round) else None
    for selection_id in unfinished:
        base.send("trail_select", selection_id, countdown=wait)
    if not unfinished and services.trail_round_ready(trail_round.pk):
        send_verdicts([trail_round.pk])


def _others_behind(trail_round: TrailRound) -> bool:
    """Whether another claim of the run is still on its way to this round (being found, or in an
    earlier round): a moment's wait may let it share this round's calls. Claims reach the same
    texts round by round (every first round reads the final text's inputs); with nobody behind,
    a wait would only be latency."""
    claim = trail_round.claim
    others = Claim.objects.filter(sentence__verification_id=claim.sentence.verification_id).exclude(pk=claim.pk)
    behind = others.filter(status__in=[ClaimStatus.PENDING, ClaimStatus.SEARCHING]).annotate(
        rounds=Count("trail_rounds")
    )
    return (
        behind.filter(rounds__lt=trail_round.index).exists()
        or claim.sentence.verification.sentences.exclude(status__in=[Status.DONE, Status.FAILED])
        .filter(claims__isnull=True)
        .exists()
    )


@base.step("selecting a claim's evidence in a text of its trail", give_up=_fail_selection)
def trail_select(selection_id: int, alone: bool = False) -> None:
    """One text's evidence for a claim, asked together with the other claims of the run waiting
    for the same text (at most TRAIL_BATCH_CLAIMS in a call: trail_select_many); cached per claim,
    text, model and options."""
    selection = TrailSelection.objects.select_related("round__claim__sentence__verification").get(pk=selection_id)
    claim = selection.round.claim
    verification = claim.sentence.verification
    base.hold(verification.pk)
    if claim.status != ClaimStatus.SEARCHING or not services.trail_selection_begin(selection_id):
        return  # ended, or another claim's task took it into its call
    limit = 0 if alone else settings.TRAIL_BATCH_CLAIMS - 1
    peers = services.trail_selections_take_peers(selection, limit=limit)
    batch = [selection, *peers]
    text = TrailNode.objects.get(verification=verification, key=selection.node_key).text
    llm = providers.llm_client(verification.settings["model"], priority=claim.sentence.index)
    options = selection_options(llm.prompt_budget())
    keys = {
        s.pk: cache_key("trail-select", llm.base_url, llm.model, SYSTEM_PROMPT, s.round.claim.text, text, repr(options))
        for s in batch
    }
    results = {
        s.pk: NodeSelection.from_dict({**found, "node_id": s.node_key}) for s in batch if (found := lookup(keys[s.pk]))
    }
    services.usage_add(verification.pk, llm_cached=len(results))
    asked = [s for s in batch if s.pk not in results]
    if asked:
        # The node is split and ranked here, in the task's thread: a book-length node takes a
        # second or two of CPU (the CPU pool takes web pages, whose parsing is much heavier).
        try:
            found = select_evidence_many(
                llm, claims=[s.round.claim.text for s in asked], node_id=selection.node_key, text=text, options=options
            )
        except StepError as error:
            if peers:
                return _ask_alone(batch)
            return _fail_selection(selection_id, reason=str(error), transient=error.transient)
        finally:
            services.usage_add(verification.pk, usage=llm.usage)
        for s, result in zip(asked, found, strict=True):
            results[s.pk] = result
            store(keys[s.pk], result.as_dict())
    share = max(len(asked), 1)  # a shared call's tokens, split between the claims it answered
    ready = []
    for s in batch:
        tokens = (llm.usage.prompt_tokens // share, llm.usage.completion_tokens // share) if s in asked else (0, 0)
        if services.trail_selection_save(
            s.pk, result=results[s.pk].as_dict(), prompt_tokens=tokens[0], completion_tokens=tokens[1]
        ):
            ready.append(s.round_id)
    send_verdicts(ready)


def send_verdicts(round_ids: list[int]) -> None:
    """The verdicts of rounds whose selections are all in (worker/trail_verdict.py): the first
    at once, and it takes the other claims' rounds ready now into its call; the others after
    TRAIL_BATCH_WAIT_S, for what its call could not take (a task whose round was taken ends at
    once). Sent together, their tasks would each take their own round before any could take the
    others'. The first does not wait for rounds still selecting: that cost a trail 20 % of its
    wall time for a few calls fewer (bench/trails.py)."""
    if not round_ids:
        return
    wait = settings.TRAIL_BATCH_WAIT_S if settings.TRAIL_BATCH_CLAIMS > 1 and settings.TRAIL_BATCH_WAIT_S > 0 else None
    base.send("trail_verdict", round_ids[0])
    for round_id in round_ids[1:]:
        base.send("trail_verdict", round_id, countdown=wait)


def _ask_alone(batch: list[TrailSelection]) -> None:
    """A shared call failed: each claim is asked again on its own, so that a failure costs only
    the claim it concerns (a text or a claim the model cannot answer) and not the others."""
    services.trail_selections_release([selection.pk for selection in batch])
    for selection in batch:
        base.send("trail_select", selection.pk, True)


@base.step("reading a document of a trail", give_up=_fail_node)
def trail_node_read(node_id: int) -> None:
    """A node given as a web address, read as documents mode reads one (fetched, parsed in the
    CPU pool). Unreadable, it stays an empty text, which supports nothing, and says why."""
    node = TrailNode.objects.get(pk=node_id)
    base.hold(node.verification_id)
    if node.status != Status.PENDING:
        return
    try:
        document = providers.page_fetcher().fetch(node.url)
        page = cpu.run(
            cpu.read_page,
            document,
            pdf_max_pages=settings.PDF_MAX_PAGES,
            time_limit=settings.CPU_TIME_LIMIT,
            for_run=node.verification_id,
        )
    except cpu.TookTooLong as error:
        return _node_done(node, error=f"the document took too long to read ({error})")
    except StepError as error:
        return _node_done(node, error=str(error))
    _node_done(node, text="\n".join(page.sentences))


def _node_done(node: TrailNode, *, text: str = "", error: str = "") -> None:
    """The last document read sends on the claims that waited for the trail's texts."""
    if services.trail_node_read(node.pk, text=text, error=error) and not services.trail_nodes_unread(
        node.verification_id
    ):
        for claim_id in services.trail_claims_waiting(node.verification_id):
            base.send("trail_continue", claim_id)


def begin(verification_id) -> None:
    """A trail run's documents are read as soon as it starts (and again when it is resumed)."""
    unread = TrailNode.objects.filter(verification_id=verification_id, status=Status.PENDING)
    for node_id in unread.values_list("pk", flat=True):
        base.send("trail_node_read", node_id)


def result_json(result: trail_loop.ClaimTrailResult) -> dict:
    """A claim's trail result as stored (Claim.trail) and shown: the rounds stay in their rows."""
    error, path = result.error, result.path
    return {
        "verdict": result.verdict.value,
        "reasoning": result.reasoning,
        "stop": result.stop.value,
        "rounds": len(result.rounds),
        "error_stage": None
        if error is None
        else {"kind": error.kind, "stages": list(error.stages), "nodes": list(error.nodes)},
        "path": None
        if path is None
        else {"nodes": list(path.nodes), "edges": [list(edge) for edge in path.edges], "sources": list(path.sources)},
        "calls": result.calls,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
    }
