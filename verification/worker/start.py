"""Starting a run: the first task splits its text (runs created before texts were split on
submission) and sends its sentences to be decomposed, in chunks. Also what the pages, the API
and the CLI call to queue a run, and the check that a process is configured as the run needs."""

import logging
from collections.abc import Callable

from verification import services
from verification.access import limits
from verification.clients import providers
from verification.models import (
    FINISHED,
    Status,
    Verification,
)
from verification.pipeline import cited_segments
from verification.pipeline.citations import read_citations
from verification.worker import base, chunks, embedded, heartbeat, trail

logger = logging.getLogger(__name__)


def start_run(client: str, create: Callable[[], Verification], *, files=()) -> Verification | limits.RateLimited:
    """What the pages, the API and the CLI do to start a run: within the client's hourly limits
    (access/limits.run_slot, exact under simultaneous submissions), `create` saves it (a
    service), and it is queued. Returns the run, or why the client may not start one now."""
    with limits.run_slot(client, files) as limited:
        if limited:
            return limited
        verification = create()
    enqueue_verification(verification)
    return verification


def start_trail_run(client: str, submission, *, creator: str = "") -> Verification | limits.RateLimited:
    """start_run for a trail (inputs/trails.TrailSubmission): its nodes, its final text's sentences."""
    return start_run(
        client,
        lambda: services.trail_create(
            trail=submission.trail,
            settings=submission.settings,
            segments=submission.segments,
            client=client,
            creator=creator,
        ),
    )


def enqueue_verification(verification: Verification) -> None:
    """Start a run once the row is committed (the worker must be able to read it)."""
    take(verification.pk, verification.settings)
    base.send("verification_start", str(verification.pk))


def take(verification_id, run_settings: dict) -> None:
    """This process queues the run's work: on its own embedded worker, which then owns the run
    and runs it with this process's configuration, or on the shared broker, where the first
    worker to start it records its own (verification_start)."""
    if embedded.ensure_embedded_worker():
        services.verification_take(
            verification_id, owner=heartbeat.process_name(), needs=providers.run_needs(run_settings)
        )
    else:
        services.verification_take(verification_id, owner="", needs={})


def refuse_other_configuration(verification: Verification) -> bool:
    """A run is never run with other keys, servers or search providers than it was started
    with: a process configured otherwise fails it with what differs, for a person to retry it
    where that configuration is."""
    unmet = providers.needs_unmet(verification.needs, verification.settings)
    if unmet:
        services.verification_fail(
            verification.pk,
            reason=f"this run was started with another configuration than this process has ({', '.join(unmet)}); "
            "retry it from a process configured as the one that started it",
        )
    return bool(unmet)


def _fail_run(verification_id, *, reason: str, transient: bool = True) -> None:
    services.verification_fail(verification_id, reason=reason, transient=transient)


@base.step("splitting the text into sentences", give_up=_fail_run)
def verification_start(verification_id: str) -> None:
    verification = Verification.objects.get(pk=verification_id)
    base.hold(verification_id)
    if not verification.needs:
        services.verification_needs_record(verification_id, needs=providers.run_needs(verification.settings))
    elif refuse_other_configuration(verification):
        return
    if verification.status != Status.RUNNING and not services.verification_begin(verification):
        return
    # Split when the run was created (services.verification_create); runs created before that
    # was so are split here.
    sentences = list(verification.sentences.all()) or services.sentences_save(
        verification=verification,
        segments=cited_segments.segment_cited(read_citations(verification.text), verification.language or "en"),
    )
    if not sentences:
        services.verification_fail(verification_id, reason="the text has no sentences to check", transient=False)
    if verification.settings.get("evidence") == "trail":
        trail.begin(verification_id)  # its documents are read while its claims are found
    for chunk in chunks.decompose_chunks(s for s in sentences if s.status not in FINISHED):
        base.send("sentences_decompose", chunk)
