"""`manage.py cleanup`: runs older than RUN_RETENTION_DAYS go, with their rows; recent runs and
runs under way stay; 0 keeps everything."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ObjectDoesNotExist
from django.core.management import CommandError, call_command
from django.utils import timezone

from verification.models import Claim, Evidence, Sentence, Source, Status, Verification

pytestmark = pytest.mark.django_db


def a_run(*, status: str, age_days: float, finished_days_ago: float | None = None) -> Verification:
    """A run created `age_days` ago, with a sentence, a claim, a page and an evidence item."""
    now = timezone.now()
    run = Verification.objects.create(text="The Eiffel Tower is in Paris.", settings={}, status=status)
    Verification.objects.filter(pk=run.pk).update(
        created_at=now - timedelta(days=age_days),
        finished_at=None if finished_days_ago is None else now - timedelta(days=finished_days_ago),
    )
    sentence = Sentence.objects.create(
        verification=run, index=0, text=run.text, start=0, end=29, paragraph_index=0, context=[], position_in_context=0
    )
    claim = Claim.objects.create(sentence=sentence, index=0, text=run.text, query="Eiffel Tower location")
    source = Source.objects.create(verification=run, url="https://example.org/eiffel", host="example.org")
    Evidence.objects.create(claim=claim, source=source, index=0, passage="In Paris.", relevance=1.0)
    return run


def cleanup(*args) -> str:
    out = StringIO()
    call_command("cleanup", *args, stdout=out)
    return out.getvalue()


def test_it_deletes_runs_that_finished_before_the_retention_period_with_their_rows(settings):
    settings.RUN_RETENTION_DAYS = 30
    old = [
        a_run(status=Status.DONE, age_days=45, finished_days_ago=44),
        a_run(status=Status.FAILED, age_days=31, finished_days_ago=31),
        a_run(status=Status.FAILED, age_days=40),  # failed with no finish time: its creation counts
    ]
    kept = [
        a_run(status=Status.DONE, age_days=2, finished_days_ago=2),
        a_run(status=Status.DONE, age_days=40, finished_days_ago=10),  # retried lately
        a_run(status=Status.RUNNING, age_days=40),
        a_run(status=Status.PENDING, age_days=40),
    ]

    assert cleanup() == "Deleted 3 runs finished more than 30 days ago.\n"

    assert set(Verification.objects.values_list("pk", flat=True)) == {run.pk for run in kept}
    assert not Verification.objects.filter(pk__in=[run.pk for run in old]).exists()
    for model in (Sentence, Claim, Source, Evidence):
        assert model.objects.count() == len(kept), model


def test_it_deletes_more_runs_than_one_batch(settings):
    settings.RUN_RETENTION_DAYS = 30
    long_ago = timezone.now() - timedelta(days=60)
    Verification.objects.bulk_create(
        Verification(text="Old.", settings={}, status=Status.DONE, finished_at=long_ago) for _ in range(250)
    )

    assert cleanup() == "Deleted 250 runs finished more than 30 days ago.\n"
    assert not Verification.objects.exists()


def test_it_takes_the_period_from_the_command_line(settings):
    settings.RUN_RETENTION_DAYS = 30
    a_run(status=Status.DONE, age_days=8, finished_days_ago=8)
    a_run(status=Status.DONE, age_days=6, finished_days_ago=6)

    assert cleanup("--days", "7") == "Deleted 1 run finished more than 7 days ago.\n"
    assert Verification.objects.count() == 1


def test_zero_days_keeps_every_run(settings):
    settings.RUN_RETENTION_DAYS = 0
    a_run(status=Status.DONE, age_days=4000, finished_days_ago=4000)

    assert cleanup() == "Retention is 0 days: every run is kept.\n"
    assert Verification.objects.count() == 1


def test_it_refuses_a_negative_period():
    with pytest.raises(CommandError, match="0 \\(keep every run\\) or more"):
        cleanup("--days", "-1")


@pytest.mark.parametrize("task_name", ["sentence_decompose", "claim_search", "source_fetch"])
def test_a_queued_task_of_a_deleted_run_gives_up_quietly(settings, task_name):
    from verification import tasks

    settings.RUN_RETENTION_DAYS = 30
    run = a_run(status=Status.DONE, age_days=40, finished_days_ago=40)
    item_ids = {
        "sentence_decompose": run.sentences.get().pk,
        "claim_search": Claim.objects.get(sentence__verification=run).pk,
        "source_fetch": run.sources.get().pk,
    }
    call_command("cleanup", stdout=StringIO())
    task = getattr(tasks, task_name)

    # The step fails on its missing row (a chunk of sentences finds none and has nothing to
    # do); marking that row failed must not fail again (it used to raise DoesNotExist from
    # on_failure, which Celery reports as a crash).
    args = (item_ids[task_name],)
    if task_name == "sentence_decompose":
        assert task.run(*args) is None
        task, args = tasks.sentences_decompose, ([item_ids[task_name]],)
    else:
        with pytest.raises(ObjectDoesNotExist):
            task.run(*args)
    task.on_failure(Sentence.DoesNotExist(), "a-task-id", args, {}, None)

    assert not Verification.objects.filter(pk=run.pk).exists()
