"""Crash recovery, against real processes: `celery worker` and `celery beat` processes on a real
redis-server, the web app as a real server process (gunicorn, or runserver with the embedded
worker), all on this test's database, and the fake outside world with latency, so that runs are
mid-flight when something is killed. Then the joins themselves: concurrent runs racing to
finish, the exact interleavings built step by step, and the sweeper on rows rewound by hand.

Every subprocess runs in its own process group and is SIGKILLed when its test ends. Waits are
on conditions with timeouts; the only fixed wait is the length of the Redis outage."""

import logging
import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
import redis
import requests
from django.core.cache import cache
from django.utils import timezone

from factsite.celery import app as celery_app
from tests.conftest import MODEL, ROOT, free_port
from tests.processes import READY_WITHIN_S, wait_until
from verification import selectors, services, tasks
from verification.clients import providers
from verification.models import (
    Claim,
    ClaimStatus,
    Evidence,
    HostCategory,
    SearchResult,
    Sentence,
    Source,
    Status,
    Verification,
    WorkerProcess,
)
from verification.pipeline.types import ClaimDraft
from verification.worker import base, categorize, heartbeat

TEXT = "The Eiffel Tower is in Paris, France. It was completed in 1889. It is made of steel.\n\nI hope this helps!"
ONE_SENTENCE = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
# The sentence whose LLM calls the fake model holds until the test releases them: no run can
# finish before, so a strike lands mid-run, after other sentences' evidence was judged.
SLOW = "1889"
UNFINISHED = (Status.PENDING, Status.RUNNING)
CLAIM_ENDS = (ClaimStatus.DONE, ClaimStatus.FAILED)


# --- the database, read by this process while the subprocesses write it


def run_states(ids) -> dict[str, str]:
    return {str(pk): status for pk, status in Verification.objects.filter(pk__in=ids).values_list("pk", "status")}


def all_ended(ids) -> bool:
    states = run_states(ids)
    return len(states) == len(ids) and all(s in (Status.DONE, Status.FAILED) for s in states.values())


def judged(ids) -> int:
    return Evidence.objects.filter(claim__sentence__verification_id__in=ids, status=Status.DONE).count()


def snapshot(ids) -> str:
    """Every item of these runs by status, for failure messages."""
    tables = {
        "runs": Verification.objects.filter(pk__in=ids),
        "sentences": Sentence.objects.filter(verification_id__in=ids),
        "claims": Claim.objects.filter(sentence__verification_id__in=ids),
        "sources": Source.objects.filter(verification_id__in=ids),
        "results": SearchResult.objects.filter(claim__sentence__verification_id__in=ids),
        "evidence": Evidence.objects.filter(claim__sentence__verification_id__in=ids),
    }
    return (
        "; ".join(f"{name}: {dict(Counter(rows.values_list('status', flat=True)))}" for name, rows in tables.items())
        + f"; untyped sources: {Source.objects.filter(verification_id__in=ids, source_type='').count()}"
        + f"; run errors: {sorted(set(Verification.objects.filter(pk__in=ids).values_list('error', flat=True)))}"
    )


def stranded(ids) -> dict[str, int]:
    """Items of these runs that are not finished (none may be, once the runs ended)."""
    counts = {
        "sentences": Sentence.objects.filter(verification_id__in=ids, status__in=UNFINISHED).count(),
        "claims": Claim.objects.filter(sentence__verification_id__in=ids).exclude(status__in=CLAIM_ENDS).count(),
        "sources": Source.objects.filter(verification_id__in=ids, status__in=UNFINISHED).count(),
        "untyped sources": Source.objects.filter(verification_id__in=ids, source_type="").count(),
        "search results": SearchResult.objects.filter(
            claim__sentence__verification_id__in=ids, status__in=UNFINISHED
        ).count(),
        "evidence": Evidence.objects.filter(claim__sentence__verification_id__in=ids, status__in=UNFINISHED).count(),
    }
    return {item: n for item, n in counts.items() if n}


def assert_ended_with_reasons(ids) -> None:
    """Every run done, or failed with its reason; nothing left pending or running; every failed
    item says why."""
    for run in Verification.objects.filter(pk__in=ids):
        assert run.status == Status.DONE or (run.status == Status.FAILED and run.error), (run.pk, run.status)
        assert run.finished_at is not None
    assert stranded(ids) == {}
    failed = [
        *Sentence.objects.filter(verification_id__in=ids, status=Status.FAILED).values_list("error", flat=True),
        *Claim.objects.filter(sentence__verification_id__in=ids, status=ClaimStatus.FAILED).values_list(
            "error", flat=True
        ),
        *Source.objects.filter(verification_id__in=ids, status=Status.FAILED).values_list("error", flat=True),
        *Evidence.objects.filter(claim__sentence__verification_id__in=ids, status=Status.FAILED).values_list(
            "error", flat=True
        ),
    ]
    assert all(failed), "a failed item without a reason"


# The owner token every run here is started with: a retry is its creator's.
OWNER = {"X-Client-Token": "recovery-tests-owner-token"}


