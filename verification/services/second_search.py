"""A claim's second search (issue 28): too few of its pages could be read, so it is searched once
more with another query (worker/joins.py decides, worker/search.py searches)."""

from django.db.models import Exists

from verification.models import FINISHED, Claim, ClaimStatus, SearchResult
from verification.services.rows import transition


def claim_begin_second_search(claim_id: int, *, query: str) -> bool:
    """A claim whose pages are all read goes back to searching, once: its `second_query` is set
    in the same UPDATE, so of two joins deciding at once one wins, and a resumed or retried run
    finds it set and never searches a third time."""
    # Checked again as it is written: on PostgreSQL a join that read the claim's rows a moment
    # earlier sent claims whose pages were still being read to a second search (seen in CI).
    unread = SearchResult.objects.filter(claim_id=claim_id).exclude(status__in=FINISHED)
    return transition(
        Claim.objects.filter(pk=claim_id, status=ClaimStatus.READING, second_query="").exclude(Exists(unread)),
        to=ClaimStatus.SEARCHING,
        second_query=query,
    )


def claim_end_second_search(claim_id: int) -> None:
    """A second search that failed: the claim goes on with the pages of its first."""
    Claim.objects.filter(pk=claim_id, status=ClaimStatus.SEARCHING).exclude(second_query="").update(
        status=ClaimStatus.READING
    )
