"""The heartbeat's thread: it beats while the process runs tasks and stops when asked, and a test
run stops it before it drops its database (a thread left beating wrote "heartbeat failed" into
CI's log, a line every beat, until the process ended)."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tests.processes import READY_WITHIN_S, ROOT, wait_until
from verification.models import WorkerProcess
from verification.worker import heartbeat


def beating_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "factsite-heartbeat" and thread.is_alive()]


@pytest.mark.django_db(transaction=True)
def test_the_in_process_worker_beats(celery_worker):
    # celery_worker's start sends worker_init, as a `celery worker` process's does.
    assert beating_threads()
    beat = WorkerProcess.objects.filter(name=heartbeat.process_name())
    wait_until(beat.exists, heartbeat.INTERVAL_S * 4, "a beat of this process")


@pytest.mark.django_db(transaction=True)
def test_stop_ends_the_beating_thread_and_start_beats_again():
    heartbeat.start()
    assert len(beating_threads()) == 1

    heartbeat.stop()
    assert beating_threads() == []
    heartbeat.stop()  # stopped already: nothing to do
    assert beating_threads() == []
    # Nor a beat from elsewhere (the CPU pool's warm-up ending beats at once): one came after a
    # test session had dropped its database.
    WorkerProcess.objects.all().delete()
    heartbeat.beat_now()
    assert not WorkerProcess.objects.filter(name=heartbeat.process_name()).exists()

    heartbeat.start()  # a task that holds a run (heartbeat.hold) starts it again
    assert len(beating_threads()) == 1
    heartbeat.stop()
    assert beating_threads() == []


@pytest.mark.django_db(transaction=True)
def test_a_task_taken_is_recorded_well_before_the_next_beat(settings):
    """Issue 38: the tasks a `celery worker` has taken are what is sent again when it is killed,
    and most tasks last a second or two: one taken just after a beat was not recorded before the
    next, 5 s later, so that it was lost with its worker."""
    settings.CELERY_EMBEDDED_WORKER = False
    heartbeat.start()
    try:
        row = WorkerProcess.objects.filter(name=heartbeat.process_name())
        wait_until(row.exists, READY_WITHIN_S, "a first beat", interval=0.05)
        taken = time.monotonic()
        heartbeat.task_taken("taken-1", "verification.tasks.claim_search", [7])
        recorded = ["verification.tasks.claim_search", [7]]
        wait_until(lambda: recorded in row.get().tasks, heartbeat.INTERVAL_S * 2, "the task recorded", interval=0.05)
        assert time.monotonic() - taken < heartbeat.INTERVAL_S / 2
    finally:
        heartbeat.task_done("taken-1")
        heartbeat.stop()


# Loaded into a test run of its own: which heartbeat threads are still alive once its session
# is over (every fixture torn down, the test database dropped).
SESSION_END_PROBE = """
import json, os, threading

def pytest_sessionfinish(session):
    alive = [t.name for t in threading.enumerate() if t.name == "factsite-heartbeat" and t.is_alive()]
    with open(os.environ["HEARTBEAT_PROBE_OUT"], "w") as out:
        json.dump(alive, out)
"""


def test_no_heartbeat_outlives_the_test_session_that_started_it(tmp_path):
    (tmp_path / "session_end_probe.py").write_text(SESSION_END_PROBE)
    out = tmp_path / "alive.json"
    # On SQLite, a test database of its own: on PostgreSQL it would be this run's, by name.
    env = {**os.environ, "DATABASE_URL": "", "PYTHONPATH": str(tmp_path), "HEARTBEAT_PROBE_OUT": str(out)}
    test = "tests/test_heartbeat.py::test_the_in_process_worker_beats"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "session_end_probe", test]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=READY_WITHIN_S * 2)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert json.loads(out.read_text()) == [], "the session ended with its heartbeat still beating"