def submit(base: str, text: str = TEXT, **run_settings) -> str:
    response = requests.post(
        f"{base}/api/verifications",
        json={"text": text, "settings": {"retrieval_mode": "sparse", **run_settings}},
        headers=OWNER,
        timeout=30,
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


# --- 1. a worker killed mid-run


# With the default RUN_STALLED_AFTER (30 s) and SWEEP_INTERVAL (10 s): the new worker, started
# on the killed one's machine, sends what that one had taken and resumes the runs it owned as
# soon as it is ready (issue 38), neither after the missed beats nor when a run went silent for
# RUN_STALLED_AFTER (the runs ended 13-42 s after it was ready before, 6 s now).
def test_runs_finish_after_their_worker_is_killed_mid_run_and_another_starts(world, processes, broker):
    world.llm.held_words = (SLOW,)
    with_pool = {"REDIS_URL": broker, "CPU_PROCESSES": "1"}  # the pool's process dies with its worker
    web = processes.gunicorn(free_port(), REDIS_URL=broker)
    worker = processes.worker(**with_pool)
    processes.beat(REDIS_URL=broker)
    ids = [submit(web) for _ in range(5)]
    wait_until(
        lambda: world.llm.held == 5 and judged(ids) >= 3,
        READY_WITHIN_S,
        lambda: f"held {world.llm.held}, judged: {snapshot(ids)}\n{processes.tail()}",
    )
    assert not any(s in (Status.DONE, Status.FAILED) for s in run_states(ids).values())

    processes.kill(worker)
    killed = time.monotonic()
    world.llm.release()
    processes.worker("worker2", loglevel="INFO", **with_pool)
    wait_until(
        lambda: " ready." in processes.log("worker2"), READY_WITHIN_S, lambda: f"worker2 ready\n{processes.tail()}"
    )
    ready = time.monotonic()
    wait_until(lambda: all_ended(ids), 30, lambda: f"every run ended: {snapshot(ids)}\n{processes.tail()}")

    now = time.monotonic()
    print(f"all runs ended {now - killed:.1f} s after the kill, {now - ready:.1f} s after the new worker was ready")
    assert_ended_with_reasons(ids)
    runs = Verification.objects.filter(pk__in=ids)
    assert {run.status for run in runs} == {Status.DONE}
    # The killed worker's tasks came back through the sweeper: sent again as soon as it was known
    # gone (issue 27.2), or, for a run it alone held, by resuming the run.
    sent_again = "had taken when it stopped beating" in processes.log("worker2")
    assert sent_again or all(run.resumes >= 1 for run in runs)
    for verification_id in ids:
        result = requests.get(f"{web}/api/verifications/{verification_id}", timeout=10).json()
        assert [s["status"] for s in result["sentences"]] == ["done"] * 4
        assert [p["step"] for p in result["problems"]] == ["fetch"]  # the sample world's 403 page


# The backlog's runs: one sentence each, none the same (the cache would answer a repeated one).
BACKLOG = [
    "The Eiffel Tower is 330 metres tall.",
    "The Eiffel Tower is made of steel.",
    "Gustave Eiffel's company designed and built the tower.",
    "Visitors climbed the Eiffel Tower in record numbers this year.",
    "The Eiffel Tower is in Paris, France.",
]


def test_a_task_lost_with_its_worker_is_sent_again_at_once_ahead_of_the_backlog(world, processes, broker):
    """Issue 38 (recovery): a worker killed while it ran a run's only task, with other runs
    queued behind. The lost task used to be sent again by a sweep that waited behind the backlog
    (and for the dead worker's beats to be missed), to the back of the queue: its run ended after
    all the others. The worker started again sends it at once, ahead of the backlog: it is the
    first step the new worker takes, and its run ends before the backlog's last."""
    world.llm.held_words = (SLOW,)
    # One task at a time: the held task keeps the backlog queued, and the order is the queue's.
    on_redis = {"REDIS_URL": broker, "SWEEP_INTERVAL": "2"}
    web = processes.gunicorn(free_port(), **on_redis)
    worker = processes.worker(concurrency=1, **on_redis)
    processes.beat(**on_redis)
    lost = submit(web, "The Eiffel Tower was completed in 1889.")
    mine = WorkerProcess.objects.filter(name__contains=f":{worker.pid}:")

    def taken() -> bool:
        return any(name.endswith("sentences_decompose") for name, _ in mine.get().tasks)

    wait_until(lambda: world.llm.held == 1 and taken(), READY_WITHIN_S, lambda: f"held\n{processes.tail()}")
    backlog = [submit(web, text) for text in BACKLOG]

    processes.kill(worker)
    world.llm.release()
    processes.worker("worker2", loglevel="INFO", concurrency=1, **on_redis)
    wait_until(
        lambda: " ready." in processes.log("worker2"), READY_WITHIN_S, lambda: f"worker2 ready\n{processes.tail()}"
    )
    ready = timezone.now()
    ids = [lost, *backlog]
    wait_until(lambda: all_ended(ids), 60, lambda: f"every run ended: {snapshot(ids)}\n{processes.tail()}")

    assert_ended_with_reasons(ids)
    finished = dict(Verification.objects.filter(pk__in=ids).values_list("pk", "finished_at"))
    after = {str(pk): (at - ready).total_seconds() for pk, at in finished.items()}
    ended = f"the lost task's run ended {after[lost]:.1f} s after the new worker was ready, the backlog's in " + (
        ", ".join(f"{after[pk]:.1f}" for pk in backlog) + " s"
    )
    print(ended)
    steps = [
        line.split("verification.tasks.")[1].split("[")[0]
        for line in processes.log("worker2").splitlines()
        if " received" in line and "verification.tasks." in line
    ]
    assert [step for step in steps if step != "sweep"][0] == "sentences_decompose", (steps[:10], ended)
    assert after[lost] < max(after[pk] for pk in backlog), ended


# --- 2. a Redis restart


class RedisServer:
    """A redis-server of this test's own, without persistence, that can be killed and started
    again on the same port."""

    def __init__(self, workdir: Path) -> None:
        self.port, self.workdir = free_port(), workdir
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> "RedisServer":
        self.process = subprocess.Popen(
            [shutil.which("redis-server"), "--bind", "127.0.0.1", "--port", str(self.port)]
            + ["--save", "", "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        client = redis.Redis.from_url(self.url)

        def answering():
            try:
                return client.ping()
            except redis.ConnectionError:
                return False

        wait_until(answering, READY_WITHIN_S, "redis-server answering", interval=0.05)
        return self

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture
def own_redis(tmp_path):
    server = RedisServer(tmp_path).start()
    yield server
    server.kill()


def test_runs_finish_on_their_own_after_redis_restarts_and_the_site_answers_during_the_outage(
    world, processes, own_redis
):
    # Lowered from 30 s and 10 s to keep the test short; test 1 proves the defaults.
    fast_sweeps = {"REDIS_URL": own_redis.url, "RUN_STALLED_AFTER": "10", "SWEEP_INTERVAL": "2"}
    web = processes.gunicorn(free_port(), **fast_sweeps)
    worker = processes.worker(**fast_sweeps)
    processes.beat(**fast_sweeps)
    finished = submit(web, ONE_SENTENCE)
    wait_until(lambda: all_ended([finished]), READY_WITHIN_S, lambda: f"a first run ended\n{processes.tail()}")
    world.llm.held_words = (SLOW,)
    ids = [submit(web) for _ in range(3)]
    wait_until(
        lambda: world.llm.held == 3 and judged(ids) >= 2,
        READY_WITHIN_S,
        lambda: f"held {world.llm.held}, judged: {snapshot(ids)}\n{processes.tail()}",
    )

    own_redis.kill()
    outage = time.monotonic()
    world.llm.release()  # their claims are found during the outage: their searches cannot be sent
    found = Claim.objects.filter(sentence__verification_id__in=ids, sentence__text__contains=SLOW)
    wait_until(lambda: found.count() == 3, READY_WITHIN_S, lambda: f"claims found: {snapshot(ids)}\n{processes.tail()}")
    runs_before = Verification.objects.count()
    during = requests.post(
        f"{web}/api/verifications", json={"text": ONE_SENTENCE, "settings": {"retrieval_mode": "sparse"}}, timeout=30
    )
    page = requests.get(f"{web}/v/{finished}", timeout=30)
    result = requests.get(f"{web}/api/verifications/{finished}", timeout=30)
    running = requests.get(f"{web}/api/verifications/{ids[0]}", timeout=30)
    print(f"during the outage: POST {during.status_code} in {during.elapsed.total_seconds():.2f} s")
    time.sleep(max(0.0, 3 - (time.monotonic() - outage)))
    own_redis.start()

    # Accepted, though its start message could not be sent: its row is pending, and the sweeper
    # (its owner now) starts it once Redis is back.
    assert during.status_code == 201, during.text
    ids.append(during.json()["id"])
    assert Verification.objects.count() == runs_before + 1
    assert page.status_code == 200 and ONE_SENTENCE in page.text
    assert result.status_code == 200 and result.json()["status"] == "done"
    assert running.status_code == 200 and running.json()["status"] == "running"
    wait_until(
        lambda: all_ended(ids) or worker.poll() is not None,
        90,
        lambda: f"every run ended: {snapshot(ids)}\n{processes.tail()}",
    )
    assert worker.poll() is None, f"the worker exited when Redis went away\n{processes.tail(80)}"
    assert "the sweeper will resume it" in processes.log("worker")  # the searches it could not send
    assert_ended_with_reasons(ids)
    runs = Verification.objects.filter(pk__in=ids)
    assert {run.status for run in runs} == {Status.DONE}
    # The sweeper did the recovering: the runs whose messages the restart lost were resumed. (A
    # run whose queued tasks all survived can finish without it, depending on timing.)
    assert any(run.resumes > 0 for run in runs)


# --- 3. the embedded worker (no Redis): the web process is the worker


def test_an_embedded_run_resumes_when_its_web_process_is_killed_and_started_again(world, processes):
    # No REDIS_URL: runs execute inside the web process. Lowered sweeps as in the Redis test.
    embedded = {"CACHE_URL": "locmemcache://", "RUN_STALLED_AFTER": "10", "SWEEP_INTERVAL": "2"}
    port = free_port()
    server = processes.runserver(port, **embedded)
    world.llm.held_words = (SLOW,)
    ids = [submit(server)]
    wait_until(
        lambda: world.llm.held == 1 and judged(ids) >= 1,
        READY_WITHIN_S,
        lambda: f"held {world.llm.held}, judged: {snapshot(ids)}\n{processes.tail()}",
    )

    processes.kill(processes.running[-1])
    world.llm.release()
    processes.runserver(port, "runserver2", **embedded)
    wait_until(lambda: all_ended(ids), 60, lambda: f"the run ended: {snapshot(ids)}\n{processes.tail()}")

    assert_ended_with_reasons(ids)
    run = Verification.objects.get()  # no new submission
    assert run.status == Status.DONE and run.resumes >= 1


def test_two_embedded_web_processes_on_one_database_leave_each_others_runs_alone(world, processes):
    embedded = {"CACHE_URL": "locmemcache://"}  # default RUN_STALLED_AFTER and SWEEP_INTERVAL
    first = processes.runserver(free_port(), "runserver-a", **embedded)
    world.llm.held_words = (SLOW,)  # a runs until b's process has started and finished a run of its own
    a = submit(first)
    wait_until(
        lambda: world.llm.held == 1 and judged([a]) >= 1,
        READY_WITHIN_S,
        lambda: f"held {world.llm.held}, judged: {snapshot([a])}\n{processes.tail()}",
    )

    second = processes.runserver(free_port(), "runserver-b", **embedded)
    b = submit(second, ONE_SENTENCE)
    wait_until(lambda: all_ended([b]), READY_WITHIN_S, lambda: f"b ended: {snapshot([b])}\n{processes.tail()}")
    assert run_states([a])[a] == Status.RUNNING
    world.llm.release()
    wait_until(lambda: all_ended([a]), 60, lambda: f"a ended: {snapshot([a])}\n{processes.tail()}")

    assert_ended_with_reasons([a, b])
    for run in Verification.objects.all():
        assert (run.status, run.error, run.resumes) == (Status.DONE, "", 0)  # heartbeats kept the sweepers off


# --- 4. the finishing race: the last arrival must always notice it is last


RUN_SETTINGS = {"model": MODEL, "retrieval_mode": "sparse", "top_k_results": 5, "top_k_passages": 2, "context_size": 1}
FACTS = [
    "It was completed in 1889.",
    "It is made of steel.",
    "It is 330 metres tall.",
    "Gustave Eiffel's company designed and built the tower.",
    "Visitors climbed it in Paris in record numbers this year.",
]


def varied_text(i: int) -> str:
    return f"The Eiffel Tower is in Paris, France. {FACTS[i % len(FACTS)]} {FACTS[(i + 2) % len(FACTS)]}"


# Where a run's last arrival meets another task, and the longest pause (s) before each: it
# widens the window in which the other can slip in (the worker runs in this process).
JOIN_POINTS = {
    "host_category_claim": 0.5,
    "source_type_set": 0.5,
    "host_category_answer": 0.2,
    "sentence_finish": 0.1,
    "verification_finish": 0.1,
}


@pytest.mark.django_db(transaction=True)
def test_concurrent_runs_waiting_on_the_same_hosts_types_all_finish(
    client, world, celery_worker, settings, monkeypatch
):
    """No sweeper runs in this process: every run must end through its own joins. Each round
    the hosts' types are asked again, the answers taking from no time to longer than the runs
    themselves, so that they land before, around and after the runs' last sentences; random
    pauses (seeded) at the join points vary the interleavings."""
    settings.RUNS_PER_HOUR = 0
    settings.CPU_PROCESSES = 0
    world.llm.latency = 0.05
    rng = random.Random(3)
    for name, longest in JOIN_POINTS.items():
        monkeypatch.setattr(services, name, paused(getattr(services, name), rng, longest))
    hosts = {providers.host_of(site.url) for site in world.sites}
    for delay in (0.0, 0.5, 1.5, 3.0):
        HostCategory.objects.all().delete()
        cache.clear()
        world.llm.slow_words = {"Host: 127.0.0.1": delay}
        asked = world.llm.hosts_asked()
        ids = []
        for i in range(12):
            response = client.post(
                "/api/verifications",
                {"text": varied_text(i), "settings": {"retrieval_mode": "sparse"}},
                content_type="application/json",
            )
            assert response.status_code == 201, response.content
            ids.append(response.json()["id"])
        wait_until(lambda: all_ended(ids), 60, lambda: f"round {delay}: {snapshot(ids)}")  # noqa: B023

        assert_ended_with_reasons(ids)
        runs = Verification.objects.filter(pk__in=ids)
        assert {(run.status, run.resumes) for run in runs} == {(Status.DONE, 0)}
        assert world.llm.hosts_asked() - asked == dict.fromkeys(hosts, 1)  # one question per host, for all twelve runs


def paused(function, rng: random.Random, longest: float):
    def pausing(*args, **kwargs):
        time.sleep(rng.random() * longest)
        return function(*args, **kwargs)

    return pausing


class Inline:
    """The tasks that the code under test sends wait here, and run one by one in this thread
    when the test says so: the test chooses the interleaving."""

    def __init__(self) -> None:
        self.queue: list = []
        self.urgent: list = []  # the tasks sent ahead of the queue
        self.ran: Counter[str] = Counter()  # tasks run, by name

    def send(self, task, *args, countdown: float = 0, urgent: bool = False) -> None:
        if isinstance(task, str):  # the steps send each other by name (worker/base.send)
            task = celery_app.tasks[base.TASK_PREFIX + task]
        self.queue.append((task, args))  # queued in order: the countdown is not waited for
        if urgent:
            self.urgent.append((task.name, list(args)))

    def run_all(self) -> None:
        while self.queue:
            task, args = self.queue.pop(0)
            self.ran[task.name.rpartition(".")[2]] += 1
            task(*args)

    def start(self, text: str = TEXT) -> Verification:
        verification = services.verification_create(text=text, settings=RUN_SETTINGS)
        self.send(tasks.verification_start, str(verification.pk))
        return verification


@pytest.fixture
def inline(world, settings, monkeypatch):
    settings.CPU_PROCESSES = 0
    queue = Inline()
    monkeypatch.setattr(base, "send", queue.send)
    monkeypatch.setattr(heartbeat, "hold", lambda verification_id: None)  # touched_at is the test's to set
    return queue


def host(site) -> str:
    return providers.host_of(site.url)


@pytest.mark.django_db
@pytest.mark.parametrize("answer", ["llm", "fallback"])
def test_the_hosts_answer_arriving_after_the_runs_last_sentence_finishes_the_run(world, inline, answer):
    wiki, news, blog = world.sites
    HostCategory.objects.bulk_create(
        [HostCategory(host=host(news), source_type="news"), HostCategory(host=host(blog), source_type="blog")]
    )
    HostCategory.objects.create(host=host(wiki))  # another run asked first; its answer is not in yet
    asker = services.verification_create(text=ONE_SENTENCE, settings=RUN_SETTINGS)
    verification = inline.start(ONE_SENTENCE)
    inline.run_all()

    assert run_states([verification.pk])[str(verification.pk)] == Status.RUNNING
    assert not Sentence.objects.filter(verification=verification).exclude(status=Status.DONE).exists()
    untyped = Source.objects.filter(verification=verification, source_type="")
    assert list(untyped.values_list("host", flat=True).distinct()) == [host(wiki)]

    if answer == "fallback":
        world.llm.fail_words = {f"Host: {host(wiki)}": 500}
    tasks.host_categorize(host(wiki), str(asker.pk))

    verification.refresh_from_db()
    assert verification.status == Status.DONE
    assert stranded([verification.pk]) == {}
    decided = Source.objects.filter(verification=verification, host=host(wiki)).values_list(
        "type_decided_by", flat=True
    )
    assert {by.partition(":")[0] for by in decided} == {answer}


@pytest.mark.django_db
def test_a_source_typed_from_the_hosts_known_type_after_its_pages_were_read_finishes_the_run(
    world, inline, monkeypatch
):
    HostCategory.objects.bulk_create([HostCategory(host=host(site), source_type="wiki") for site in world.sites])
    typing = categorize.type_sources
    late = []
    monkeypatch.setattr(categorize, "type_sources", lambda sources, **options: late.extend(sources))
    verification = inline.start(ONE_SENTENCE)
    inline.run_all()  # every page read and judged, no source typed yet
    assert len(late) > 1
    assert not Sentence.objects.filter(verification=verification).exclude(status=Status.DONE).exists()

    for source in late[:-1]:
        typing([source])
        assert run_states([verification.pk])[str(verification.pk)] == Status.RUNNING
    typing([late[-1]])

    assert run_states([verification.pk])[str(verification.pk)] == Status.DONE
    assert stranded([verification.pk]) == {}


# --- the sweeper, called directly, on rows rewound to where a dead worker or a lost message left them


def the_claims(verification) -> list[Claim]:
    return list(Claim.objects.filter(sentence__verification=verification).order_by("pk"))


def reopen(claims, status: str) -> None:
    """Claims back to `status`, and their sentences back to running."""
    Claim.objects.filter(pk__in=[c.pk for c in claims]).update(status=status, error="")
    Sentence.objects.filter(claims__in=claims).update(status=Status.RUNNING, error="")


def every_row_finished(verification) -> None:
    """The run's last join was missed: everything is finished but the run."""


def mid_flight(verification) -> None:
    """A claim stuck in searching, another's evidence unjudged, and a source untyped whose
    host's question is in flight (asked a moment ago, by a worker that died)."""
    searching, judging = the_claims(verification)[:2]
    SearchResult.objects.filter(claim=searching).delete()
    Evidence.objects.filter(claim=searching).delete()
    reopen([searching], ClaimStatus.SEARCHING)
    Evidence.objects.filter(claim=judging).update(status=Status.PENDING, verdict="", rationale="")
    reopen([judging], ClaimStatus.JUDGING)
    untyped = Source.objects.filter(verification=verification, status=Status.DONE).first().host
    Source.objects.filter(host=untyped).update(source_type="", type_decided_by="")
    HostCategory.objects.filter(host=untyped).update(source_type="", requested_at=timezone.now())


def start_lost(verification) -> None:
    Sentence.objects.filter(verification=verification).delete()
    Source.objects.filter(verification=verification).delete()
    Verification.objects.filter(pk=verification.pk).update(status=Status.PENDING)


def sentence_not_decomposed(verification) -> None:
    sentence = the_claims(verification)[0].sentence
    Claim.objects.filter(sentence=sentence).delete()
    Sentence.objects.filter(pk=sentence.pk).update(status=Status.RUNNING)


def fetch_lost(verification) -> None:
    page = Source.objects.filter(verification=verification, status=Status.DONE).first()
    Evidence.objects.filter(source=page).delete()
    reopen(Claim.objects.filter(search_results__source=page), ClaimStatus.READING)
    SearchResult.objects.filter(source=page).update(status=Status.PENDING)
    Source.objects.filter(pk=page.pk).update(status=Status.RUNNING)


def page_fetched_not_read(verification) -> None:
    page = Source.objects.filter(verification=verification, status=Status.DONE).first()
    Evidence.objects.filter(source=page).delete()
    reopen(Claim.objects.filter(search_results__source=page), ClaimStatus.READING)
    SearchResult.objects.filter(source=page).update(status=Status.PENDING)


def failed_page_not_read(verification) -> None:
    """The page failed (HTTP 403) and the worker died before recording that its claims cannot
    read it."""
    page = Source.objects.get(verification=verification, status=Status.FAILED)
    reopen(Claim.objects.filter(search_results__source=page), ClaimStatus.READING)
    SearchResult.objects.filter(source=page).update(status=Status.PENDING)


def judged_claim_not_finished(verification) -> None:
    reopen(the_claims(verification)[:1], ClaimStatus.JUDGING)


def settled_sentence_not_finished(verification) -> None:
    Sentence.objects.filter(pk=the_claims(verification)[0].sentence_id).update(status=Status.RUNNING)


def search_found_nothing_not_finished(verification) -> None:
    """The search found no page, and the worker died before finishing the claim (the result
    then differs from the first run's: its pages are gone)."""
    claim = the_claims(verification)[0]
    SearchResult.objects.filter(claim=claim).delete()
    Evidence.objects.filter(claim=claim).delete()
    reopen([claim], ClaimStatus.READING)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "rewind",
    [
        every_row_finished,
        mid_flight,
        start_lost,
        sentence_not_decomposed,
        fetch_lost,
        page_fetched_not_read,
        failed_page_not_read,
        judged_claim_not_finished,
        settled_sentence_not_finished,
        search_found_nothing_not_finished,
    ],
)
def test_the_sweeper_resumes_a_silent_run_from_where_its_rows_were_left(world, inline, rewind):
    verification = inline.start(TEXT)
    inline.run_all()
    first = selectors.verification_result(Verification.objects.get(pk=verification.pk))
    assert first["status"] == "done"
    Verification.objects.filter(pk=verification.pk).update(
        status=Status.RUNNING, finished_at=None, touched_at=timezone.now() - timedelta(minutes=1)
    )
    rewind(verification)

    assert tasks.sweep() == 1
    inline.run_all()

    again = Verification.objects.get(pk=verification.pk)
    assert (again.status, again.resumes) == (Status.DONE, 1), snapshot([verification.pk])
    assert stranded([verification.pk]) == {}
    assert tasks.sweep() == 0
    if rewind is not search_found_nothing_not_finished:
        outcome = [(s["status"], s["score"], s["outcome"]) for s in selectors.verification_result(again)["sentences"]]
        assert outcome == [(s["status"], s["score"], s["outcome"]) for s in first["sentences"]]


@pytest.mark.django_db
def test_a_run_whose_start_message_was_lost_is_split_once_and_asks_the_model_once_per_chunk(world, inline):
    # Created with its sentences (the form's split), but the message that starts it never
    # reached a worker: the sweeper's resume starts it, and its sentences are decomposed once.
    verification = services.verification_create(text=TEXT, settings=RUN_SETTINGS)
    sentences = list(Sentence.objects.filter(verification=verification).values_list("pk", "index", "text"))
    first_two = [text for _, _, text in sentences][:2]
    assert first_two == ["The Eiffel Tower is in Paris, France.", "It was completed in 1889."]
    Verification.objects.filter(pk=verification.pk).update(created_at=timezone.now() - timedelta(minutes=1))

    assert tasks.sweep() == 1
    inline.run_all()

    again = Verification.objects.get(pk=verification.pk)
    assert (again.status, again.resumes) == (Status.DONE, 1), snapshot([verification.pk])
    assert list(Sentence.objects.filter(verification=verification).values_list("pk", "index", "text")) == sentences
    # One chunk, decomposed once: not sent by both the resume and the start task.
    assert (inline.ran["verification_start"], inline.ran["sentences_decompose"]) == (1, 1)
    assert world.llm.calls["claims"] == 1


@pytest.mark.django_db
def test_a_decompose_task_redelivered_mid_answer_asks_only_about_the_sentences_not_yet_answered(world, inline):
    # The worker died while the model wrote the chunk's answer: the first sentence's claim had
    # been saved and sent to search (streamed), the others' not. The redelivered task asks
    # only about those, and the run ends.
    verification = inline.start()
    inline.run_all()
    assert world.llm.calls["claims"] == 1
    world.llm.calls.clear()
    Verification.objects.filter(pk=verification.pk).update(status=Status.RUNNING, finished_at=None)
    sentences = list(Sentence.objects.filter(verification=verification).order_by("index"))
    Claim.objects.filter(sentence__verification=verification).delete()
    Sentence.objects.filter(verification=verification).update(status=Status.RUNNING, error="")
    [claim] = services.claims_save(
        sentence=sentences[0], drafts=[ClaimDraft("The Eiffel Tower is in Paris.", "eiffel")]
    )
    cache.clear()

    inline.send(tasks.claim_search, claim.pk)
    inline.send(tasks.sentences_decompose, [sentence.pk for sentence in sentences])
    inline.run_all()

    assert world.llm.calls["claims"] == 1
    asked = [r["messages"][-1]["content"] for r in world.llm.requests if "Target sentences" in str(r["messages"])][-1]
    assert asked.endswith("Target sentences: S2, S3, S4\nAnswer:")  # not S1, the first sentence
    assert list(sentences[0].claims.values_list("pk", flat=True)) == [claim.pk]
    assert Verification.objects.get(pk=verification.pk).status == Status.DONE, snapshot([verification.pk])


@pytest.mark.django_db
def test_a_page_to_read_again_that_left_the_cache_and_the_web_fails_with_the_reason(world, inline):
    # Page texts live in the shared cache, not in the run: a page read after its cached copy
    # expired is downloaded again, and if it is gone by then, it fails honestly.
    verification = inline.start(TEXT)
    inline.run_all()
    Verification.objects.filter(pk=verification.pk).update(
        status=Status.RUNNING, finished_at=None, touched_at=timezone.now() - timedelta(minutes=1)
    )
    page_fetched_not_read(verification)
    page = Source.objects.filter(verification=verification, search_results__status=Status.PENDING).first()
    next(site for site in world.sites if page.url.startswith(site.url)).fail_status = 404
    cache.clear()

    assert tasks.sweep() == 1
    inline.run_all()

    page.refresh_from_db()
    assert (page.status, page.error) == (Status.FAILED, "the page answered HTTP 404")
    assert not SearchResult.objects.filter(source=page).exclude(status=Status.FAILED).exists()
    assert stranded([verification.pk]) == {}
    result = selectors.verification_result(Verification.objects.get(pk=verification.pk))
    assert result["status"] == "done"
    assert any("HTTP 404" in reason["reason"] for p in result["problems"] for reason in p["reasons"])


# --- 5. a faulty model: every run ends, every failure says why, and a retry redoes it


LLM_STEPS = {"decompose", "judge", "categorize"}


def test_runs_against_a_failing_model_all_end_with_reasons_and_a_retry_redoes_the_failed_parts(
    world, processes, broker
):
    # 40% of calls answer 429/500/503 and 15% prose, one retry per call, so failures reach the
    # runs: a chunk's calls are few, and which prompts they send depends on the order pages
    # arrive in, so the rates (not a lucky seed) must make some fail.
    world.llm.fail_rate, world.llm.garbage_rate, world.llm.seed = 0.4, 0.15, 5
    on_redis = {"REDIS_URL": broker, "LLM_MAX_RETRIES": "1"}
    web = processes.gunicorn(free_port(), **on_redis)
    processes.worker(**on_redis)
    processes.beat(**on_redis)
    ids = [submit(web, varied_text(i)) for i in range(10)]
    wait_until(lambda: all_ended(ids), 120, lambda: f"every run ended: {snapshot(ids)}\n{processes.tail()}")

    assert_ended_with_reasons(ids)
    results = {i: requests.get(f"{web}/api/verifications/{i}", timeout=10).json() for i in ids}
    problems = {i: [p for p in r["problems"] if p["step"] in LLM_STEPS] for i, r in results.items()}
    assert any(problems.values()), "the seeded faults made nothing fail: choose another seed"
    for result in results.values():
        for problem in result["problems"]:
            # Pages judged from their snippet are listed with a reason but are no failed item.
            for counted, snippet in ((problem["count"], False), (problem["read_from_snippet"], True)):
                assert counted == sum(r["count"] for r in problem["reasons"] if r["read_from_snippet"] is snippet)
            assert all(r["reason"].strip() for r in problem["reasons"]), problem

    world.llm.fail_rate = world.llm.garbage_rate = 0.0
    retried = [i for i in ids if problems[i] or results[i]["status"] == "failed"]
    for verification_id in retried:
        response = requests.post(f"{web}/api/verifications/{verification_id}/retry", json={}, headers=OWNER, timeout=10)
        assert response.status_code == 202, response.text
        assert response.json()["retried"] >= 1
    wait_until(lambda: all_ended(ids), 60, lambda: f"every retry ended: {snapshot(ids)}\n{processes.tail()}")

    assert_ended_with_reasons(ids)
    for verification_id in ids:
        result = requests.get(f"{web}/api/verifications/{verification_id}", timeout=10).json()
        assert result["status"] == "done", result["error"]
        assert {p["step"] for p in result["problems"]} <= {"fetch"}, result["problems"]  # the 403 page is left
        assert result["retries"] == (verification_id in retried)


@pytest.mark.django_db
def test_a_failed_host_question_ends_its_run_and_says_why(world, inline):
    """The reason is stored with the source's type ("fallback: ..."), long as it is: PostgreSQL
    refused it in a 16-character column, and the source then stayed untyped, its run unfinished."""
    world.llm.fail_words = {"Host: 127.0.0.1": 500}
    verification = inline.start(ONE_SENTENCE)
    inline.run_all()

    assert run_states([verification.pk])[str(verification.pk)] == Status.DONE
    decided = Source.objects.filter(verification=verification).values_list("type_decided_by", flat=True)
    assert decided and all(by.startswith("fallback: the LLM server answered HTTP 500") for by in decided)
    result = selectors.verification_result(Verification.objects.get(pk=verification.pk))
    categorize = next(p for p in result["problems"] if p["step"] == "categorize")
    assert categorize["count"] == len(decided) and "HTTP 500" in categorize["reasons"][0]["reason"]


@pytest.mark.django_db
def test_the_queued_tasks_of_a_deleted_running_run_end_quietly(world, inline, caplog):
    verification = inline.start()
    for _ in range(2):  # the start and the first decomposition: claims' searches are queued now
        task, args = inline.queue.pop(0)
        task(*args)
    assert any(task.name.endswith("claim_search") for task, _ in inline.queue)

    services.verification_delete(verification.pk)
    with caplog.at_level(logging.INFO, logger="verification.worker.base"):
        inline.run_all()  # each task finds its row (or its run) gone

    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert "its run was deleted" in caplog.text


@pytest.mark.django_db
@pytest.mark.parametrize("lost_after", [3, 6, 9])
def test_a_trail_run_whose_queued_tasks_were_lost_mid_trail_is_resumed_to_the_same_result(world, inline, lost_after):
    """A worker killed mid-trail: the messages it held are gone. The sweeper's resume finds each
    claim's state in its rows (rounds, selections) and the claims go on where they were."""
    import json as json_module

    from verification.inputs.trails import trail_submission
    from verification.selectors.trail_result import trail_result
    from verification.worker import resume

    example = json_module.loads((ROOT / "docs" / "examples" / "trail.json").read_text())
    submission = trail_submission(example, model=MODEL)

    def verdicts(run) -> dict:
        return {
            c["text"]: (c["verdict"], (c["entered"] or {}).get("kind"))
            for c in trail_result(run, with_texts=True)["claims"]
        }

    whole = services.trail_create(trail=submission.trail, settings=submission.settings, segments=submission.segments)
    inline.send("verification_start", str(whole.pk))
    inline.run_all()
    whole.refresh_from_db()
    assert whole.status == Status.DONE

    run = services.trail_create(trail=submission.trail, settings=submission.settings, segments=submission.segments)
    inline.send("verification_start", str(run.pk))
    for _ in range(lost_after):
        task, args = inline.queue.pop(0)
        task(*args)
    assert any(task.name.rpartition(".")[2].startswith("trail_") for task, _ in inline.queue) or lost_after == 3
    inline.queue.clear()  # the worker died with these
    run.refresh_from_db()
    assert run.status == Status.RUNNING

    resume.resume(run.pk)
    inline.run_all()

    run.refresh_from_db()
    assert run.status == Status.DONE
    assert verdicts(run) == verdicts(whole)


@pytest.mark.django_db
def test_the_tasks_a_dead_worker_had_taken_are_sent_again_though_its_runs_look_attended(world, inline):
    """Issue 27.2: a `celery worker` killed with tasks taken (they left Redis with it) while
    another worker goes on with the same runs: the runs are touched, so they never look stalled,
    and their lost items waited for the backlog to drain. The sweeper sends the dead process's
    tasks again as soon as it is known gone, and only those."""
    from verification.models import WorkerProcess
    from verification.worker import resume

    verification = inline.start(ONE_SENTENCE)
    for _ in range(2):  # the start and the decomposition: the claim's search is queued
        task, args = inline.queue.pop(0)
        task(*args)
    lost = [(task.name, list(args)) for task, args in inline.queue if task.name.endswith("claim_search")]
    assert lost
    inline.queue.clear()  # taken by the worker that dies
    now = timezone.now()
    WorkerProcess.objects.create(
        name="dead",
        kind="celery",
        started_at=now - timedelta(minutes=5),
        beat_at=now - timedelta(minutes=1),
        tasks=lost,
    )
    WorkerProcess.objects.create(name="alive", kind="celery", started_at=now, beat_at=now)
    Verification.objects.filter(pk=verification.pk).update(touched_at=now, owner="alive")

    resume.sweep()

    assert [(task.name, list(args)) for task, args in inline.queue] == lost
    assert inline.urgent == lost  # ahead of the backlog
    inline.run_all()
    assert run_states([verification.pk])[str(verification.pk)] == Status.DONE
    resume.sweep()
    assert not inline.queue  # sent once
    assert WorkerProcess.objects.get(name="dead").tasks == []


@pytest.mark.django_db
def test_a_worker_sends_at_once_what_a_worker_that_ended_on_its_machine_had_taken(world, inline, monkeypatch):
    """Issue 38: a worker started again after a `kill -9` sends the tasks its predecessor had
    taken as soon as it is ready, though the dead one's last beat is recent: it ran on this
    machine (host name and pid namespace) and its pid is gone. The runs it owned are resumed (a
    task it took just before it died may not be recorded). A live one's are left alone."""
    from verification.models import WorkerProcess
    from verification.worker import resume

    verification = inline.start(ONE_SENTENCE)
    inline.queue.clear()
    ended = subprocess.Popen(["true"])
    ended.wait()
    here, _, token = heartbeat.process_name().split(":")
    namespace = token.partition(".")[0]
    now = timezone.now()
    lost = [[base.TASK_PREFIX + "verification_start", [str(verification.pk)]]]
    for name in (
        f"{here}:{ended.pid}:{namespace}.dead",
        f"{here}:{os.getpid()}:{namespace}.gone",
        heartbeat.process_name(),
    ):
        WorkerProcess.objects.create(name=name, kind="celery", started_at=now, beat_at=now, tasks=lost)
    elsewhere = f"another-host:{ended.pid}:{namespace}.away"
    WorkerProcess.objects.create(name=elsewhere, kind="celery", started_at=now, beat_at=now, tasks=lost)
    owned = inline.start(ONE_SENTENCE)
    inline.queue.clear()
    Verification.objects.filter(pk=owned.pk).update(owner=f"{here}:{ended.pid}:{namespace}.dead", touched_at=now)
    Verification.objects.filter(pk=verification.pk).update(owner=elsewhere, touched_at=now)

    monkeypatch.setattr(resume, "close_old_connections", lambda: None)  # the test's transaction
    resume._recover_when_ready()

    # The dead pid's, and the one whose pid this process has now.
    assert inline.urgent == [tuple(task) for task in lost] * 2
    assert Verification.objects.get(pk=owned.pk).resumes == 1
    assert Verification.objects.get(pk=verification.pk).resumes == 0
    assert set(WorkerProcess.objects.exclude(tasks=[]).values_list("name", flat=True)) == {
        heartbeat.process_name(),
        elsewhere,
    }


@pytest.mark.django_db(transaction=True)
def test_a_worker_records_the_tasks_it_has_taken_until_they_end(client, world, celery_worker):
    from verification.models import WorkerProcess

    world.llm.held_words = ("1889",)
    response = client.post(
        "/api/verifications", {"text": TEXT, "settings": {"retrieval_mode": "sparse"}}, content_type="application/json"
    )
    assert response.status_code == 201
    wait_until(lambda: world.llm.held >= 1, 30, lambda: "a call held")
    heartbeat.beat()
    taken = WorkerProcess.objects.get(name=heartbeat.process_name()).tasks
    assert any(name.startswith("verification.tasks.") for name, _ in taken), taken

    world.llm.release()
    run_id = response.json()["id"]
    wait_until(lambda: run_states([run_id])[run_id] not in UNFINISHED, 60, lambda: "ended")

    def recorded() -> list:
        heartbeat.beat()
        return WorkerProcess.objects.get(name=heartbeat.process_name()).tasks

    # Once its last tasks have run (a judge_lingered sent with a countdown may still wait a moment).
    wait_until(lambda: recorded() == [], 30, lambda: f"tasks still recorded: {recorded()}")
