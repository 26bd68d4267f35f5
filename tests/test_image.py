"""The image's own processes, started as a container would start them, without Docker (there is no
engine here): from the image's files (a clean checkout less .dockerignore, so nothing untracked
such as .env comes along), with the Dockerfile's ENV and each compose service's environment (a .env made from
.env.example included, as README has deployers do), command line and healthcheck as Docker
Compose's own parser reads them from docker-compose.yml; against a
PostgreSQL cluster and two redis-servers of this test on 127.0.0.1, the servers started with the
compose file's options and the database with its user and password.

What differs from the containers, and only that: service names and ports become 127.0.0.1 and free
ports; the image's /app and /tmp are the test's directories; of the build, only the app's own
steps run (the embedding model's export, which finds the export this checkout built when there is
one, and collectstatic); the worker loads the model in its own threads (CPU_PROCESSES=0: no pool
of processes on a shared 2-core machine); and the processes run as this test's user, not the
image's (the interpreter here is not readable by another user), so the test checks instead that
they write nothing where the image's user could not: into the app's files."""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
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
from tests.processes import ROOT, Processes, wait_until
from tests.test_lifecycle import process_tree, running
from verification.clients import embeddings

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


def readable_by_others(path: Path) -> bool:
    mode = path.stat().st_mode
    return bool(mode & stat.S_IROTH) and (not path.is_dir() or bool(mode & stat.S_IXOTH))


def snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(directory)): (p.stat().st_mtime_ns, p.stat().st_size) for p in directory.rglob("*")}


