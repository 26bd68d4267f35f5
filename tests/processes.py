"""Real subprocesses of the app for a test (web servers, workers, beat, the CLI), each in its
own process group and killed when the test ends, and waits on conditions with timeouts."""

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
# How long a process a test starts may take to become ready (a web server answering, a worker
# beating, a CPU pool up) before the test gives up. Tests wait for the readiness itself, never a
# fixed time; this only bounds a process that never gets there. Generous: on a 2-core machine at
# load average 10-17 web servers took over 30 s to answer and CI went red.
READY_WITHIN_S = 120
_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """As `preexec_fn`: the child is killed when the process that started it dies, however it
    dies (a test run or benchmark stopped by SIGKILL runs no cleanup of its own)."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def as_from_a_terminal() -> None:
    """As `preexec_fn`: `die_with_parent`, and SIGINT at its default, as a terminal starts a
    command, whatever this process inherited: an ignored SIGINT survives exec (Popen's
    `restore_signals` restores only what Python itself ignores, SIGPIPE and SIGXFSZ), and a
    Python child would then never see its Ctrl-C."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_until(condition, timeout: float, what, interval: float = 0.2):
    """`what`: a text or a function giving one (the state to show when time is up)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what() if callable(what) else what}")
        time.sleep(interval)


class Processes:
    """The subprocesses of one test. Each gets its own process group (SIGKILL reaches its
    children too) and a log file, shown when a wait fails."""

    def __init__(self, env: dict, logs: Path, cwd: Path = ROOT) -> None:
        self.env, self.logs, self.cwd = env, logs, cwd
        self.running: list[subprocess.Popen] = []

    def start(self, name: str, *args: str, **env) -> subprocess.Popen:
        """This Python with `args`."""
        return self.start_command(name, [sys.executable, *args], **env)

    def start_command(self, name: str, command: list[str], **env) -> subprocess.Popen:
        env = {**self.env, **env}
        if not env.get("CACHE_URL") and not env.get("REDIS_URL"):
            # settings.py's cache would be the files of the checkout's var/cache, shared by every
            # test and the developer's own server: a cached answer from an earlier test meant the
            # call a later test waited for never came. With REDIS_URL the cache is that Redis,
            # the test's own (`broker`, flushed; or a redis-server of its own).
            env["CACHE_URL"] = "locmemcache://"
        log = (self.logs / f"{name}.log").open("ab")
        process = subprocess.Popen(
            command,
            cwd=self.cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=as_from_a_terminal,
        )
        log.close()
        self.running.append(process)
        return process

    def worker(self, name: str = "worker", loglevel: str = "WARNING", concurrency: int = 8, **env) -> subprocess.Popen:
        """A `celery worker`, returned once it beats (see `until_beating`)."""
        worker = self.start(
            name,
            *("-m", "celery", "-A", "factsite", "worker", "--pool=threads", f"--concurrency={concurrency}"),
            f"--hostname={name}@%h",
            *("--without-gossip", "--without-mingle", "--without-heartbeat", f"--loglevel={loglevel}"),
            **env,
        )
        self.until_beating(worker)
        return worker

    def beat(self, **env) -> subprocess.Popen:
        """`celery beat`, returned once it has started its scheduler (it says so at INFO)."""
        schedule = self.logs / "beat-schedule"
        beat = self.start(
            "beat", "-m", "celery", "-A", "factsite", "beat", "-s", str(schedule), "--loglevel=INFO", **env
        )

        def started() -> bool:
            return "beat: Starting..." in self.log("beat")

        wait_until(started, READY_WITHIN_S, lambda: f"beat started\n{self.tail()}")
        return beat

    def until_beating(self, process: subprocess.Popen) -> None:
        """A process that runs tasks is ready once it beats: verification.worker.heartbeat writes its
        WorkerProcess row (named host:pid:…) as soon as the app is loaded, before it takes tasks."""
        from verification.models import WorkerProcess  # this module is also used without Django

        mine = WorkerProcess.objects.filter(name__contains=f":{process.pid}:")
        wait_until(mine.exists, READY_WITHIN_S, lambda: f"process {process.pid} beating\n{self.tail()}")

    def gunicorn(self, port: int, **env) -> str:
        self.start("gunicorn", "-m", "gunicorn", "factsite.wsgi", "-b", f"127.0.0.1:{port}", "--threads", "4", **env)
        return self.until_serving(port)

    def runserver(self, port: int, name: str = "runserver", **env) -> str:
        self.start(name, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}", **env)
        return self.until_serving(port)

    def until_serving(self, port: int) -> str:
        url = f"http://127.0.0.1:{port}"

        def serving():
            try:
                return requests.get(url + "/about", timeout=5).status_code == 200
            except requests.RequestException:  # not listening yet, or still loading
                return False

        wait_until(serving, READY_WITHIN_S, lambda: f"a web server on {url}\n{self.tail()}")
        return url

    def kill(self, process: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):  # the group is gone already
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    def close(self) -> None:
        for process in self.running:
            self.kill(process)

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(
            f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
            for log in sorted(self.logs.glob("*.log"))
        )
