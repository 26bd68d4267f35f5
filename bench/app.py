"""The app under test, as the benchmark runs it: its processes (`app_processes`, the one place
their command lines are written), restarted for every cold measurement, and the measuring
client (bench/measure.py, a Django process like the web process) that submits the runs."""

import json
import re
import selectors
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.services import Service, Services, group_cpu_seconds, say

ROOT = Path(__file__).resolve().parent.parent
# Celery's log line for a worker that takes tasks: "[2025-01-31 12:00:00,123: INFO/MainProcess] bench0@host ready."
_READY = re.compile(r"^\[(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(?P<ms>\d{3}): [^\]]*\] \S+ ready\.$", re.MULTILINE)


@dataclass
class AppProcess:
    name: str
    command: list[str]
    log: Path  # its stdout and stderr
    task_log: Path | None = None  # a worker's Celery log: it says "ready", and how long each task took


def app_processes(args, log_dir: Path, tag: str) -> list[AppProcess]:
    """The app's processes, started as a deployment starts them (see docker-compose.yml): the
    `celery worker` processes, then the --extra-command ones (e.g. `celery beat`). Edit here
    when the deployment's process list changes."""
    processes = []
    for n in range(args.workers):
        task_log = log_dir / f"{tag}-worker{n}.log"
        command = [sys.executable, "-m", "celery", "-A", "factsite", "worker", "--pool=threads"]
        command += [f"--concurrency={args.concurrency}", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        command += ["-n", f"bench{n}@%h", "--loglevel=INFO", f"--logfile={task_log}"]
        processes.append(AppProcess(f"celery worker {n}", command, log_dir / f"{tag}-worker{n}.out", task_log))
    for n, line in enumerate(args.extra_command):
        words = shlex.split(line)
        if words[0] == "celery":  # this Python's Celery, as for the workers
            words = [sys.executable, "-m", "celery", *words[1:]]
        processes.append(AppProcess(f"{' '.join(shlex.split(line)[:2])} ({n})", words, log_dir / f"{tag}-extra{n}.log"))
    return processes


class App:
    """The app's processes for one database and page set."""

    def __init__(self, args, services: Services, env: dict, tag: str) -> None:
        self.args, self.services, self.env, self.tag = args, services, env, tag
        self.log_dir = Path(args.logs) if args.logs else services.workdir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.started: list[tuple[AppProcess, Service]] = []
        self.generation = 0
        self.started_at = 0.0

    def restart(self) -> None:
        """Fresh processes, started and not waited for: a cold measurement submits its runs at
        once, as a user may right after a deployment, so their start-up is in its time."""
        self.stop()
        self.generation += 1
        self.started_at = time.time()
        for process in app_processes(self.args, self.log_dir, f"{self.tag}-{self.generation}"):
            service = self.services.start(process.name, process.command, env=self.env, cwd=ROOT, log=process.log)
            self.started.append((process, service))
        say("the app's processes are started")

    def ready_s(self) -> float | None:
        """Seconds from their start until the last worker logged that it is ready for tasks
        (read after the fact from the Celery logs); None if one has not yet."""
        ready = []
        for log in self.task_logs:
            text = log.read_text(errors="replace") if log.exists() else ""
            match = _READY.search(text)
            if not match:
                return None
            at = time.mktime(time.strptime(match["at"], "%Y-%m-%d %H:%M:%S")) + int(match["ms"]) / 1000
            ready.append(at - self.started_at)
        return round(max(ready), 1) if ready else None

    def check(self) -> None:
        """Raise if one of the app's processes has exited (with the end of its log)."""
        for process, service in self.started:
            if service.process.poll() is not None:
                tail = process.log.read_text(errors="replace")[-2000:] if process.log.exists() else ""
                raise RuntimeError(f"{process.name} exited (status {service.process.returncode})\n{tail}")

    def stop(self) -> None:
        self.services.stop(*(service for _, service in self.started))
        self.started = []

    @property
    def task_logs(self) -> list[Path]:
        return [p.task_log for p, _ in self.started if p.task_log]

    def cpu_seconds(self) -> float:
        return sum(group_cpu_seconds(service.pid) for _, service in self.started)


class Measurer:
    """bench/measure.py for one database: it migrates it, then measures on request."""

    def __init__(self, services: Services, env: dict, log: Path) -> None:
        command = [sys.executable, "-m", "bench.measure"]
        self.service = services.start("measure", command, env=env, cwd=ROOT, log=log, pipe=True)
        self.log = log
        self._read(timeout=600)  # {"ready": true}, after migrating

    def measure(self, request: dict, timeout: float) -> dict:
        self.service.process.stdin.write(json.dumps(request) + "\n")
        self.service.process.stdin.flush()
        return self._read(timeout)

    def _read(self, timeout: float) -> dict:
        stdout = self.service.process.stdout
        deadline = time.monotonic() + timeout
        while not _readable(stdout, 1.0):
            if self.service.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"bench.measure stopped answering; its log ends:\n{self.log.read_text()[-3000:]}")
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"bench.measure exited; its log ends:\n{self.log.read_text()[-3000:]}")
        return json.loads(line)

    def cpu_seconds(self) -> float:
        return group_cpu_seconds(self.service.pid)


def _readable(stream, timeout: float) -> bool:
    """selectors, not select.select: a caller may hold over 1,024 descriptors."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        return bool(selector.select(timeout))
