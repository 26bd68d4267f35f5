"""CPU-bound work of a run (parsing downloaded pages, splitting them into sentences, ranking
passages) in a pool of processes. A worker's threads spend most of their time waiting on the
LLM, the search API and web pages; with this work in the same interpreter they also waited on
each other for its lock, and real pages (100 KB–1 MB) made runs CPU-bound on two cores. The
threads now hand the work over and wait without holding the lock.

The functions the pool runs are plain pipeline code: no Django, no database, arguments in and
results out. CPU_PROCESSES=0 runs them in the calling thread instead."""

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Hashable
from concurrent import futures
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from celery.exceptions import Ignore

from verification.worker import cpu_child, cpu_turns, cpu_work

T = TypeVar("T")
logger = logging.getLogger(__name__)

_pool: ProcessPoolExecutor | None = None
_pool_pid: int | None = None
# One more process, for a run whose calls would wait behind other runs' long calls (see `cpu_turns.Turns`).
_overflow: ProcessPoolExecutor | None = None
_overflow_pid: int | None = None
_lock = threading.Lock()
# Set once every process of the current pool has loaded what it needs (see `_get_pool`).
_warm = threading.Event()
# Set by `stop`: this process is stopping, and starts no pool any more.
_stopped = threading.Event()

# --- in the worker

# What the pool runs (re-exported: callers hand these to `run`).
read_page = cpu_work.read_page
choose_excerpts = cpu_work.choose_excerpts


TookTooLong = cpu_child.TookTooLong


class Stopping(Ignore):
    """This process is stopping (`stop`): the call was cut short, or never got a process. It is
    a Celery Ignore so that its task ends without failing its item: a failed page counts as read
    and would be lost to the run (a stop is no fault of the page), while an unfinished one is read
    by whichever process resumes the run once this one stops beating (lifecycle, resume.sweep)."""


# How long past its time limit a call may take to stop by itself (code inside C notices the
# limit only when it comes back) before its pool's processes are ended.
HARD_LIMIT_MARGIN_S = 5.0
_POLL_S = 0.25


def run(
    function: Callable[..., T],
    *args,
    time_limit: float | None = None,
    place: int = 0,
    for_run: Hashable = None,
    **kwargs,
) -> T:
    """`function(*args, **kwargs)` in the pool (or here, without one). A pool whose process
    died (killed, out of memory) is replaced and the call tried once more. A call made while
    the pool warms up waits for it: it is queued behind the warm-up. A call cut short because
    this process is stopping (`stop`) raises Stopping.

    `for_run`: the run the call works for (its verification's id). Runs share the pool's
    processes fairly while they wait for them, and a run whose calls wait behind other runs'
    long calls gets the overflow process (see `cpu_turns.Turns`); calls without one share as one run.

    `place`: how far into its run the work is (the index of the first sentence it serves).
    When more calls wait than the pool has processes, they are served in order of arrival
    plus PLACE_DELAY_S per place: a run's first sentences get their pages read first and are
    coloured first, in reading order, instead of when their last page happens to come up among
    all the run's pages; a later sentence yields to newer calls for at most that long a place.

    `time_limit`: seconds the call may run (not wait in the queue) before it raises
    TookTooLong; its process goes on with the next call, or, stuck in C well past the limit, is
    ended with its pool (calls in flight in it are tried again on a new one). Without a pool
    there is no limit: only a process's main thread can be interrupted."""
    if _get_pool() is None:
        return function(*args, **kwargs)
    with _turns.turn(time.monotonic() + PLACE_DELAY_S * place, run=for_run, width=_width()) as overflow:
        if not overflow:
            return _run_in(_get_pool, function, args, kwargs, time_limit)
        try:
            return _run_in(_get_overflow, function, args, kwargs, time_limit)
        finally:
            _retire_overflow_when_idle()


def _run_in(get_pool: Callable[[], ProcessPoolExecutor], function: Callable[..., T], args, kwargs, time_limit) -> T:
    # Taken now, not before the wait for a turn: the pool may have been ended meanwhile (a call
    # stuck past its limit), and a call handed to it would fail without having run.
    pool = get_pool()
    try:
        return _call(pool, function, args, kwargs, time_limit)
    except BrokenProcessPool:
        if _stopped.is_set():  # its process was ended by `stop`: it did not die of the call
            raise Stopping from None
        logger.warning("a CPU process died; starting a new pool")
        _discard(pool)
    except (futures.CancelledError, RuntimeError) as error:
        # The pool was ended under this call (another call stuck past its limit, a stop):
        # queued in it, the call was cancelled, or it came to a pool already shut down
        # ("cannot schedule new futures after shutdown"). It did not run: it runs on the next.
        if isinstance(error, RuntimeError) and "shutdown" not in str(error):
            raise
        if _stopped.is_set():
            raise Stopping from None
        logger.info("a CPU call's pool was ended before it ran; trying it on the next one")
    return _call(get_pool(), function, args, kwargs, time_limit)


