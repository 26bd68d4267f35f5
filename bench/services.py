"""The benchmark's processes: Redis, PostgreSQL, the Celery workers (and whatever else the
deployment runs, such as `celery beat`), each the real command, started in its own process
group so that stopping it stops its children too (a worker's pool processes).

`Services` stops everything it started however the benchmark ends — a normal exit, an
exception, Ctrl-C (SIGINT), SIGTERM or SIGHUP: use it as a context manager; SIGTERM and SIGHUP
are turned into SystemExit so `finally` blocks run, and atexit is the last resort. Each started
process is announced on stderr ("bench: started NAME (pid N)") for whoever must check on it."""

import atexit
import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.processes import die_with_parent

STOP_TIMEOUT = 15


@dataclass
class Service:
    name: str
    process: subprocess.Popen
    stop_signal: int = signal.SIGTERM
    log: Path | None = None

    @property
    def pid(self) -> int:
        return self.process.pid


class Services:
    def __init__(self, prefix: str = "factsite-bench-") -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix=prefix))
        self.running: list[Service] = []
        self._on_stop: list[Callable[[], None]] = []
        self._stopped = False

    def __enter__(self) -> "Services":
        atexit.register(self.stop_all)
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _exit_on_signal)
        # Even when started with SIGINT ignored (a background job of a script): `kill -INT` stops it.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        return self

    def __exit__(self, *exc) -> None:
        self.stop_all()

    def start(
        self,
        name: str,
        command: list[str],
        *,
        env: dict | None = None,
        cwd: Path | None = None,
        log: Path | None = None,
        user: str | None = None,
        stop_signal: int = signal.SIGTERM,
        pipe: bool = False,
    ) -> Service:
        """`pipe`: talk to it over its stdin and stdout (its stderr still goes to `log`)."""
        output = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (the child keeps it)
        try:
            process = subprocess.Popen(
                command,
                env=env,
                cwd=cwd or self.workdir,
                stdin=subprocess.PIPE if pipe else subprocess.DEVNULL,
                stdout=subprocess.PIPE if pipe else output,
                stderr=output,
                text=pipe,
                start_new_session=True,  # its own process group: Ctrl-C reaches us, and we stop the group
                preexec_fn=die_with_parent,  # and if we are killed outright, it goes too
                user=user,
            )
        finally:
            if log:
                output.close()
        service = Service(name=name, process=process, stop_signal=stop_signal, log=log)
        self.running.append(service)
        say(f"started {name} (pid {process.pid})")
        return service

    def run(self, name: str, command: list[str], *, timeout: float = 120, **kwargs) -> None:
        """A short command (migrate, initdb) as a service, so that it is stopped too if we are."""
        service = self.start(name, command, **kwargs)
        try:
            code = service.process.wait(timeout)
        finally:
            self.stop(service)
        if code:
            tail = service.log.read_text()[-2000:] if service.log else ""
            raise RuntimeError(f"{name} exited with status {code}\n{tail}")

    def on_stop(self, callback: Callable[[], None]) -> None:
        self._on_stop.append(callback)

    def stop(self, *services: Service, timeout: float = STOP_TIMEOUT) -> None:
        """Signal each group, wait for its leader, then kill whatever of the group is left.
        Several at once are signalled together, so they shut down side by side."""
        for service in services:
            if service in self.running:
                self.running.remove(service)
            if service.process.poll() is None:
                _signal_group(service.pid, service.stop_signal)
        deadline = time.monotonic() + timeout
        for service in services:
            try:
                service.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(service.pid, signal.SIGKILL)
                service.process.wait(timeout)
            _signal_group(service.pid, signal.SIGKILL)
            for stream in (service.process.stdin, service.process.stdout):
                if stream:
                    stream.close()

    def stop_all(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        # A second Ctrl-C must not cut the cleanup short (it is bounded by STOP_TIMEOUT each).
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        with contextlib.suppress(Exception):
            self.stop(*reversed(self.running))
        for callback in reversed(self._on_stop):
            with contextlib.suppress(Exception):
                callback()
        shutil.rmtree(self.workdir, ignore_errors=True)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT else signal.default_int_handler)


_STARTED = time.monotonic()


def say(message: str) -> None:
    """Progress on stderr, with the seconds since the benchmark started."""
    print(f"bench [{time.monotonic() - _STARTED:6.1f} s] {message}", file=sys.stderr, flush=True)


def _exit_on_signal(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU of every live process in a process group (a worker and its pool)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:  # fields after "(comm)": state ppid pgrp … utime(11) stime(12)
                total += int(fields[11]) + int(fields[12])
    return total / ticks


def machine_cpu_seconds() -> float:
    """Busy CPU time of the whole machine (every process, ours or not) since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 60, service: Service | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if service is not None and service.process.poll() is not None:
            tail = service.log.read_text()[-2000:] if service.log else ""
            raise RuntimeError(f"{service.name} exited (status {service.process.returncode}) before {what}\n{tail}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def start_redis(services: Services, name: str = "redis-server") -> tuple[Service, str]:
    binary = shutil.which("redis-server")
    if not binary:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    command = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    service = services.start(name, command + ["--dir", str(services.workdir)], log=services.workdir / f"{name}.log")
    wait_for(lambda: _accepts(port), f"{name} on port {port}", service=service)
    return service, f"redis://127.0.0.1:{port}/0"


def postgres_binaries() -> Path | None:
    """The newest installed PostgreSQL's bin directory (Debian's layout), else one on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("postgres")
    return Path(on_path).parent if on_path and shutil.which("initdb") else None


def start_postgres(services: Services, bin_dir: Path) -> tuple[Service, str]:
    """A throwaway cluster in the work directory, on 127.0.0.1 only, with trust auth. The
    server runs as `postgres` directly (not through pg_ctl, which detaches it into a session
    of its own) so that it is our child and stops with us. As root, it runs as user postgres
    (initdb and postgres refuse to run as root)."""
    user = "postgres" if os.geteuid() == 0 else None
    data = Path(tempfile.mkdtemp(prefix="factsite-bench-pg-"))
    services.on_stop(lambda: shutil.rmtree(data, ignore_errors=True))
    if user:
        shutil.chown(data, user)
    cluster = data / "cluster"
    log = data / "postgres.log"
    initdb = [str(bin_dir / "initdb"), "-D", str(cluster), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"]
    services.run("initdb", initdb + ["--locale=C.UTF-8"], log=log, user=user, cwd=data)
    port = free_port()
    server = [str(bin_dir / "postgres"), "-D", str(cluster), "-p", str(port), "-c", "listen_addresses=127.0.0.1"]
    server += ["-c", "unix_socket_directories="]
    # SIGINT is PostgreSQL's fast shutdown: it ends the client connections (SIGTERM would wait for them).
    service = services.start("postgres", server, log=log, user=user, cwd=data, stop_signal=signal.SIGINT)
    wait_for(
        lambda: "ready to accept connections" in log.read_text(errors="replace"),
        "PostgreSQL to accept connections",
        service=service,
    )
    return service, f"postgres://postgres@127.0.0.1:{port}/postgres"


def postgres_version(bin_dir: Path) -> str:
    return subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True, text=True).stdout.strip()
