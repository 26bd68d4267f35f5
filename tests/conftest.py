"""Shared fixtures: a real redis-server, a real Celery worker consuming from it, and the fake
outside world (tests/fakes.py) on 127.0.0.1, wired into settings."""

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from django.db import connection
from django.test.utils import override_settings

from factsite.celery import app as celery_app
from tests.fakes import FakeLLM, FakePage, FakeSerper, FakeSite, sample_sites
from tests.processes import Processes
from verification.worker import heartbeat

MODEL = "fake-model"

# Tests touch nothing but 127.0.0.1: the Hugging Face hub is never asked. A model that is not on
# this machine (the multilingual re-scorer's, EMBEDDING_MODEL_MULTILINGUAL) then fails to load at
# once, and its pages are ranked by BM25, as without internet. Set here, before any test starts a
# process, so that the workers and CLIs the tests start inherit it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Started in the background by a script (some CI runners start jobs so), a test run inherits
# SIGINT ignored, Python keeps it ignored, and so would every process the tests start: the tests
# that stop a server or the CLI with Ctrl-C then failed every time. This run takes the handler
# Python gives a process started from a terminal (its children start with SIGINT at its default).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def configured(settings):
    """Settings a run can start with, every service on a closed port of 127.0.0.1: for requests
    that must be refused (or only stored) before anything is called (starting `world` costs
    seconds)."""
    closed = f"http://127.0.0.1:{free_port()}"
    settings.OPENAI_API_KEY = "test-openai-key"
    settings.OPENAI_BASE_URL = closed + "/v1"
    settings.LLM_MODELS = MODEL
    settings.SERPER_API_KEY = "test-serper-key"
    settings.SERPER_BASE_URL = closed
    settings.CELERY_EMBEDDED_WORKER = False
    return settings


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: run `apt-get install redis-server` (bash scripts/test.sh does)")
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield url
    process.terminate()
    process.wait(10)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """pytest-django's test database, and before it is dropped, this process's heartbeat stopped:
    started by the in-process worker (worker_init) or a task run here (heartbeat.hold), it beat
    on after the database was gone, a "heartbeat failed" in CI's log every beat."""
    yield
    heartbeat.stop()


@pytest.fixture(scope="session")
def celery_worker(redis_url, django_db_setup, django_db_blocker):
    """A real Celery worker (thread pool) in this process, consuming from the real Redis."""
    celery_app.conf.broker_url = redis_url
    celery_app.conf.broker_transport_options = {}
    with (
        django_db_blocker.unblock(),
        start_worker(
            celery_app, pool="threads", concurrency=8, perform_ping_check=False, shutdown_timeout=10
        ) as worker,
    ):
        yield worker


@pytest.fixture(autouse=True)
def search_serper_only(settings):
    """Serper alone unless a test says otherwise: the default list goes on to Wikipedia, which
    is on the internet, when Serper fails or has no key."""
    settings.SEARCH_PROVIDERS = ["serper"]


def pytest_configure(config):
    # Outside a test's own cache (isolated_cache): session fixtures, and tasks of the in-process
    # worker that end after their test. Never the checkout's var/cache (settings.py's default),
    # which would keep what a test cached for later tests and the developer's own server.
    override_settings(CACHES=_in_memory_cache()).enable()


def _in_memory_cache() -> dict:
    return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": uuid.uuid4().hex}}


@pytest.fixture(autouse=True)
def isolated_cache(settings):
    """A fresh in-memory cache per test: cached answers must not leak between tests."""
    settings.CACHES = _in_memory_cache()


