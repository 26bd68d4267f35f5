"""`manage.py evaluate trail DIR`: each labelled claim (evaluation/trail_eval.py's format) checked
down its trail by the configured model with the same loop and settings as a trail run
(pipeline/trail_loop.check_claim, the TRAIL_* settings), in this process: the claims are given,
so nothing is decomposed, stored or queued. The report is VeriTrail's metrics."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from verification.clients import providers
from verification.evaluation.trail_eval import MAX_CHARS, MAX_NODES, TrailEvaluation, evaluate_trails, read_labelled
from verification.pipeline.trail_graph import parse_trail
from verification.pipeline.trail_loop import ClaimTrailResult, check_claim
from verification.worker.trail import result_json, selection_options


def trail_check(model: str, q: int) -> Callable[[dict[str, Any], str], ClaimTrailResult]:
    llm = providers.llm_client(model)
    options = selection_options()
    cache: dict = {}

    def check(trail_json: dict[str, Any], claim: str) -> ClaimTrailResult:
        trail = parse_trail(trail_json, max_nodes=MAX_NODES, max_chars=MAX_CHARS)
        return check_claim(
            llm,
            trail,
            claim,
            q=q,
            max_node_visits=settings.TRAIL_MAX_NODE_VISITS,
            selection_options=options,
            cache=cache,
        )

    return check


def evaluate_trail_dir(path: Path, *, model: str | None, q: int | None, out: Path) -> TrailEvaluation:
    claims = read_labelled(path)
    model = model or providers.model_names()[0]
    evaluation = evaluate_trails(claims, trail_check(model, q or settings.TRAIL_Q))
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "model": model,
        "q": q or settings.TRAIL_Q,
        "metrics": evaluation.metrics.as_dict(),
        "claims": [
            {
                "name": claim.name,
                "claim": claim.claim,
                "label": claim.label,
                "error_stage": claim.error_stage,
                "found": result_json(result),
            }
            for claim, result in evaluation.results
        ],
    }
    (out / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return evaluation
