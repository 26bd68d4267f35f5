"""Signs of life. While a worker process holds tasks of some runs, a thread of it says so
every few seconds, in one UPDATE for all of them. The sweeper (tasks.sweep) can then tell a
run that is busy (a slow model answer) from one whose worker died or whose message was lost,
and resumes only the second kind."""

import logging
import threading
import time
from collections import Counter
from contextlib import contextmanager

from django.db import connection

logger = logging.getLogger(__name__)

INTERVAL_S = 5.0

_lock = threading.Lock()
_holding: Counter = Counter()  # run id → tasks of it running in this process now
_recent: set = set()  # runs that had a task since the last beat (short tasks end between beats)
_local = threading.local()
_thread: threading.Thread | None = None


@contextmanager
def task_scope():
    """Around one task: the runs it declares with `hold` are released when it ends."""
    _local.held = []
    try:
        yield
    finally:
        held, _local.held = _local.held, None
        with _lock:
            for key in held:
                _holding[key] -= 1
                if _holding[key] <= 0:
                    del _holding[key]


def hold(verification_id) -> None:
    """The current task works for this run (until the task ends)."""
    key = str(verification_id)
    held = getattr(_local, "held", None)
    with _lock:
        _recent.add(key)
        if held is not None:
            held.append(key)
            _holding[key] += 1
    _start_once()


def beat() -> None:
    """Touch every run held now or since the last beat."""
    from verification import services

    with _lock:
        ids = set(_holding) | _recent
        _recent.clear()
    if ids:
        services.verifications_touch(ids)


def _start_once() -> None:
    global _thread
    if _thread is not None and _thread.is_alive():
        return
    with _lock:
        if _thread is None or not _thread.is_alive():  # also in a forked child, where it is not
            _thread = threading.Thread(target=_beat_forever, name="factsite-heartbeat", daemon=True)
            _thread.start()


def _beat_forever() -> None:
    while True:
        time.sleep(INTERVAL_S)
        try:
            beat()
        except Exception:  # a busy or unreachable database: the next beat tries again
            logger.warning("heartbeat failed", exc_info=True)
        finally:
            # Not kept open between beats: an idle connection would hold the database (and stop
            # a test run from dropping its PostgreSQL database).
            connection.close()
