"""Every task of a run, registered: Celery's autodiscovery imports this module, which imports
each step's module in verification/worker/. A task keeps the name `verification.tasks.<function>`
that messages queued before the worker was split into modules carry (worker/base.py).

How a run flows (docs/architecture.md has the map): verification_start → sentences_decompose →
claim_search → source_fetch (and hosts_categorize beside it) → evidence_judge_batch, with
judge_lingered holding a chunk's claims briefly so they share a call. No task waits for another.
Joins happen where the last arrival notices it is last (the conditional transitions in
services). A step's readable failure (StepError) marks its item failed and the run goes on; an
unexpected error does the same once Celery's retries are spent, so a run always ends.

The database rows are the truth, not the queue: a worker killed mid-task, a Redis restart or a
message that could not be sent leaves rows unfinished, and `sweep` (Celery beat, or a timer in
the embedded worker) enqueues them again once nobody is working on the run: its owner process
stopped beating, or, on the shared broker, no task of it ran for RUN_STALLED_AFTER seconds
(services.verifications_stalled, worker/heartbeat.py). Every step starts again from any
unfinished state and skips finished items."""

from verification.worker.categorize import host_categorize, hosts_categorize
from verification.worker.decompose import sentence_decompose, sentences_decompose
from verification.worker.judge import evidence_judge, evidence_judge_batch, judge_lingered
from verification.worker.read import source_fetch
from verification.worker.resume import delete_old_runs, sweep
from verification.worker.search import claim_search
from verification.worker.start import verification_start
from verification.worker.trail import trail_continue, trail_node_read, trail_select
from verification.worker.trail_verdict import trail_verdict

__all__ = [
    "claim_search",
    "delete_old_runs",
    "evidence_judge",
    "evidence_judge_batch",
    "host_categorize",
    "hosts_categorize",
    "judge_lingered",
    "sentence_decompose",
    "sentences_decompose",
    "source_fetch",
    "sweep",
    "trail_continue",
    "trail_node_read",
    "trail_select",
    "trail_verdict",
    "verification_start",
]
