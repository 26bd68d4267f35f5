"""The first code a CPU-pool process runs, kept free of heavy imports so that what it sets up
holds before the parser and the model are imported (those take seconds of CPU).

- Lower priority: the pool's work (parsing pages, ranking passages) is throughput, while the
  process that started it answers people (the web server) or orchestrates runs; on 2 cores a
  warming pool otherwise kept the web server from answering for 15-40 s. Not the lowest: at 19,
  next to two busy processes of normal priority, a pool took 53 s to warm up and over 3 s to
  end on SIGTERM. The bench's cold run alone gained from 19 only ~0.1 in its ratio (1.76-2.00
  in 11 measurements, against 1.92-2.15 in 4 at 5), on an otherwise idle machine.
- Dies with its parent: a pool process outlived a parent stopped by SIGTERM or SIGKILL (its
  pipe to the parent is only read when work arrives), and every stop left ~590 MB behind."""

import contextlib
import os
import signal
import threading
import time

# Added to the parent's niceness (0-19 on Linux; higher yields the CPU to others).
NICENESS = 5
PARENT_CHECK_S = 0.5


class TookTooLong(BaseException):  # noqa: N818 (what happened, as the item will say it)
    """A call ran past its time limit (see `call_with_time_limit`). Not an Exception, like
    KeyboardInterrupt: parsers catch every Exception of theirs (pypdf, trafilatura), and would
    turn it into "could not be read" or go on with the next page."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)  # args are what a pickled exception is rebuilt from
        self.seconds = seconds

    def __str__(self) -> str:
        return f"over {self.seconds:g} s"


def call_with_time_limit(seconds: float, function, /, *args, **kwargs):
    """`function(*args, **kwargs)`, stopped with TookTooLong once it has run for `seconds`: a
    hostile document (a PDF that inflates to gigabytes of drawing, a page built to make a parser
    backtrack) fails alone, and this process goes on with the next call. Python code stops at
    once; code that is inside C at that moment stops when it comes back (the pool's owner ends
    the process if that takes too long: see verification.worker.cpu)."""

    def time_is_up(signum, frame):
        raise TookTooLong(seconds)

    signal.signal(signal.SIGALRM, time_is_up)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return function(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def init(embedding_model: str | None, parent_pid: int, warming=None) -> None:
    """The pool's initializer (see verification.worker.cpu). `warming`, a semaphore shared by the
    pool's processes, bounds how many of them load at once (see verification.worker.cpu)."""
    global loading
    _leave_sigint_to_parent()
    _yield_cpu()
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), name="parent-watch", daemon=True).start()
    with warming or contextlib.nullcontext():
        started = time.monotonic()
        from verification.worker import cpu_work  # the heavy imports, now at low priority

        cpu_work.prepare_process(embedding_model)
        loading = (started, time.monotonic())


# When this process loaded (time.monotonic() before and after): CLOCK_MONOTONIC is one clock for
# every process of the machine, so processes' loading times can be compared.
loading: tuple[float, float] | None = None


def loading_time(hold_s: float = 0.0) -> tuple[float, float] | None:
    """This process's `loading`, after holding it for `hold_s` (so a caller can occupy it)."""
    time.sleep(hold_s)
    return loading


def _leave_sigint_to_parent() -> None:
    # Started with SIGINT blocked (verification.worker.cpu._submit); ignored from now on, so that a
    # Ctrl-C to the process group neither interrupts a call nor prints a traceback: the parent
    # decides, and ends this process if it is stopping.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _yield_cpu() -> None:
    # Where that is not allowed, the pool still works, only at normal priority.
    with contextlib.suppress(OSError):
        os.nice(NICENESS)


def _exit_when_orphaned(parent_pid: int) -> None:
    # A process whose parent died is handed to init (or a subreaper): its parent id changes.
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_S)
    os._exit(0)
