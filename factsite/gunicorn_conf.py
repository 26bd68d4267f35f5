"""gunicorn's settings for `scripts/run.sh` (`gunicorn -c python:factsite.gunicorn_conf`).

One process, many threads: without REDIS_URL the runs execute on the embedded Celery worker of
the process that created them (factsite.celery), so a second process would only be a second
server with its own runs and its own CPU pool. gunicorn, unlike runserver, keeps a deep listen
queue and a thread pool, so a burst of submissions waits for a thread instead of being reset
(runserver reset 25 of 70 simultaneous submissions; tests/test_lifecycle.py).

Stopping: gunicorn handles SIGTERM, SIGINT and SIGQUIT in its worker itself, so lifecycle's
handlers stay out (see lifecycle.install_stop_handlers); the handlers below call
lifecycle.stopping() the moment one arrives, before gunicorn's, which ends the CPU pool and the
worker process within lifecycle.GRACE_S, whatever its runs are waiting for."""

import os
import signal

workers = 1
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS") or 8)
# The master's own bound on a stopping worker, a little past the worker's (lifecycle.GRACE_S).
graceful_timeout = 7
# A worker silent this long is killed and replaced, with its runs: on a loaded machine a worker
# starting its CPU pool can miss gunicorn's 30 s default without being stuck.
timeout = 120
# One line per request on the terminal, as runserver printed.
accesslog = "-"


def post_worker_init(worker) -> None:
    # gunicorn's SIGTERM only stops accepting and waits for the requests in flight; the runs in
    # flight (LLM calls, pages) would then hold the interpreter's exit. Its SIGINT/SIGQUIT first
    # shuts its thread pool down, which takes the pool's lock: when the signal lands while the
    # worker's main thread holds that lock (handing a connection to the pool), the handler waits
    # forever, and the master killed the worker only after graceful_timeout (seen with 70 runs in
    # flight). So lifecycle.stopping() comes first, whose deadline ends the process regardless.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        _stopping_first(signum)
    signal.siginterrupt(signal.SIGTERM, False)  # as gunicorn had it: requests are not interrupted


def _stopping_first(signum: int) -> None:
    gunicorns = signal.getsignal(signum)

    def handler(signum, frame) -> None:
        _stopping()
        gunicorns(signum, frame)

    signal.signal(signum, handler)


def worker_exit(server, worker) -> None:
    # Also called in the master when it reaps a worker: only the worker itself stops here.
    if worker.pid == os.getpid():
        _stopping()


def _stopping() -> None:
    from verification.worker import lifecycle

    lifecycle.stopping()
