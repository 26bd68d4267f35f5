"""A trail run's progress in a trail's own terms (issue 38.8): the page and the command line said
"sentences split into claims 0/4" while its claims were listed and "claims searched 3/3 pages
0/0" of a run that searches nothing, and the bar sat at 0 % until whole claims ended. Now it
counts the texts read, the rounds judged and the claims traced, and the bar moves with them.
The real worker on real Redis, the fake model over HTTP (tests/trail_model.py)."""

import time

import pytest

from tests.test_trail_views import finished_trail
from tests.test_trails import start, trail, wait_for
from verification.models import Claim, ClaimStatus, Status, TrailRound, TrailSelection, Verification
from verification.selectors.trail_progress import trail_progress

pytestmark = pytest.mark.django_db(transaction=True)

# Only src-a says it (docs/examples/trail.json): its selections, in round 2 of the claims that
# come down from sum-1, wait until the test releases them.
HELD = "Gustave Eiffel's company"


@pytest.fixture
def held_src_a(world, settings):
    settings.TRAIL_BATCH_CLAIMS, settings.TRAIL_BATCH_WAIT_S = 1, 0
    world.llm.held_words = (HELD,)
    yield world.llm
    world.llm.release()


def rounds_of(run_id: str):
    return TrailRound.objects.filter(claim__sentence__verification_id=run_id)


def wait_until_round_2_waits_for_src_a(llm, run_id: str, timeout: float = 60) -> int:
    """Round 1 judged for every claim, and each claim that went on to round 2 has read src-b
    there and waits for src-a; returns how many did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        claims = Claim.objects.filter(sentence__verification_id=run_id)
        second = rounds_of(run_id).filter(index=2)
        if (
            llm.held > 0
            and claims.count() == 3
            and rounds_of(run_id).filter(index=1, status=Status.DONE).count() == 3
            and second.count() == claims.exclude(status=ClaimStatus.DONE).count()
            and TrailSelection.objects.filter(round__in=second, node_key="src-b", status=Status.DONE).count()
            == second.count()
        ):
            return second.count()
        time.sleep(0.1)
    states = list(rounds_of(run_id).values_list("claim__text", "index", "status"))
    raise AssertionError(f"the run never waited for src-a in round 2: {states}")


def test_a_trail_runs_progress_counts_rounds_and_texts_and_its_bar_moves_with_them(client, held_src_a, celery_worker):
    run_id = start(client, {"trail": trail()})
    waiting = wait_until_round_2_waits_for_src_a(held_src_a, run_id)
    ended = 3 - waiting
    assert waiting >= 2  # "opened" and "gold" come down from sum-1

    progress = trail_progress(Verification.objects.get(pk=run_id))

    assert progress["sentences"] == {"split": 3, "total": 3}  # its claims are there: it was split
    assert progress["claims"] == {"ended": ended, "total": 3}
    assert progress["rounds"] == {"judged": 3, "total": 3 + waiting}
    # Round 1 read sum-1 for each claim; round 2 src-b, not yet src-a, for each claim in it.
    assert progress["texts"] == {"read": 3 + waiting, "total": 3 + 2 * waiting}
    assert progress["documents"]["total"] == 0
    assert not {"pages", "judgements"} & progress.keys()
    # A trail two rounds deep: a claim waiting in round 2 with half its texts read is three
    # quarters down it. Counted by ended claims alone the bar stood at 10 + 90 * ended / 3.
    assert progress["percent"] == 10 + round(90 * (ended + 0.75 * waiting) / 3), progress

    page = client.get(f"/v/{run_id}").content.decode()
    assert f"texts read {3 + waiting}/{3 + 2 * waiting}" in page
    assert f"rounds judged 3/{3 + waiting}" in page
    assert f"claims traced to the end of their trail {ended}/3" in page
    assert "final text split into claims 3/3 sentences" in page
    assert f'value="{progress["percent"]}"' in page
    assert "claims searched" not in page and "pages read" not in page
    # The API says it in the same terms: the trail's endpoint, and the run endpoint beside its web counts.
    assert client.get(f"/api/trails/{run_id}").json()["progress"] == progress
    api = client.get(f"/api/verifications/{run_id}").json()["progress"]
    assert api["trail"] == progress and api["percent"] == progress["percent"]

    held_src_a.release()
    assert wait_for(client, run_id)["status"] == "done"
    done = trail_progress(Verification.objects.get(pk=run_id))
    assert done["percent"] == 100
    assert done["claims"] == {"ended": 3, "total": 3}
    assert done["rounds"]["judged"] == done["rounds"]["total"] == 3 + waiting
    assert done["texts"]["read"] == done["texts"]["total"] == 3 + 2 * waiting


def test_a_trail_runs_bar_never_goes_back_when_its_counts_do(configured):
    run = finished_trail()
    Verification.objects.filter(pk=run.pk).update(status=Status.RUNNING)
    Claim.objects.filter(sentence__verification=run).update(status=ClaimStatus.PENDING)
    # Two rounds judged of the two "opened" and "gold" can take, one of the aquarium's two.
    shown = trail_progress(Verification.objects.get(pk=run.pk))["percent"]
    assert shown == 10 + round(90 * (1 + 1 + 0.5) / 3)

    # Rounds that count for less than they did (as a round found later does): the bar stays.
    TrailRound.objects.filter(claim__sentence__verification=run).update(status=Status.PENDING)

    assert trail_progress(Verification.objects.get(pk=run.pk))["percent"] == shown