@pytest.fixture
def world(settings):
    """The fake outside world, started, with settings pointing at it."""
    sites = [site.start() for site in sample_sites()]
    serper = FakeSerper(sites=sites).start()
    llm = FakeLLM().start()
    settings.OPENAI_API_KEY = "test-openai-key"
    settings.OPENAI_BASE_URL = llm.url + "/v1"
    settings.LLM_MODELS = MODEL
    settings.LLM_MAX_RETRIES = 1
    settings.SERPER_API_KEY = serper.api_key
    settings.SERPER_BASE_URL = serper.url
    settings.ALLOW_PRIVATE_FETCH = True
    settings.CELERY_EMBEDDED_WORKER = False
    world = _World(llm=llm, serper=serper, sites=sites)
    yield world
    for server in (world.llm, serper, *sites):
        server.stop()
    _close_model_clients()


def _close_model_clients() -> None:
    """The model clients of this test's servers (one per server and process, kept for their
    connection pools), closed with them: their connections would otherwise stay open."""
    from verification.clients import llm

    llm.close_clients()


def world_environment(world) -> dict[str, str]:
    """What points a subprocess of the app (CLI, worker, web server) at the fake outside world."""
    return {
        "OPENAI_API_KEY": "test-openai-key",
        "OPENAI_BASE_URL": world.llm.url + "/v1",
        "LLM_MODELS": MODEL,
        "SERPER_API_KEY": world.serper.api_key,
        "SERPER_BASE_URL": world.serper.url,
        # Never on to Wikipedia (the internet) when Serper fails.
        "SEARCH_PROVIDERS": "serper",
        "ALLOW_PRIVATE_FETCH": "1",
    }


class _World:
    def __init__(self, llm: FakeLLM, serper: FakeSerper, sites: list[FakeSite]) -> None:
        self.llm, self.serper, self.sites = llm, serper, sites


ROOT = Path(__file__).resolve().parent.parent


# --- real processes of the app (tests/processes.py) on this test's database


@pytest.fixture
def shared_database(transactional_db) -> str:
    """This test's database as a DATABASE_URL (SQLite or PostgreSQL, as the test run has it):
    committed writes, so the subprocesses see them (and it is flushed after the test, once they
    are dead)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    password = quote(db["PASSWORD"] or "", safe="")
    return f"postgres://{db['USER']}:{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


@pytest.fixture
def processes(world, shared_database, tmp_path):
    world.llm.latency, world.serper.latency = 0.2, 0.1
    for site in world.sites:
        site.latency = 0.1
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONUNBUFFERED": "1",
        "DATABASE_URL": shared_database,
        "DJANGO_SECRET_KEY": "recovery-test",
        **world_environment(world),
        "LOG_LEVEL": "WARNING",
        "RUNS_PER_HOUR": "0",
        # Pages parsed in the workers' threads: a CPU pool loads the embedding model in each of its
        # processes when a worker starts, seconds of CPU per start on two cores. Test 1 keeps one.
        "CPU_PROCESSES": "0",
        # Sentence by sentence: the tests hold one sentence's LLM calls (held_words) to keep runs
        # mid-flight, and decomposed together every sentence would wait on that call.
        "DECOMPOSE_CHUNK_SENTENCES": "1",
    }
    running = Processes(env, logs)
    yield running
    running.close()


@pytest.fixture
def broker(redis_url):
    """A Redis database of its own on the session's redis-server (the in-process test worker
    consumes database 0), emptied before and after: queue, unacked messages and cache."""
    url = redis_url.rsplit("/", 1)[0] + "/7"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()


@pytest.fixture
def cited_site():
    """The pages an AI answer of the citation tests cites (issue 34), which no web search finds."""
    site = FakeSite(
        pages={
            "/minutes": FakePage(
                "Riverton council minutes",
                "The council of Riverton approved a tram line in 2024 after a long debate.",
                searchable=False,
            ),
            "/cost": FakePage(
                "City paper: tram budget",
                "The Riverton tram line will not cost 40 million dollars; the budget is far higher.",
                searchable=False,
            ),
            "/parks": FakePage(
                "City paper: parks",
                "The parks department planted two hundred oak trees along the boulevard last spring.",
                searchable=False,
            ),
        }
    ).start()
    yield site
    site.stop()
