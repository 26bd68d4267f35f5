"""The first code a CPU-pool process runs, kept free of heavy imports so that what it sets up
holds before the parser and the model are imported (those take seconds of CPU).

- Lower priority: the pool's work (parsing pages, ranking passages) is throughput, while the
  process that started it answers people (the web server) or orchestrates runs; on 2 cores a
  warming pool otherwise kept the web server from answering for 15-40 s.
- Dies with its parent: a pool process outlived a parent stopped by SIGTERM or SIGKILL (its
  pipe to the parent is only read when work arrives), and every stop left ~590 MB behind."""

import contextlib
import os
import threading
import time

# Added to the parent's niceness (0-19 on Linux; higher yields the CPU to others).
NICENESS = 5
PARENT_CHECK_S = 0.5


def init(embedding_model: str | None, parent_pid: int) -> None:
    """The pool's initializer (see verification.cpu)."""
    _yield_cpu()
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), name="parent-watch", daemon=True).start()
    from verification import cpu  # the heavy imports, now at low priority

    cpu.prepare_process(embedding_model)


def _yield_cpu() -> None:
    # Where that is not allowed, the pool still works, only at normal priority.
    with contextlib.suppress(OSError):
        os.nice(NICENESS)


def _exit_when_orphaned(parent_pid: int) -> None:
    # A process whose parent died is handed to init (or a subreaper): its parent id changes.
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_S)
    os._exit(0)
