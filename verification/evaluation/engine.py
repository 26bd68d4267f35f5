"""What an evaluation asks of factsite's engine, and what it keeps of each answer.

- Whole runs (favabench): each text becomes a run exactly as `manage.py verify` makes one (the
  form, services.verification_create, worker.start.enqueue_verification: Celery workers on Redis when
  REDIS_URL is set, the embedded worker otherwise), several at once; a finished run is read back
  through selectors, so every sentence's credibility comes from the scoring module.
- The judge step alone (claim-stance): one call of pipeline/judge.py per (claim, evidence) pair,
  with the configured model's client, as the API's judge step makes it."""

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from verification import selectors, services
from verification.access import limits
from verification.clients import providers
from verification.inputs.forms import VerificationForm
from verification.models import FINISHED, Verification
from verification.pipeline import judge
from verification.pipeline.types import EvidenceToJudge, StepError
from verification.selectors.viewstate import ViewState
from verification.worker import start

# Form fields of the run settings an evaluation sets (the rest keep the form's defaults).
SETTING_FIELDS = ("model", "retrieval_mode", "top_k_results", "top_k_passages", "context_size")
COST_KEYS = ("llm_calls", "prompt_tokens", "completion_tokens", "searches", "pages", "seconds")
FAILURE_KEYS = ("sentences", "claims", "pages", "evidence", "runs_failed")
# How often unfinished runs are looked at: short next to a run's seconds, cheap for the database.
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class TextJob:
    key: str  # the settings' key in the journal
    item_id: str
    text: str
    settings: dict  # run settings, as the form validated them


def verification_form(text: str, run_settings: dict) -> VerificationForm:
    """The web form, filled as `manage.py verify` fills it: an evaluation's runs are validated and
    stored exactly like anyone else's."""
    return VerificationForm(data={"text": text, **{name: run_settings.get(name) for name in SETTING_FIELDS}})


def verify_texts(jobs: Iterable[TextJob], *, concurrency: int, score_rule: str, finished: Callable) -> None:
    """Keeps up to `concurrency` runs going until every job is done; `finished(job, line)` is
    called in this thread as each ends (or is refused), in the order they end."""
    waiting = deque(jobs)
    running: dict[str, tuple[TextJob, Verification]] = {}
    while waiting or running:
        while waiting and len(running) < concurrency:
            job = waiting.popleft()
            verification, refusal = _start(job)
            if verification is None:
                finished(job, refused_line(refusal))
            else:
                running[str(verification.pk)] = (job, verification)
        if not running:
            continue
        time.sleep(POLL_SECONDS)
        for run_id, (job, verification) in list(running.items()):
            verification.refresh_from_db()
            verification = services.verification_expire_if_stale(verification, timeout_s=settings.RUN_TIMEOUT)
            if verification.status in FINISHED:
                del running[run_id]
                finished(job, run_line(verification, score_rule))


def _start(job: TextJob) -> tuple[Verification | None, str]:
    form = verification_form(job.text, job.settings)
    if not form.is_valid():
        return None, " ".join(" ".join(messages) for messages in form.errors.values())
    if form.cleaned_data["text"] != job.text:
        # The form turns CR line ends into LF; the annotation's offsets would no longer match.
        return None, "the text has CR line ends, which would move every sentence's offsets"
    verification = services.verification_create(
        text=form.cleaned_data["text"],
        settings=form.run_settings(),
        client=limits.client_key(limits.EVALUATE_ADDRESS),
        segments=form.segments,
    )
    start.enqueue_verification(verification)
    return verification, ""


def run_line(verification: Verification, score_rule: str) -> dict:
    """What the report needs of a finished run: each sentence's place and credibility (the
    default view: every evidence item included, under the evaluation's score rule), cost and
    failures."""
    result = selectors.verification_result(verification, ViewState(score_rule=score_rule))
    claims = [claim for sentence in result["sentences"] for claim in sentence["claims"]]
    evidence = [item for claim in claims for item in claim["evidence"]]
    seconds = ((verification.finished_at or timezone.now()) - verification.created_at).total_seconds()
    return {
        "verification": result["id"],
        "status": result["status"],
        "error": result["error"],
        "sentences": [[s["start"], s["end"], s["score"]] for s in result["sentences"]],
        "cost": {
            **{key: result["usage"][key] for key in ("llm_calls", "prompt_tokens", "completion_tokens", "searches")},
            "pages": len(result["sources"]),
            "seconds": round(seconds, 3),
        },
        "failures": {
            "sentences": sum(s["status"] == "failed" for s in result["sentences"]),
            "claims": sum(c["status"] == "failed" for c in claims),
            "pages": sum(s["status"] == "failed" for s in result["sources"]),
            "evidence": sum(e["status"] == "failed" for e in evidence),
            "runs_failed": int(result["status"] == "failed"),
        },
    }


def refused_line(reason: str) -> dict:
    """A text the form refused (too long, over the claim budget): no run, no sentences."""
    return {
        "verification": None,
        "status": "refused",
        "error": reason,
        "sentences": None,
        "cost": dict.fromkeys(COST_KEYS, 0),
        "failures": {**dict.fromkeys(FAILURE_KEYS, 0), "runs_failed": 1},
    }


def judge_pairs(pairs: Iterable[tuple[str, str, str]], *, model: str, concurrency: int) -> Iterator[tuple[str, dict]]:
    """(item id, claim, evidence) → (item id, line) as each judgement comes back."""
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = {pool.submit(judge_line, model, claim, evidence): item_id for item_id, claim, evidence in pairs}
        for future in as_completed(futures):
            yield futures[future], future.result()


def judge_line(model: str, claim: str, evidence: str) -> dict:
    """One judgement of the evidence, with no context paragraph (the dataset gives none)."""
    llm = providers.llm_client(model)
    started = time.monotonic()
    try:
        [judgement] = judge.judge_claim(
            llm, claim=claim, context="", items=[EvidenceToJudge(key="evidence", source_title="", passage=evidence)]
        )
        verdict, error = (judgement.verdict.value if judgement.verdict else None), judgement.error
    except StepError as failure:
        verdict, error = None, str(failure)
    usage = llm.usage
    return {
        "predicted": verdict,
        "error": error,
        "cost": {
            **dict.fromkeys(COST_KEYS, 0),
            "llm_calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "seconds": round(time.monotonic() - started, 3),
        },
        "failures": {**dict.fromkeys(FAILURE_KEYS, 0), "evidence": int(verdict is None)},
    }
