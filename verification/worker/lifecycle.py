"""Stopping: a process that runs verifications (the web server or `manage.py verify` with the
embedded worker, a `celery worker`) ends everything it started, and itself, soon after SIGTERM
or SIGINT, whatever its runs are doing.

Left alone, it did not: the CPU pool's processes outlived their parent, and the interpreter's
exit waited for every worker thread's LLM call and every pool process's page (minutes, for a
hostile PDF). Work cut short here is not lost: the run's rows say what is unfinished, and once
this process stops beating another one resumes it (verification.tasks.sweep)."""

import logging
import os
import signal
import threading
import time
from collections.abc import Callable

from verification.pipeline import lazy
from verification.worker import cpu

logger = logging.getLogger(__name__)

# How long a stopping process may take to end on its own (finishing a task in flight, closing
# connections) before it is ended outright.
GRACE_S = 5.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

_stopping = threading.Event()


def install_stop_handlers() -> None:
    """On SIGTERM/SIGINT: end the CPU pool at once, then stop as the signal would have stopped
    the process anyway, and end it outright after GRACE_S. Only over Python's own default
    handlers (runserver, the CLI): a server that handles these signals itself keeps its own and
    calls `stopping` from its hooks (gunicorn: factsite/gunicorn_conf.py; a Celery worker: the
    worker_shutting_down handler in factsite/celery.py). From the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOP_SIGNALS:
        previous = signal.getsignal(signum)
        # An ignored SIGINT was inherited, not chosen: a process started in the background by a
        # script gets it so (and Python then installs no KeyboardInterrupt), yet Ctrl-C must stop it.
        inherited = signum == signal.SIGINT and previous == signal.SIG_IGN
        if inherited or previous in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(signum, _on_stop_signal)


def stopping(exit_code: int = 0) -> None:
    """This process is stopping: end its CPU pool now, and the process itself after GRACE_S if
    it has not ended by then. Safe to call more than once."""
    if _stopping.is_set():
        return
    _stopping.set()
    threading.Thread(target=_end_after_grace, args=(exit_code,), name="stop-deadline", daemon=True).start()
    try:
        cpu.stop()
    except Exception:  # ending anyway: the deadline above still holds
        logger.exception("stopping the CPU pool failed")


def _on_stop_signal(signum, frame) -> None:
    stopping(exit_code=128 + signum)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    # SIGTERM's default: end now, as if no handler had been there.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _end_after_grace(exit_code: int) -> None:
    time.sleep(GRACE_S)
    logger.warning("still running %g s after being asked to stop: ending now", GRACE_S)
    os._exit(exit_code)


def preload_in_background(*, splitter: bool = True, then: Callable[[], None] | None = None) -> None:
    """Import what the first submission needs (the sentence splitter loads nltk, the LLM client
    openai: ~1.5 s together) in a thread, after the server is up: the page answers at once, and
    the first Verify does not wait for the imports either. The splitter first: the process that
    takes a text splits it before anything else. A worker (`splitter=False`) gets runs already
    split (services.verification_create) and needs only the LLM client. `then` is called in the
    same thread afterwards (unless this process is stopping by then)."""
    threading.Thread(target=_preload, args=(splitter, then), name="preload", daemon=True).start()


def _preload(splitter: bool, then: Callable[[], None] | None) -> None:
    try:
        if splitter:
            lazy.load("verification.pipeline.segment").split_sentences("Loaded.")
        lazy.load("verification.clients.llm")
    except Exception:  # only a head start: the first submission imports them itself
        logger.exception("preloading failed")
    if then is not None and not _stopping.is_set():
        try:
            then()
        except Exception:  # the first task that needs it starts it
            logger.exception("preloading failed")