class Deployment:
    """The compose file's services as processes of this test."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.checkout = clean_checkout(base / "checkout")
        # The deployer's .env, as README says: .env.example with the secrets filled in. Compose hands
        # its lines to the containers; the image's files never hold it.
        dot_env = (self.checkout / ".env.example").read_text()
        for name, value in SECRETS.items():
            dot_env = re.sub(rf"^{name}=$", f"{name}={value}", dot_env, flags=re.MULTILINE)
        (self.checkout / ".env").write_text(dot_env)
        self.app = copy_build_context(self.checkout, base / "app")
        assert not (self.app / ".env").exists()
        self.services = compose_services(self.checkout)
        for name in ("logs", "tmp", "home", "redis", "cache", "pg"):
            (base / name).mkdir()
        self.processes = Processes({}, base / "logs", cwd=self.app)
        (self.workdir,) = [args for word, args in dockerfile(self.checkout) if word == "WORKDIR"]
        self.ports = {"postgres": free_port(), "redis": free_port(), "cache": free_port(), "web": free_port()}

    # --- what the containers would be given

    def rewrite(self, value: str) -> str:
        """A service's host name and port → 127.0.0.1 and this test's port; the image's /app and
        /tmp → the test's."""
        value = re.sub(
            r"(?<=[/@])(postgres|redis|cache):\d+", lambda m: f"127.0.0.1:{self.ports[m[1]]}", value
        ).replace(f"0.0.0.0:{CONTAINER_PORT}", f"127.0.0.1:{self.ports['web']}")
        value = value.replace(f"127.0.0.1:{CONTAINER_PORT}", f"127.0.0.1:{self.ports['web']}")
        for inside, here in ((self.workdir, self.app), ("/tmp", self.base / "tmp")):
            if value == inside or value.startswith(inside + "/"):
                return str(here) + value[len(inside) :]
        return value

    def environment(self, service: str) -> dict[str, str]:
        given = {**image_environment(self.checkout), **(self.services[service].get("environment") or {})}
        env = {name: self.rewrite(value) for name, value in given.items()}
        outside = {name: v for name, v in env.items() if v.startswith("/") and self.base not in Path(v).parents}
        assert not outside, f"paths this test would use outside its directory: {outside}"
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
        """The build's steps of the app's own, as root runs them: the RUN lines after the sources
        are copied that run Python (the embedding model's export, collectstatic; not useradd).
        An export this checkout built already (scripts/setup.sh) is copied in first, as a build
        cache would be: the step then finds it, and the CPU of a new export is spared."""
        env = {name: self.rewrite(value) for name, value in image_environment(self.checkout).items()}
        key = embeddings._cache_key(env["EMBEDDING_MODEL"], env["EMBEDDING_BACKEND"])
        if (ROOT / "var" / "models" / key / embeddings.SPEC_FILE).exists():
            shutil.copytree(ROOT / "var" / "models" / key, Path(env["EMBEDDING_CACHE_DIR"]) / key)
        instructions = dockerfile(self.checkout)
        sources_copied = max(i for i, (word, args) in enumerate(instructions) if (word, args) == ("COPY", ". ."))
        steps = [args for word, args in instructions[sources_copied:] if word == "RUN" and "python" in args]
        assert any("verification.clients.embeddings" in step for step in steps)
        env["PATH"] = f"{Path(sys.executable).parent}:/usr/bin:/bin"
        for number, step in enumerate(steps):
            self.run(f"build-{number}", ["sh", "-c", step], 900, **env)

    def run(self, name: str, command: list[str], timeout: float, **env: str) -> None:
        """A command to its end, in a process group of its own (ended with the rest if it hangs)."""
        process = self.processes.start_command(name, command, **env)
        assert process.wait(timeout) == 0, self.processes.tail()

    # --- the services the app needs

    def start_postgres(self) -> None:
        settings = self.services["postgres"]["environment"]
        data, bindir = self.base / "pg" / "data", pg_bindir()
        if os.geteuid() == 0:
            shutil.chown(self.base / "pg", "postgres")
        password_file = self.base / "pg" / "password"
        password_file.write_text(settings["POSTGRES_PASSWORD"])
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", settings["POSTGRES_USER"], "-E", "UTF8", "--locale=C"]
        initdb += ["-N", "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={password_file}"]
        self.run("initdb", as_postgres(initdb), 120)
        options = ["-c", "listen_addresses=127.0.0.1", "-p", str(self.ports["postgres"]), "-k", str(self.base / "pg")]
        options += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        self.processes.start_command("postgres", as_postgres([str(bindir / "postgres"), "-D", str(data), *options]))
        ready = [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.ports["postgres"])]
        wait_until(lambda: subprocess.run(ready, capture_output=True).returncode == 0, 60, self.processes.tail)
        createdb = [str(bindir / "createdb"), "-h", str(self.base / "pg"), "-p", str(self.ports["postgres"])]
        self.run("createdb", as_postgres([*createdb, "-U", settings["POSTGRES_USER"], settings["POSTGRES_DB"]]), 60)

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

    def worker_warm(self) -> bool:
        with psycopg.connect(self.environment("worker")["DATABASE_URL"]) as connection:
            row = connection.execute("SELECT count(*) FROM verification_workerprocess WHERE warm_at IS NOT NULL")
            return row.fetchone()[0] > 0

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
    # The image's user owns none of it: "others" must be able to read every file the build left.
    unreadable = [name for name in built if not readable_by_others(deployment.app / name)]
    assert not unreadable
    assert any(name.endswith(embeddings.SPEC_FILE) for name in built)  # the model's export is there

    # The one-shot migrate: it applies everything; run again (every `up`), it has nothing to do.
    for _ in range(2):
        migrate = deployment.start("migrate")
        assert migrate.wait(STARTED_WITHIN_S) == 0, deployment.processes.tail()
    assert "No migrations to apply." in deployment.processes.log("migrate")
    assert not deployment.healthy("worker") and not deployment.healthy("beat")  # nothing is running yet

    apps = {service: deployment.start(service) for service in ("web", "worker", "beat")}
    for service in apps:
        wait_until(lambda s=service: deployment.healthy(s), STARTED_WITHIN_S, deployment.processes.tail)
    # The worker loaded the embedding model from the export the build made (and built none: below).
    wait_until(deployment.worker_warm, STARTED_WITHIN_S, deployment.processes.tail)
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
    assert json.loads(healthcheck.split(" CMD ", 1)[1]) == ["python", "-m", "verification.worker.health", "web"]
