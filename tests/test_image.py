"""The image's own processes, started as a container would start them, without Docker (there is no
engine here): from the image's files (a clean checkout less .dockerignore, so nothing untracked
such as .env comes along), with the Dockerfile's ENV and each compose service's environment, command
line and healthcheck as Docker Compose's own parser reads them from docker-compose.yml; against a
PostgreSQL cluster and two redis-servers of this test on 127.0.0.1, the servers started with the
compose file's options and the database with its user and password.

What differs from the containers, and only that: service names and ports become 127.0.0.1 and free
ports; /tmp paths lie in the test's directory; the build's collectstatic runs, but not its export
of the embedding model (seconds of CPU), so the worker parses pages in its threads
(CPU_PROCESSES=0); and the processes run as this test's user, not the image's (the interpreter
here is not readable by another user), so the test checks instead that they write nothing where
the image's user could not: into the app's files."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import redis
import requests

from tests.conftest import free_port
from tests.deployment import (
    clean_checkout,
    compose_services,
    copy_build_context,
    dockerfile,
    image_command,
    image_environment,
)
from tests.processes import Processes, wait_until
from tests.test_lifecycle import process_tree, running

SECRETS = {"POSTGRES_PASSWORD": "image-test-1f2e3d4c", "DJANGO_SECRET_KEY": "image-test-" + "k" * 50}
CONTAINER_PORT = 8000
# Docker stops a container with SIGTERM and kills it after 10 s.
STOP_GRACE_S = 10
STARTED_WITHIN_S = 180  # a generous bound for a loaded 2-core machine; they usually take seconds


def pg_bindir() -> Path:
    found = shutil.which("initdb") or max(map(str, Path("/usr/lib/postgresql").glob("*/bin/initdb")), default=None)
    if not found:
        pytest.fail("PostgreSQL is not installed: apt-get install postgresql (bash scripts/test.sh does)")
    return Path(found).resolve().parent


def as_postgres(command: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root."""
    if os.geteuid() != 0:
        return command
    runuser = shutil.which("runuser", path=f"{os.environ['PATH']}:/usr/sbin:/sbin") or pytest.fail("runuser is missing")
    return [runuser, "-u", "postgres", "--", *command]


def snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(directory)): (p.stat().st_mtime_ns, p.stat().st_size) for p in directory.rglob("*")}


