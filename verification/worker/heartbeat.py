"""Signs of life. A process that runs tasks (the embedded worker's host, a `celery worker`)
beats every few seconds from the moment it starts: it records that it is alive (its
WorkerProcess row, with whether its CPU pool is warm yet), and touches the runs it holds tasks
of, in one UPDATE for all of them, taking them as their owner.

The sweeper (tasks.sweep) resumes a run only when nobody is working on it: its owner stopped
beating (died, was killed, was stopped), or, for a run on the shared broker, no task of it has
run for a while (a lost message). A run that only waits (for a slow model answer, a busy
queue, the model to load) is left alone, so it runs once, where it was started."""

import logging
import os
import secrets
import socket
import threading
from collections import Counter
from contextlib import contextmanager

from django.db import connection

from verification.services.workers import BEAT_INTERVAL_S, GONE_AFTER_S  # noqa: F401 (GONE_AFTER_S: part of this API)

logger = logging.getLogger(__name__)

INTERVAL_S = BEAT_INTERVAL_S
# A `celery worker` that takes a task beats within this long, not at its next beat: the tasks
# it took are recorded so that they are sent again if it dies (most tasks last a second or two,
# so those in flight at a kill were nearly all taken since its last beat), and no more often.
RECORD_TAKEN_WITHIN_S = 0.5

_lock = threading.Lock()
_holding: Counter = Counter()  # run id → tasks of it running in this process now
_recent: set = set()  # runs that had a task since the last beat (short tasks end between beats)
# Task id → [name, args] of the step tasks this process took and has not finished: its beats
# record them, so that a process that dies without a word has them sent again (resume.sweep).
_taken: dict[str, list] = {}
_local = threading.local()
_thread: threading.Thread | None = None
_stop = threading.Event()  # the running thread's: set, it ends
_taken_since_beat = threading.Event()  # set: beat within RECORD_TAKEN_WITHIN_S
_name: tuple[int, str] | None = None  # (pid, name): a forked child gets a name of its own


def process_name() -> str:
    """This process's name as a run's owner: host, pid and a random part (pids are reused),
    which starts with the pid namespace's number (see `ended_here`)."""
    global _name
    if _name is None or _name[0] != os.getpid():
        _name = (os.getpid(), f"{socket.gethostname()}:{os.getpid()}:{_pid_namespace()}.{secrets.token_hex(4)}")
    return _name[1]


def ended_here(name: str) -> bool:
    """Whether the process of this name (`process_name`) ran on this machine and has ended: the
    same host and pid namespace, and its pid runs nothing or is this process's. A process killed
    outright is known gone so at once, on its machine, while elsewhere only its missed beats tell
    (GONE_AFTER_S). A pid another process took since is taken for alive."""
    host, _, rest = name.partition(":")
    pid, _, token = rest.partition(":")
    namespace = _pid_namespace()
    if host != socket.gethostname() or not namespace or token.partition(".")[0] != namespace or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return name != process_name()
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process
        return False
    return False


def _pid_namespace() -> str:
    """The number of this process's pid namespace (a container has its own), "" where there is
    none to read: two containers may share a host name, never a pid namespace."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


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


def task_taken(task_id: str, name: str, args) -> None:
    """A step's message this process took from the broker (worker/embedded.py's signals)."""
    with _lock:
        _taken[task_id] = [name, list(args)]
    if not _embedded():  # the embedded worker's tasks are in its own memory: nobody sends them again
        _taken_since_beat.set()


def task_done(task_id: str) -> None:
    with _lock:
        _taken.pop(task_id, None)


def held_now() -> list[str]:
    """The runs the current task has declared with `hold` so far."""
    return list(getattr(_local, "held", None) or [])


def hold(verification_id) -> None:
    """The current task works for this run (until the task ends)."""
    key = str(verification_id)
    held = getattr(_local, "held", None)
    with _lock:
        _recent.add(key)
        if held is not None:
            held.append(key)
            _holding[key] += 1
    start()


def beat() -> None:
    """Say this process is alive, and touch every run held now or since the last beat."""
    from verification import services
    from verification.worker import cpu

    with _lock:
        ids = set(_holding) | _recent
        _recent.clear()
        taken = list(_taken.values())
    services.worker_process_beat(process_name(), embedded=_embedded(), warm=cpu.is_warm(), tasks=taken)
    if ids:
        services.verifications_touch(ids, owner=process_name())


def start() -> None:
    """Start beating (once per process; again in a forked child, where the thread is not)."""
    global _thread, _stop
    if _thread is not None and _thread.is_alive():
        return
    with _lock:
        if _thread is None or not _thread.is_alive():
            _stop = threading.Event()
            _thread = threading.Thread(target=_beat_forever, args=(_stop,), name="factsite-heartbeat", daemon=True)
            _thread.start()


def stop(timeout: float = 30.0) -> None:
    """Stop beating: the thread ends after the beat in progress, if one is (waited for up to
    `timeout`). Safe to call when not beating; `start` beats again. A test run stops it before
    it drops its database: left beating, the thread logged "heartbeat failed" until the
    process ended."""
    global _thread
    with _lock:
        thread, _thread = _thread, None
        _stop.set()
        _taken_since_beat.set()  # out of its wait at once
    if thread is not None:
        thread.join(timeout)


def _embedded() -> bool:
    from django.conf import settings

    return settings.CELERY_EMBEDDED_WORKER


def beat_now() -> None:
    """One beat outside the beating thread (e.g. the moment the warm-up ends); none once stopped."""
    if _stop.is_set():
        return
    try:
        beat()
    except Exception:  # a busy or unreachable database: the next beat tries again
        logger.warning("heartbeat failed", exc_info=True)
    finally:
        # Not kept open between beats: an idle connection would hold the database (and stop
        # a test run from dropping its PostgreSQL database).
        connection.close()


def _beat_forever(stop: threading.Event) -> None:
    while not stop.is_set():
        _taken_since_beat.clear()
        beat_now()
        if not stop.wait(RECORD_TAKEN_WITHIN_S):
            _taken_since_beat.wait(INTERVAL_S - RECORD_TAKEN_WITHIN_S)
