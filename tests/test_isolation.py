"""The test suite holds wherever it is started: the processes it starts take SIGINT as a terminal
would give it to them, whatever the test run inherited, and none of them caches anything in the
checkout's var/cache, where a later test (or the developer's own server) would find it."""

import os
import signal
import uuid
from pathlib import Path

import pytest
from django.utils.module_loading import import_string

from factsite.settings import VAR_DIR
from tests.processes import READY_WITHIN_S, Processes, wait_until
from tests.test_cache import default_cache


def sigint_ignored(pid: int | str) -> bool:
    """From /proc: the process ignores SIGINT (its bit in the SigIgn mask)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(status.split("SigIgn:")[1].split()[0], 16)
    return bool(mask & 1 << (signal.SIGINT - 1))


def test_the_test_run_takes_sigint_as_python_does_even_when_started_with_it_ignored():
    # Started in the background by a script, a test run inherits SIGINT ignored (Python keeps it
    # so): conftest.py gives it Python's own handler back.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not sigint_ignored("self")


def test_a_process_a_test_starts_has_sigint_at_its_default_even_when_the_test_run_ignores_it(tmp_path):
    processes = Processes({"PATH": os.environ["PATH"]}, tmp_path)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        probe = processes.start("probe", "-c", "print('started', flush=True); import time; time.sleep(60)")
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        wait_until(lambda: "started" in processes.log("probe"), 60, lambda: processes.tail())
        assert not sigint_ignored(probe.pid)
    finally:
        processes.close()


# Run in a process of the app as the tests start one: what it finds under a key the test put in
# the checkout's cache, and a key of its own that the test then looks for there.
CACHE_PROBE = """
from django.core.cache import cache
print("seen:", cache.get("{key}"))
cache.set("{key}-from-the-process", "written", 600)
print("done")
"""


@pytest.mark.parametrize("broker_url", [None, "broker"], ids=["embedded", "on redis"])
def test_a_process_a_test_starts_neither_reads_nor_writes_the_checkouts_cache(
    processes, monkeypatch, request, broker_url
):
    # settings.py's cache without CACHE_URL and REDIS_URL: files in the checkout's var/cache,
    # which every test run and the developer's own server share.
    config = default_cache(monkeypatch, VAR_DIR / "cache")
    checkout = import_string(config.pop("BACKEND"))(config.pop("LOCATION"), config)
    key = f"test-isolation-{uuid.uuid4().hex}"
    checkout.set(key, "cached by an earlier test", 600)
    env = {"REDIS_URL": request.getfixturevalue(broker_url)} if broker_url else {}
    try:
        probe = processes.start("probe", "manage.py", "shell", "-c", CACHE_PROBE.format(key=key), **env)
        assert probe.wait(READY_WITHIN_S) == 0, processes.tail()
        output = processes.log("probe")
        assert "done" in output, output
        assert "seen: None" in output, "a process of a test read a cached answer from the checkout's var/cache"
        assert checkout.get(f"{key}-from-the-process") is None, "a process of a test cached in the checkout's var/cache"
    finally:
        checkout.delete(key)
        checkout.delete(f"{key}-from-the-process")
        checkout.close()
