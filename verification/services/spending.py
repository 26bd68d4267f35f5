"""What a client spent: one row per request that spends (limits.py sums them per hour)."""

from datetime import datetime

from verification.models import Spending


def spending_add(*, client: str, kind: str, amount: int, forget_before: datetime) -> Spending:
    """Records a request's spending, and forgets this client's rows that no window counts any more."""
    Spending.objects.filter(client=client, created_at__lt=forget_before).delete()
    return Spending.objects.create(client=client, kind=kind, amount=amount)


def spending_undo(spending: Spending) -> None:
    """A request refused or failed spent nothing."""
    Spending.objects.filter(pk=spending.pk).delete()


def spending_forget_before(moment: datetime) -> int:
    """Deletes every client's spending older than `moment` (clients that never came back)."""
    return Spending.objects.filter(created_at__lt=moment).delete()[0]