PLACE_DELAY_S = 1.0


# How long the overflow process (cpu_turns.Turns) may sit idle before it ends (it holds its
# imports and maybe the embedding model: ~300 MB).
OVERFLOW_IDLE_S = 60.0

_turns = cpu_turns.Turns()


def _call(pool: ProcessPoolExecutor, function: Callable[..., T], args, kwargs, time_limit: float | None) -> T:
    if time_limit is None:
        return _submit(pool, function, *args, **kwargs).result()
    future = _submit(pool, cpu_child.call_with_time_limit, time_limit, function, *args, **kwargs)
    running_since = None
    while True:
        try:
            return future.result(timeout=_POLL_S)
        except futures.TimeoutError:
            # Handed to a warm process (or next in line for one); the overflow's is warm before it
            # is handed a call.
            if future.running() and (_warm.is_set() or pool is _overflow):
                running_since = running_since or time.monotonic()
                if time.monotonic() - running_since > time_limit + HARD_LIMIT_MARGIN_S:
                    logger.warning("a CPU call ran %g s past its limit; ending its pool", HARD_LIMIT_MARGIN_S)
                    _end(pool)
                    raise TookTooLong(time_limit) from None


def start(
    *, warm_embedding_model: str | None = None, wait: bool = False, on_warm: Callable[[], None] | None = None
) -> None:
    """Start the pool now, loading the embedding model in every process, so the first run
    does not pay for it. It warms up in the background (the caller goes on serving); `wait`
    returns once it is ready, and `on_warm` is called then."""
    if _get_pool(warm_embedding_model) is None:
        warming = threading.Thread(target=_warm_here, args=(warm_embedding_model,), daemon=True)
        warming.start()
    if on_warm is not None:
        threading.Thread(target=_call_when_warm, args=(on_warm,), daemon=True).start()
    if wait:
        _warm.wait()


def is_warm() -> bool:
    """Whether this process's pool (or, without one, its model) has finished warming up."""
    return _warm.is_set()


def _warm_here(embedding_model: str | None) -> None:
    if embedding_model:
        cpu_work.warm_up(embedding_model)
    _warm.set()


def _mark_warm_when_done(pool: ProcessPoolExecutor, started: list) -> None:
    futures.wait(started)
    with _lock:
        if _pool is pool:  # not replaced meanwhile (its successor warms up on its own)
            _warm.set()


def _call_when_warm(on_warm: Callable[[], None]) -> None:
    _warm.wait()
    try:
        on_warm()
    except Exception:  # only a report of it failed: the pool is warm all the same
        logger.exception("reporting the end of the warm-up failed")


def _ready() -> None:
    """Nothing: the process's initializer did the work."""


def stop() -> None:
    """End the pool's processes now, work in progress included: for a process that is being
    stopped. Waiting for them could take as long as the slowest page."""
    global _pool, _overflow
    # Before the pool ends: a call that sees it end must know it was `stop`. Calls in flight and
    # calls waiting for a turn raise Stopping instead of starting a new pool.
    _stopped.set()
    # From a signal handler too, which may have interrupted this thread inside `_get_pool`.
    locked = _lock.acquire(timeout=1.0)
    try:
        pool, _pool = _pool, None
        overflow, _overflow = _overflow, None
        _warm.clear()
    finally:
        if locked:
            _lock.release()
    if pool is not None and _pool_pid == os.getpid():
        _end(pool)
    if overflow is not None and _overflow_pid == os.getpid():
        _end(overflow)


def _end(pool: ProcessPoolExecutor) -> None:
    """Discard the pool and end its processes (a later call starts a new pool)."""
    # ProcessPoolExecutor can only wait for its processes, not end them: its `_processes` (pid →
    # Process) is private but has been there since Python 3.2. Read before the shutdown in
    # `_discard`, whose manager thread may empty it: the processes were then left to exit on
    # their own, after this process had gone (unreaped, or still busy with a page).
    processes = list((getattr(pool, "_processes", None) or {}).values())
    _discard(pool)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(STOP_WAIT_S)
        if process.is_alive():
            process.kill()
            process.join(STOP_WAIT_S)  # reaped here, not left to whoever adopts it


