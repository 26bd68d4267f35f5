"""Which runs the sweeper takes over (services.verifications_stalled): only those nobody is
working on, whoever owns them and however long they have been quiet."""

from datetime import timedelta

import pytest
from django.utils import timezone

from verification import services
from verification.models import Status, Verification, WorkerProcess

SILENT_FOR = timedelta(seconds=30)
GONE_AFTER = timedelta(seconds=15)


def process(name: str, kind: str, beat_ago: float) -> str:
    beat = timezone.now() - timedelta(seconds=beat_ago)
    WorkerProcess.objects.create(name=name, kind=kind, started_at=beat, beat_at=beat)
    return name


def run(owner: str = "", touched_ago: float | None = None, created_ago: float = 600) -> str:
    now = timezone.now()
    verification = Verification.objects.create(text="A text.", settings={}, status=Status.RUNNING, owner=owner)
    Verification.objects.filter(pk=verification.pk).update(
        created_at=now - timedelta(seconds=created_ago),
        touched_at=None if touched_ago is None else now - timedelta(seconds=touched_ago),
    )
    return verification.pk


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("owner_kind", "owner_beat_ago", "touched_ago", "created_ago", "stalled"),
    [
        # A live embedded owner keeps its runs, however quiet (queued, waiting for the model).
        ("embedded", 1, 3600, 7200, False),
        ("embedded", 1, None, 7200, False),
        # Its owner stopped beating: taken over once the run is quiet too.
        ("embedded", 60, 20, 600, True),
        ("embedded", 60, 5, 600, False),
        # Just created by a process whose first beat is not in yet.
        ("embedded", None, None, 2, False),
        ("embedded", None, None, 600, True),
        # On the shared broker: a live worker's run with no task for RUN_STALLED_AFTER lost a message.
        ("celery", 1, 60, 600, True),
        ("celery", 1, 10, 600, False),
        # A dead worker's run: after its owner is gone, not RUN_STALLED_AFTER.
        ("celery", 60, 20, 600, True),
        # Nobody took it yet.
        (None, None, None, 60, True),
        (None, None, None, 10, False),
    ],
)
def test_the_sweeper_takes_only_runs_nobody_works_on(owner_kind, owner_beat_ago, touched_ago, created_ago, stalled):
    owner = ""
    if owner_kind:
        owner = "host:1:abc"
        if owner_beat_ago is not None:
            process(owner, owner_kind, owner_beat_ago)
    verification_id = run(owner, touched_ago, created_ago)

    found = services.verifications_stalled(silent_for=SILENT_FOR, gone_after=GONE_AFTER)

    assert (verification_id in found) is stalled


@pytest.mark.django_db
def test_a_run_swept_moments_ago_is_not_swept_again():
    verification_id = run(touched_ago=600)
    assert services.verification_claim_sweep(verification_id, silent_for=SILENT_FOR, owner="me")
    assert not services.verification_claim_sweep(verification_id, silent_for=SILENT_FOR, owner="other")

    assert verification_id not in services.verifications_stalled(silent_for=SILENT_FOR, gone_after=GONE_AFTER)
    assert Verification.objects.get(pk=verification_id).owner == "me"
