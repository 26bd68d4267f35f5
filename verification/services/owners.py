"""What a run's creator may do to it (ownership.py decides who that is): stop it, delete it."""

from django.db import transaction
from django.utils import timezone

from verification.models import FINISHED, DeletedVerification, Status, Verification
from verification.services.rows import transition


def verification_cancel(verification_id) -> bool:
    """Stops a run under way: its queued tasks find it cancelled and end without spending
    (worker/base.hold); what it found so far stays. False when it had already ended."""
    return transition(
        Verification.objects.filter(pk=verification_id).exclude(status__in=FINISHED),
        to=Status.CANCELLED,
        error="cancelled by the person who started it",
        finished_at=timezone.now(),
    )


@transaction.atomic
def verification_delete(verification_id) -> None:
    """Deletes a run and everything stored for it (its uploads too), keeping only its id so its
    permalink can say it was deleted. A run under way is cancelled first, so its queued tasks end
    at once; those already running find their rows gone (tasks.StepTask)."""
    verification_cancel(verification_id)
    DeletedVerification.objects.get_or_create(id=verification_id)
    Verification.objects.filter(pk=verification_id).delete()