STOP_WAIT_S = 3.0


def _width() -> int:
    """Calls let into the pool at once: one a process, and one more waiting in its queue (as
    ProcessPoolExecutor itself queues one), so that a process that finishes a call starts the
    next at once instead of idling until a waiting thread is woken and hands it over."""
    from django.conf import settings

    return settings.CPU_PROCESSES + 1


def _loading_at_once() -> int:
    """How many of the pool's processes load (their imports and the model, ~1 s of CPU each) at
    once: half the cores. Any process takes calls once it has loaded, so on a small machine the
    first one loaded alone is reading pages while the others load, instead of all of them
    sharing the cores and becoming ready together, late (a cold start on 2 cores had the first
    pages wait ~2.5 s for four loading processes, two workers' pools)."""
    return max(1, (os.cpu_count() or 1) // 2)


def _get_pool(embedding_model: str | None = None) -> ProcessPoolExecutor | None:
    """The pool (started now if there is none), or None without one (CPU_PROCESSES=0). Raises
    Stopping once `stop` was called."""
    from django.conf import settings

    global _pool, _pool_pid
    if settings.CPU_PROCESSES <= 0:
        return None
    if _stopped.is_set():
        raise Stopping
    with _lock:
        if _pool is None or _pool_pid != os.getpid():  # a forked child must not share its parent's pool
            _pool, started = _new_pool(settings.CPU_PROCESSES, embedding_model)
            _pool_pid = os.getpid()
            _warm.clear()
            threading.Thread(target=_mark_warm_when_done, args=(_pool, started), daemon=True).start()
        return _pool


def _get_overflow() -> ProcessPoolExecutor:
    """The overflow process's pool (see `cpu_turns.Turns`), started now if there is none: once it has
    loaded, for the call that needs it waits for that anyway, and its time limit then counts
    from the call's start (see `_call`). Without the model: it loads if a call needs it."""
    global _overflow, _overflow_pid
    if _stopped.is_set():
        raise Stopping
    with _lock:
        if _overflow is None or _overflow_pid != os.getpid():
            logger.info("other runs' calls hold every CPU process; starting an overflow process")
            _overflow, started = _new_pool(1)
            _overflow_pid = os.getpid()
        else:
            started = []
        pool = _overflow
    futures.wait(started)
    return pool


def _retire_overflow_when_idle() -> None:
    """End the overflow process if no call has used it for OVERFLOW_IDLE_S from now."""
    calls = _turns.overflow_calls
    timer = threading.Timer(OVERFLOW_IDLE_S, _retire_overflow, args=(calls,))
    timer.daemon = True
    timer.start()


def _retire_overflow(calls: int) -> None:
    global _overflow
    with _turns._changed:  # no call is given the overflow process while it is taken away
        if _turns.overflow_calls != calls:  # used since: its last call's timer decides
            return
        with _lock:
            pool, _overflow = _overflow, None
    if pool is not None and _overflow_pid == os.getpid():
        _end(pool)


def _new_pool(processes: int, embedding_model: str | None = None) -> tuple[ProcessPoolExecutor, list[futures.Future]]:
    """A pool whose processes are all started now, and the calls that tell when each has
    loaded what it needs: it is warm when all have run (and a call's time limit counts only
    from then, not while its process still imports)."""
    # spawn, not fork: forking a process that runs threads can copy a held lock.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=processes,
        mp_context=context,
        initializer=cpu_child.init,
        initargs=(embedding_model, os.getpid(), context.BoundedSemaphore(_loading_at_once())),
    )
    return pool, [_submit(pool, _ready) for _ in range(processes)]


def _submit(pool: ProcessPoolExecutor, function: Callable[..., T], *args, **kwargs) -> futures.Future:
    """`pool.submit`, which starts the pool's processes as calls need them, with SIGINT blocked
    meanwhile in this thread: a process started so inherits it blocked until cpu_child.init
    ignores it. A Ctrl-C in a terminal reaches the whole process group; the pool's processes
    leave stopping to their parent (lifecycle.stopping ends them), instead of each printing a
    KeyboardInterrupt traceback, whether it is busy, idle or still importing. (The stdlib starts
    multiprocessing's resource tracker the same way.)"""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return pool.submit(function, *args, **kwargs)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _discard(pool: ProcessPoolExecutor) -> None:
    global _pool, _overflow
    with _lock:
        if _pool is pool:
            _pool = None
        if _overflow is pool:
            _overflow = None
    pool.shutdown(wait=False, cancel_futures=True)
