"""CPU-bound work of a run (parsing downloaded pages, splitting them into sentences, ranking
passages) in a pool of processes. A worker's threads spend most of their time waiting on the
LLM, the search API and web pages; with this work in the same interpreter they also waited on
each other for its lock, and real pages (100 KB–1 MB) made runs CPU-bound on two cores. The
threads now hand the work over and wait without holding the lock.

The functions the pool runs are plain pipeline code: no Django, no database, arguments in and
results out. CPU_PROCESSES=0 runs them in the calling thread instead."""

import heapq
import itertools
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import TypeVar

from verification.worker import cpu_child, cpu_work

T = TypeVar("T")
logger = logging.getLogger(__name__)

_pool: ProcessPoolExecutor | None = None
_pool_pid: int | None = None
_lock = threading.Lock()
# Set once every process of the current pool has loaded what it needs (see `_get_pool`).
_warm = threading.Event()

# --- in the worker

# What the pool runs (re-exported: callers hand these to `run`).
read_page = cpu_work.read_page
choose_excerpts = cpu_work.choose_excerpts


TookTooLong = cpu_child.TookTooLong
# How long past its time limit a call may take to stop by itself (code inside C notices the
# limit only when it comes back) before its pool's processes are ended.
HARD_LIMIT_MARGIN_S = 5.0
_POLL_S = 0.25


def run(function: Callable[..., T], *args, time_limit: float | None = None, place: int = 0, **kwargs) -> T:
    """`function(*args, **kwargs)` in the pool (or here, without one). A pool whose process
    died (killed, out of memory) is replaced and the call tried once more. A call made while
    the pool warms up waits for it: it is queued behind the warm-up.

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
    with _turns.turn(time.monotonic() + PLACE_DELAY_S * place, width=_width()):
        # Taken now, not before the wait: the pool may have been ended meanwhile (a call stuck
        # past its limit), and a call handed to it would fail without having run.
        pool = _get_pool()
        try:
            return _call(pool, function, args, kwargs, time_limit)
        except BrokenProcessPool:
            logger.warning("a CPU process died; starting a new pool")
            _discard(pool)
        except (futures.CancelledError, RuntimeError) as error:
            # The pool was ended under this call (another call stuck past its limit, a stop):
            # queued in it, the call was cancelled, or it came to a pool already shut down
            # ("cannot schedule new futures after shutdown"). It did not run: it runs on the next.
            if isinstance(error, RuntimeError) and "shutdown" not in str(error):
                raise
            logger.info("a CPU call's pool was ended before it ran; trying it on the next one")
        return _call(_get_pool(), function, args, kwargs, time_limit)


PLACE_DELAY_S = 1.0


class _Turns:
    """At most `width` calls in the pool at once; the others wait here, lowest key first. The
    pool's own queue is first come, first served."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._waiting: list[tuple[float, int]] = []  # a heap of (key, ticket)
        self._tickets = itertools.count()
        self._running = 0

    @contextmanager
    def turn(self, key: float, *, width: int) -> Iterator[None]:
        mine = (key, next(self._tickets))
        with self._changed:
            heapq.heappush(self._waiting, mine)
            try:
                while self._running >= width or self._waiting[0] != mine:
                    self._changed.wait()
            except BaseException:  # interrupted while waiting: the others must not wait for it
                self._waiting.remove(mine)
                heapq.heapify(self._waiting)
                self._changed.notify_all()
                raise
            heapq.heappop(self._waiting)
            self._running += 1
            self._changed.notify_all()  # the next in line may fit too
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()


_turns = _Turns()


def _call(pool: ProcessPoolExecutor, function: Callable[..., T], args, kwargs, time_limit: float | None) -> T:
    if time_limit is None:
        return _submit(pool, function, *args, **kwargs).result()
    future = _submit(pool, cpu_child.call_with_time_limit, time_limit, function, *args, **kwargs)
    running_since = None
    while True:
        try:
            return future.result(timeout=_POLL_S)
        except futures.TimeoutError:
            if future.running() and _warm.is_set():  # handed to a warm process (or next in line for one)
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
    global _pool
    # From a signal handler too, which may have interrupted this thread inside `_get_pool`.
    locked = _lock.acquire(timeout=1.0)
    try:
        pool, _pool = _pool, None
        _warm.clear()
    finally:
        if locked:
            _lock.release()
    if pool is not None and _pool_pid == os.getpid():
        _end(pool)


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
    from django.conf import settings

    global _pool, _pool_pid
    if settings.CPU_PROCESSES <= 0:
        return None
    with _lock:
        if _pool is None or _pool_pid != os.getpid():  # a forked child must not share its parent's pool
            # spawn, not fork: forking a process that runs threads can copy a held lock.
            context = multiprocessing.get_context("spawn")
            _pool = ProcessPoolExecutor(
                max_workers=settings.CPU_PROCESSES,
                mp_context=context,
                initializer=cpu_child.init,
                initargs=(embedding_model, os.getpid(), context.BoundedSemaphore(_loading_at_once())),
            )
            _pool_pid = os.getpid()
            # Every process started now, each with a call to run once it has loaded what it
            # needs: the pool is warm when all have run (and a call's time limit counts only
            # from then, not while its process still imports).
            _warm.clear()
            started = [_submit(_pool, _ready) for _ in range(settings.CPU_PROCESSES)]
            threading.Thread(target=_mark_warm_when_done, args=(_pool, started), daemon=True).start()
        return _pool


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
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)
