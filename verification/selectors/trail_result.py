"""A trail run as its readers see it (issue 26), one JSON-ready dict for the API, the page, the
reports and the CLI: its nodes by stage, its sentences coloured by the share of their claims
found fully supported, each claim's verdict, rounds, the selected sentences per node, the path
of a supported claim and the step where an unsupported one entered, and a summary of how many
unsupported claims entered at each step. A fixed handful of queries, whatever its size.

A trail's texts are its creator's, as a web check's documents are (access/ownership.py): anyone
else is given the claims, the verdicts and the sentences selected, and of the texts only the
final one, the text that was checked."""

from collections import Counter, defaultdict

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
from verification.scoring import (
    CANCELLED_NOTE,
    TRAIL_VERDICT_LABELS,
    UNSUPPORTED,
    band,
    entered_words,
    shown_percent,
    trail_score,
)
from verification.selectors.records import permalink
from verification.selectors.trail_progress import trail_progress

# What a claim or sentence that its run's cancel left unreached is: it was not checked and never
# will be (not "being checked"), and it counts in no score.
CANCELLED = "cancelled"


# A claim whose trail failed (its error says why): it has no verdict, and is not being checked.
FAILED_NOTE = "not checked: it failed"


def _unfinished_label(status: str) -> str:
    """What a claim without a verdict is, in words."""
    if status == CANCELLED:
        return CANCELLED_NOTE
    return FAILED_NOTE if status == ClaimStatus.FAILED else "being checked"


def is_trail(verification: Verification) -> bool:
    return verification.settings.get("evidence") == "trail"


def trail_result(verification: Verification, *, with_texts: bool) -> dict:
    """`with_texts`: the reader may read the trail's texts (its creator): each text whole, and
    beside each selected sentence the neighbours the model was shown."""
    nodes = list(TrailNode.objects.filter(verification=verification).order_by("index"))
    step_of = {node.key: node.step or f"stage {node.stage}" for node in nodes}
    claims = list(
        Claim.objects.filter(sentence__verification=verification)
        .select_related("sentence")
        .order_by("sentence__index", "index")
    )
    rounds = _rounds(claims, with_texts=with_texts)
    cancelled = verification.status == Status.CANCELLED
    claim_rows = [_claim(claim, rounds[claim.pk], step_of, cancelled=cancelled) for claim in claims]
    by_sentence = defaultdict(list)
    for row in claim_rows:
        by_sentence[row["sentence"]].append(row)
    sentences = [
        _sentence(sentence, by_sentence[sentence.index], cancelled=cancelled)
        for sentence in Sentence.objects.filter(verification=verification).order_by("index")
    ]
    used = {key for node in nodes for key in node.inputs}
    return {
        "id": str(verification.pk),
        "kind": "trail",
        "status": verification.status,
        "error": verification.error,
        "permalink": permalink(verification),
        "created_at": verification.created_at.isoformat(),
        "finished_at": verification.finished_at.isoformat() if verification.finished_at else None,
        "settings": {"model": verification.settings.get("model"), "q": verification.settings.get("trail_q")},
        "progress": trail_progress(verification),
        "usage": {
            "llm_calls": verification.llm_calls,
            "llm_cached": verification.llm_cached,
            "prompt_tokens": verification.prompt_tokens,
            "completion_tokens": verification.completion_tokens,
            "reasoning_tokens": verification.reasoning_tokens,
        },
        "nodes": [_node(node, is_final=node.key not in used, with_texts=with_texts) for node in nodes],
        "sentences": sentences,
        "claims": claim_rows,
        "score": trail_score([row["verdict"] or "" for row in claim_rows]),
        "summary": _summary(claim_rows, nodes),
    }


def _node(node: TrailNode, *, is_final: bool, with_texts: bool) -> dict:
    withheld = not (with_texts or is_final)
    return {
        "id": node.key,
        "step": node.step or f"stage {node.stage}",
        "stage": node.stage,
        "inputs": list(node.inputs),
        "is_root": not node.inputs,
        "is_final": is_final,
        "url": node.url,
        "status": node.status,
        "error": node.error,
        "text": None if withheld else node.text,
        "text_withheld": withheld,
    }