class Deployment:
    """The compose file's services as processes of this test."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.checkout = clean_checkout(base / "checkout")
        self.app = copy_build_context(self.checkout, base / "app")
        self.services = compose_services(self.checkout, **SECRETS)
        for name in ("logs", "tmp", "home", "redis", "cache", "pg"):
            (base / name).mkdir()
        self.processes = Processes({}, base / "logs", cwd=self.app)
        self.ports = {"postgres": free_port(), "redis": free_port(), "cache": free_port(), "web": free_port()}

    # --- what the containers would be given

    def rewrite(self, value: str) -> str:
        """A service's host name and port → 127.0.0.1 and this test's port; /tmp → the test's."""
        value = re.sub(
            r"(?<=[/@])(postgres|redis|cache):\d+", lambda m: f"127.0.0.1:{self.ports[m[1]]}", value
        ).replace(f"0.0.0.0:{CONTAINER_PORT}", f"127.0.0.1:{self.ports['web']}")
        value = value.replace(f"127.0.0.1:{CONTAINER_PORT}", f"127.0.0.1:{self.ports['web']}")
        return str(self.base / "tmp") + value[4:] if value.startswith("/tmp/") else value

    def environment(self, service: str) -> dict[str, str]:
        given = {**image_environment(self.checkout), **(self.services[service].get("environment") or {})}
        env = {name: self.rewrite(value) for name, value in given.items()}
        # The image's `python`, `celery` and `gunicorn` are the ones pip installed on PATH.
        env["PATH"] = f"{Path(sys.executable).parent}:/usr/bin:/bin"
        env["HOME"] = str(self.base / "home")
        env["CPU_PROCESSES"] = "0"
        return env

    def command(self, service: str) -> list[str]:
        return [self.rewrite(arg) for arg in self.services[service].get("command") or image_command(self.checkout)]

    def start(self, service: str) -> subprocess.Popen:
        return self.processes.start_command(service, self.command(service), **self.environment(service))

    def healthcheck(self, service: str) -> subprocess.CompletedProcess:
        kind, *command = self.services[service]["healthcheck"]["test"]
        assert kind == "CMD"
        return subprocess.run(
            [self.rewrite(arg) for arg in command],
            cwd=self.app,
            env=self.environment(service),
            capture_output=True,
            text=True,
            timeout=60,
        )

    def healthy(self, service: str) -> bool:
        return self.healthcheck(service).returncode == 0

    # --- the build

    def build(self) -> None:
        """The build's collectstatic (its own RUN line), as root would run it."""
        (run,) = [args for word, args in dockerfile(self.checkout) if word == "RUN" and "collectstatic" in args]
        env = {**image_environment(self.checkout), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
        subprocess.run(["sh", "-c", run], cwd=self.app, env=env, check=True, timeout=300)

    # --- the services the app needs

    def start_postgres(self) -> None:
        settings = self.services["postgres"]["environment"]
        data, bindir = self.base / "pg" / "data", pg_bindir()
        if os.geteuid() == 0:
            shutil.chown(self.base / "pg", "postgres")
        password_file = self.base / "pg" / "password"
        password_file.write_text(settings["POSTGRES_PASSWORD"])
        subprocess.run(
            as_postgres([str(bindir / "initdb"), "-D", str(data), "-U", settings["POSTGRES_USER"], "-E", "UTF8"])
            + ["--locale=C", "-N", "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={password_file}"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = ["-c", "listen_addresses=127.0.0.1", "-p", str(self.ports["postgres"]), "-k", str(self.base / "pg")]
        options += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        self.processes.start_command("postgres", as_postgres([str(bindir / "postgres"), "-D", str(data), *options]))
        ready = [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.ports["postgres"])]
        wait_until(lambda: subprocess.run(ready, capture_output=True).returncode == 0, 60, self.processes.tail)
        createdb = [str(bindir / "createdb"), "-h", str(self.base / "pg"), "-p", str(self.ports["postgres"])]
        subprocess.run(
            as_postgres([*createdb, "-U", settings["POSTGRES_USER"], settings["POSTGRES_DB"]]),
            check=True,
            timeout=60,
        )

    def close(self) -> None:
        """Every process ends. PostgreSQL first by its own stop, which also removes its shared memory."""
        data = self.base / "pg" / "data"
        if (data / "postmaster.pid").exists():
            stop = as_postgres([str(pg_bindir() / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
            subprocess.run(stop, capture_output=True, timeout=60)
        self.processes.close()

    def start_redis(self, service: str) -> subprocess.Popen:
        program, *options = self.services[service]["command"]
        assert program == "redis-server"
        command = [shutil.which("redis-server") or pytest.fail("redis-server is not installed"), *options]
        command += ["--bind", "127.0.0.1", "--port", str(self.ports[service]), "--dir", str(self.base / service)]
        process = self.processes.start_command(service, command)
        client = redis.Redis(port=self.ports[service])
        wait_until(lambda: _answers(client), 30, self.processes.tail, interval=0.05)
        return process

    def redis_config(self, service: str, name: str) -> str:
        return redis.Redis(port=self.ports[service], decode_responses=True).config_get(name)[name]


def _answers(client: redis.Redis) -> bool:
    try:
        return client.ping()
    except redis.ConnectionError:
        return False


@pytest.fixture
def deployment():
    # In /tmp, not pytest's private directory: the postgres user must reach its cluster.
    base = Path(tempfile.mkdtemp(prefix="factsite-image-", dir="/tmp"))
    base.chmod(0o755)
    deployment = Deployment(base)
    try:
        yield deployment
    finally:
        deployment.close()
        shutil.rmtree(base, ignore_errors=True)


def get(url: str) -> requests.Response:
    return requests.get(url, timeout=30)


def test_the_images_processes_start_after_one_migrate_report_their_health_and_all_end_on_sigterm(deployment):
    deployment.start_postgres()
    broker = deployment.start_redis("redis")
    deployment.start_redis("cache")
    deployment.build()
    built = snapshot(deployment.app)

    # The one-shot migrate: it applies everything; run again (every `up`), it has nothing to do.
    for _ in range(2):
        migrate = deployment.start("migrate")
        assert migrate.wait(STARTED_WITHIN_S) == 0, deployment.processes.tail()
    assert "No migrations to apply." in deployment.processes.log("migrate")
    assert not deployment.healthy("worker") and not deployment.healthy("beat")  # nothing is running yet

    apps = {service: deployment.start(service) for service in ("web", "worker", "beat")}
    for service in apps:
        wait_until(lambda s=service: deployment.healthy(s), STARTED_WITHIN_S, deployment.processes.tail)
    web = f"http://127.0.0.1:{deployment.ports['web']}"
    healthz = wait_until(lambda: (r := get(f"{web}/healthz")).status_code == 200 and r, 60, deployment.processes.tail)
    readyz = get(f"{web}/readyz")
    assert healthz.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok", "cache": "ok"}}
    assert readyz.status_code == 200 and readyz.json()["checks"] == {"migrations": "ok"}
    assert deployment.redis_config("cache", "maxmemory-policy") == "allkeys-lru"
    assert int(deployment.redis_config("cache", "maxmemory")) > 0
    assert deployment.redis_config("redis", "maxmemory-policy") == "noeviction"

    # The broker goes away: /healthz says so (the cache, a server of its own, still answers).
    deployment.processes.kill(broker)
    down = get(f"{web}/healthz")
    assert down.status_code == 503
    assert down.json() == {
        "status": "down",
        "checks": {"database": "ok", "broker": "down", "cache": "ok"},
        "down": ["broker"],
    }
    check = deployment.healthcheck("web")
    assert check.returncode == 1 and '"down": ["broker"]' in check.stderr
    deployment.start_redis("redis")
    wait_until(lambda: get(f"{web}/healthz").status_code == 200, 30, deployment.processes.tail)

    # `docker stop`: SIGTERM, and every process each one started ends within the grace period.
    trees = {service: process_tree(process.pid) for service, process in apps.items()}
    assert all(len(tree) >= 1 for tree in trees.values())
    for process in apps.values():
        os.kill(process.pid, signal.SIGTERM)
    for service, tree in trees.items():
        wait_until(lambda t=tree: not running(t), STOP_GRACE_S, lambda s=service: f"{s}: {running(trees[s])}")
    assert {service: process.wait(5) for service, process in apps.items()} == {"web": 0, "worker": 0, "beat": 0}
    # Nothing was written where the image's user cannot write.
    assert snapshot(deployment.app) == built


def test_the_image_serves_with_gunicorn_on_the_container_port_and_checks_its_health():
    command = image_command()
    assert command[0] == "gunicorn" and f"0.0.0.0:{CONTAINER_PORT}" in command
    (healthcheck,) = [args for word, args in dockerfile() if word == "HEALTHCHECK"]
    assert json.loads(healthcheck.split(" CMD ", 1)[1]) == ["python", "-m", "verification.health", "web"]