def _rounds(claims: list[Claim], *, with_texts: bool) -> dict[int, list[dict]]:
    selections = defaultdict(list)
    for selection in TrailSelection.objects.filter(round__claim__in=claims).order_by("round_id", "position"):
        chosen = selection.result.get("sentence_ids", [])
        shown = selection.result.get("sentences", {})
        selections[selection.round_id].append(
            {
                "node": selection.node_key,
                "status": selection.status,
                "error": selection.error,
                "sentence_ids": chosen,
                "sentences": shown if with_texts else {key: text for key, text in shown.items() if key in chosen},
                "summary": selection.result.get("summary", ""),
            }
        )
    rounds = defaultdict(list)
    for row in TrailRound.objects.filter(claim__in=claims).order_by("claim_id", "index"):
        rounds[row.claim_id].append(
            {
                "index": row.index,
                "status": row.status,
                "candidates": list(row.candidates),
                "verdict": row.verdict or None,
                "reasoning": row.reasoning,
                "evidence_nodes": [s["node"] for s in selections[row.pk] if s["sentence_ids"]],
                "selections": selections[row.pk],
            }
        )
    return rounds


def _claim(claim: Claim, rounds: list[dict], step_of: dict[str, str], *, cancelled: bool) -> dict:
    result = claim.trail or {}
    verdict = result.get("verdict") if claim.status == ClaimStatus.DONE else None
    status = CANCELLED if cancelled and verdict is None and claim.status != ClaimStatus.FAILED else claim.status
    entered = result.get("error_stage")
    if entered is not None:
        steps = list(dict.fromkeys(step_of.get(node, "") for node in entered["nodes"]))
        entered = {**entered, "steps": steps, "words": entered_words(entered["kind"], steps, entered["nodes"])}
    return {
        "id": claim.pk,
        "sentence": claim.sentence.index,
        "index": claim.index,
        "text": claim.text,
        "status": status,
        "error": claim.error,
        "verdict": verdict,
        "verdict_label": TRAIL_VERDICT_LABELS.get(verdict or "") or _unfinished_label(status),
        "reasoning": result.get("reasoning", ""),
        "stop": result.get("stop"),
        "entered": entered if verdict in UNSUPPORTED else None,
        "path": result.get("path"),
        "calls": result.get("calls", 0),
        "prompt_tokens": result.get("prompt_tokens", 0),
        "completion_tokens": result.get("completion_tokens", 0),
        "rounds": rounds,
    }


def _sentence(sentence: Sentence, claims: list[dict], *, cancelled: bool) -> dict:
    score = trail_score([claim["verdict"] or "" for claim in claims])
    unfinished = sentence.status in (Status.PENDING, Status.RUNNING)
    return {
        "index": sentence.index,
        "text": sentence.text,
        "start": sentence.start,
        "end": sentence.end,
        "status": CANCELLED if cancelled and unfinished else sentence.status,
        "error": sentence.error,
        "score": score,
        "percent": shown_percent(score),
        "band": band(score),
        "claims": [claim["index"] for claim in claims],
    }


def _summary(claims: list[dict], nodes: list[TrailNode]) -> dict:
    """What a pipeline's builder reads first: verdicts counted, and where unsupported claims entered."""
    verdicts = Counter(claim["verdict"] or claim["status"] for claim in claims)
    entered = Counter()
    stage_of_step = {node.step or f"stage {node.stage}": node.stage for node in nodes}
    for claim in claims:
        if claim["entered"] is None:
            continue
        if claim["entered"]["kind"] == "stage":
            entered.update(claim["entered"]["steps"])
        else:
            entered[claim["entered"]["kind"]] += 1
    return {
        "claims": len(claims),
        "verdicts": dict(verdicts),
        "entered_at": [
            {"step": step, "stage": stage_of_step.get(step), "count": count}
            for step, count in sorted(entered.items(), key=lambda item: (stage_of_step.get(item[0], 10**6), item[0]))
            if step not in ("final_step", "undetermined")
        ],
        "entered_at_final_step": entered["final_step"],
        "entered_undetermined": entered["undetermined"],
    }


def trail_node_text(verification: Verification, index: int, *, claim_id: int | None) -> dict | None:
    """One text of a trail run whole, for a reader who opens it (the page shows only the sentences
    selected in it): its id, whether it is the final text (which anyone may read), and the
    sentences the claim `claim_id` selected in it. None when the run has no such text."""
    node = TrailNode.objects.filter(verification=verification, index=index).first()
    if node is None:
        return None
    used = {key for inputs in verification.trail_nodes.values_list("inputs", flat=True) for key in inputs}
    selections = TrailSelection.objects.filter(
        round__claim_id=claim_id, round__claim__sentence__verification=verification, node_key=node.key
    )
    marked = {
        shown[sentence_id]
        for result in selections.values_list("result", flat=True)
        for shown in [result.get("sentences", {})]
        for sentence_id in result.get("sentence_ids", [])
        if sentence_id in shown
    }
    if node.key not in used and claim_id is not None:  # the final text: the claim's own sentence
        marked.update(
            Sentence.objects.filter(verification=verification, claims__id=claim_id).values_list("text", flat=True)
        )
    return {"id": node.key, "index": node.index, "is_final": node.key not in used, "text": node.text, "marked": marked}
