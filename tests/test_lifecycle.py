"""Starting and stopping, against real processes: the web server answers while its CPU pool
warms up and a run submitted meanwhile runs; SIGTERM, SIGINT or SIGKILL to the web server, the
CLI or a `celery worker` ends every process it started; and a run runs once, in the process
that started it, with that process's configuration."""

import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from django.utils import timezone

from tests.conftest import free_port
from tests.fakes import FakeLLM
from tests.processes import READY_WITHIN_S, ROOT, wait_until
from verification.models import Status, Verification, WorkerProcess
from verification.worker import heartbeat

TEXT = "The Eiffel Tower is in Paris, France. It was completed in 1889. It is made of steel."
HELD = "1889"  # the fake model holds the calls about this sentence until the test releases them
# The bound: every process a stopped process started is gone within this.
ENDED_WITHIN_S = 10


def process_tree(pid: int) -> set[int]:
    """`pid` and every process below it, from /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (state := _stat(int(entry.name))):
            parents[int(entry.name)] = int(state[1])
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, of in parents.items() if of == parent and child not in tree]
        tree.update(children)
        frontier.extend(children)
    return tree


def running(pids: set[int]) -> set[int]:
    """Those still running (a zombie has ended; it only waits for its parent to read its status)."""
    return {pid for pid in pids if (state := _stat(pid)) and state[0] != "Z"}


def _stat(pid: int) -> tuple[str, str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid = text.rsplit(")", 1)[1].split()[:2]
    return state, ppid


def pool_started(pid: int, processes: int) -> bool:
    """The CPU pool's processes and multiprocessing's resource tracker are running."""
    return len(running(process_tree(pid))) >= 2 + processes


def assert_all_end(pids: set[int], what: str) -> None:
    wait_until(lambda: not running(pids), ENDED_WITHIN_S, lambda: f"{what}: still running {running(pids)}")


def submit(base: str, text: str = TEXT) -> str:
    response = requests.post(
        f"{base}/api/verifications", json={"text": text, "settings": {"retrieval_mode": "sparse"}}, timeout=30
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


def cli(processes, name: str, text_file: Path, **env):
    return processes.start(name, "manage.py", "verify", "--mode", "sparse", "--file", str(text_file), **env)


# --- starting


def test_a_run_submitted_while_the_web_server_warms_up_runs_once_and_finishes(world, processes):
    # A real pool (2 processes, each loading the model on torch, the slowest backend to start:
    # seconds of imports): the run is submitted at once, while they still import and load it.
    server = processes.runserver(
        free_port(), CPU_PROCESSES="2", EMBEDDING_BACKEND="torch", RUN_STALLED_AFTER="2", SWEEP_INTERVAL="1"
    )
    run_id = submit(server)

    wait_until(lambda: Verification.objects.get(pk=run_id).status == Status.DONE, READY_WITHIN_S, processes.tail)
    run = Verification.objects.get(pk=run_id)
    assert run.resumes == 0
    warm_at = WorkerProcess.objects.get(name=run.owner).warm_at
    assert warm_at is not None and run.created_at < warm_at  # it was submitted during the warm-up
    asked = Counter(request["messages"][-1]["content"] for request in world.llm.requests)
    assert asked and max(asked.values()) == 1  # every LLM call made once


# --- stopping


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_stopping_the_web_server_ends_every_process_it_started(world, processes, signum):
    world.llm.held_words = (HELD,)  # a run in flight: its calls must not hold the stop up
    server = processes.runserver(free_port(), CPU_PROCESSES="2")
    web = processes.running[-1]
    submit(server)
    wait_until(lambda: world.llm.held >= 1 and pool_started(web.pid, 2), READY_WITHIN_S, processes.tail)
    started = process_tree(web.pid)

    os.kill(web.pid, signum)

    assert_all_end(started, f"after {signal.Signals(signum).name} to the web server")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stopping_the_cli_ends_every_process_it_started(world, processes, tmp_path, signum):
    world.llm.held_words = (HELD,)
    text = tmp_path / "answer.txt"
    text.write_text(TEXT)
    verify = cli(processes, "verify", text, CPU_PROCESSES="2")
    wait_until(lambda: world.llm.held >= 1 and pool_started(verify.pid, 2), READY_WITHIN_S, processes.tail)
    started = process_tree(verify.pid)

    os.kill(verify.pid, signum)

    assert_all_end(started, f"after {signal.Signals(signum).name} to manage.py verify")


def ignoring_sigint(command: list[str]) -> list[str]:
    """`command` started with SIGINT ignored, as a script's background job (some CI runners) or
    `nohup`-like wrappers start it: Python then installs no KeyboardInterrupt handler of its own."""
    return ["bash", "-c", 'trap "" INT; exec "$@"', "bash", *command]


@pytest.mark.parametrize("what", ["web server", "cli"])
def test_a_process_started_with_sigint_ignored_still_stops_on_sigint(world, processes, tmp_path, what):
    world.llm.held_words = (HELD,)
    text = tmp_path / "answer.txt"
    text.write_text(TEXT)
    port = free_port()
    command = {
        "web server": ["manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        "cli": ["manage.py", "verify", "--mode", "sparse", "--file", str(text)],
    }[what]
    started = processes.start_command(what, ignoring_sigint([sys.executable, *command]), CPU_PROCESSES="0")
    if what == "web server":
        submit(processes.until_serving(port))
    wait_until(lambda: world.llm.held >= 1, READY_WITHIN_S, processes.tail)
    tree = process_tree(started.pid)

    os.kill(started.pid, signal.SIGINT)

    assert_all_end(tree, f"after SIGINT to the {what} started with SIGINT ignored")


def test_stopping_a_celery_worker_ends_its_cpu_pool(world, processes, broker):
    world.llm.held_words = (HELD,)
    web = processes.gunicorn(free_port(), REDIS_URL=broker)
    worker = processes.worker(REDIS_URL=broker, CPU_PROCESSES="2")
    submit(web)
    wait_until(lambda: world.llm.held >= 1 and pool_started(worker.pid, 2), READY_WITHIN_S, processes.tail)
    started = process_tree(worker.pid)

    os.kill(worker.pid, signal.SIGTERM)

    assert_all_end(started, "after SIGTERM to the worker")


# --- a run runs once, where it was started


def test_the_cli_runs_its_text_once_with_its_own_configuration_beside_a_server(world, processes, tmp_path):
    # The server, on the same database, has another model server and sweeps eagerly; the CLI's
    # model answers slower than the run may stay silent. Neither sweeper may take the run over.
    eager = {"RUN_STALLED_AFTER": "1", "SWEEP_INTERVAL": "1"}
    other_llm = FakeLLM().start()
    try:
        processes.runserver(free_port(), OPENAI_BASE_URL=other_llm.url + "/v1", **eager)
        world.llm.latency = 2.5
        text = tmp_path / "answer.txt"
        text.write_text(TEXT)
        verify = cli(processes, "verify", text, **eager)
        assert verify.wait(180) == 0, processes.tail()
    finally:
        other_llm.stop()

    run = Verification.objects.get()
    assert (run.status, run.resumes) == (Status.DONE, 0)
    assert other_llm.requests == []
    asked = Counter(request["messages"][-1]["content"] for request in world.llm.requests)
    assert asked and max(asked.values()) == 1
    assert run.llm_calls == len(world.llm.requests)


def test_a_run_whose_owner_died_is_not_run_with_another_configuration(world, processes, tmp_path):
    world.llm.held_words = (HELD,)
    text = tmp_path / "answer.txt"
    text.write_text(TEXT)
    verify = cli(processes, "verify", text, CPU_PROCESSES="0")
    wait_until(lambda: world.llm.held >= 1, READY_WITHIN_S, processes.tail)
    processes.kill(verify)

    # Another process, with another Serper key, on the same database.
    processes.runserver(free_port(), SERPER_API_KEY="another-key", RUN_STALLED_AFTER="1", SWEEP_INTERVAL="1")

    wait_until(lambda: Verification.objects.get().status == Status.FAILED, READY_WITHIN_S, processes.tail)
    run = Verification.objects.get()
    assert "another configuration" in run.error and "SERPER_API_KEY" in run.error
    assert "OPENAI_API_KEY" not in run.error


def test_the_process_beat_names_its_kind(world, processes):
    processes.runserver(free_port(), CPU_PROCESSES="0")
    others = WorkerProcess.objects.exclude(name=heartbeat.process_name())  # this test process may beat too
    wait_until(others.exists, READY_WITHIN_S, processes.tail)
    assert others.get().kind == WorkerProcess.Kind.EMBEDDED


# --- "starting" on the page while the run's process warms up


@pytest.mark.django_db
def test_a_run_waiting_for_its_process_to_warm_up_is_shown_as_starting(client, configured):
    now = timezone.now()
    warming = WorkerProcess.objects.create(
        name="web:1:a", kind=WorkerProcess.Kind.EMBEDDED, started_at=now, beat_at=now
    )
    run = Verification.objects.create(text=TEXT, settings={"model": "fake-model"}, owner=warming.name)

    page = client.get(f"/v/{run.pk}")
    assert "Starting: the server is loading its passage model" in page.content.decode()
    assert client.get(f"/api/verifications/{run.pk}").json()["progress"]["starting"] is True

    WorkerProcess.objects.filter(pk=warming.pk).update(warm_at=now)
    page = client.get(f"/v/{run.pk}")
    assert "Starting:" not in page.content.decode() and "Verifying…" in page.content.decode()
    assert client.get(f"/api/verifications/{run.pk}").json()["progress"]["starting"] is False


# --- the README's run command


def run_sh(processes, port: int, **env) -> subprocess.Popen:
    return processes.start_command("run.sh", ["bash", "scripts/run.sh"], PORT=str(port), **env)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stopping_run_sh_ends_everything_it_started(world, processes, signum):
    # As a person runs it: Ctrl-C reaches the terminal's whole process group, a supervisor's
    # SIGTERM only the script. A run is in flight, its LLM calls held: they must not hold the stop up.
    world.llm.held_words = (HELD,)
    port = free_port()
    script = run_sh(processes, port, CPU_PROCESSES="2")
    server = processes.until_serving(port)
    submit(server)
    wait_until(lambda: world.llm.held >= 1 and pool_started(script.pid, 2), READY_WITHIN_S, processes.tail)
    started = process_tree(script.pid)

    if signum == signal.SIGINT:
        os.killpg(script.pid, signum)
    else:
        os.kill(script.pid, signum)

    assert_all_end(started, f"after {signal.Signals(signum).name} to scripts/run.sh")


def test_run_sh_started_with_sigint_ignored_still_stops_on_ctrl_c_and_says_so(world, processes):
    # bash cannot trap a signal ignored when it started, nor give it back to what it starts.
    port = free_port()
    script = processes.start_command(
        "run.sh", ignoring_sigint(["bash", "scripts/run.sh"]), PORT=str(port), CPU_PROCESSES="0"
    )
    processes.until_serving(port)
    started = process_tree(script.pid)

    os.killpg(script.pid, signal.SIGINT)

    assert_all_end(started, "after Ctrl-C to scripts/run.sh started with SIGINT ignored")
    assert script.wait(ENDED_WITHIN_S) == 128 + signal.SIGINT  # as a shell reports an interrupted command


SIMULTANEOUS = 70


def form_poster(base: str):
    """A browser's submission of the form, its CSRF cookie and token fetched beforehand. Sent on
    a connection of its own: the page's, idle meanwhile, may be closed by the server just as the
    form is sent on it (a keep-alive race that is the client's to retry, not a refusal)."""
    page = requests.get(f"{base}/", timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    data = {"text": f"It was completed in {HELD}.", "retrieval_mode": "sparse", "csrfmiddlewaretoken": token}
    cookies = page.cookies
    return lambda: requests.post(f"{base}/", data=data, cookies=cookies, allow_redirects=False, timeout=120)


def api_poster(base: str):
    body = {"text": f"It was completed in {HELD}.", "settings": {"retrieval_mode": "sparse"}}
    return lambda: requests.post(f"{base}/api/verifications", json=body, timeout=120)


def test_run_sh_takes_70_simultaneous_submissions_without_a_reset_and_stops_with_them_in_flight(world, processes):
    # Half by the form, half by the API, all released at once. A 429 (the hourly limit) would be
    # an answer too; the limit is set out of reach so that every one of them starts a run.
    world.llm.held_words = (HELD,)
    port = free_port()
    script = run_sh(processes, port, CPU_PROCESSES="0", RUNS_PER_HOUR="1000")
    base = processes.until_serving(port)
    posters = [(form_poster if i % 2 else api_poster)(base) for i in range(SIMULTANEOUS)]
    start = threading.Barrier(SIMULTANEOUS)

    def submit_at_once(post) -> str:
        start.wait()
        try:
            return str(post().status_code)
        except requests.RequestException as error:
            return type(error).__name__

    with ThreadPoolExecutor(SIMULTANEOUS) as pool:
        answers = Counter(pool.map(submit_at_once, posters))

    assert answers == {"201": SIMULTANEOUS // 2, "302": SIMULTANEOUS // 2}, f"{answers}\n{processes.tail()}"
    assert Verification.objects.count() == SIMULTANEOUS

    # Ctrl-C with those runs in flight (each holds an LLM call about its sentence).
    wait_until(lambda: world.llm.held >= 1, READY_WITHIN_S, processes.tail)
    started = process_tree(script.pid)
    os.killpg(script.pid, signal.SIGINT)

    assert_all_end(started, "after Ctrl-C to scripts/run.sh with runs in flight")


# --- the processes a test starts are handed over ready


def test_a_worker_a_test_starts_is_handed_over_once_it_beats(processes, broker):
    worker = processes.worker(REDIS_URL=broker)

    assert WorkerProcess.objects.filter(name__contains=f":{worker.pid}:").exists()


SLOW_SERVER = """
import http.server, sys, time
time.sleep(float(sys.argv[2]))  # a loaded machine: imports and start-up take this long
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Answer).serve_forever()
"""


def test_a_web_server_slower_to_start_than_30_s_is_waited_for(processes):
    # On a 2-core machine at load average 10-17 web servers took over 30 s to answer.
    port = free_port()
    processes.start("slow-server", "-c", SLOW_SERVER, str(port), "31")

    processes.until_serving(port)


def test_a_process_a_test_starts_dies_with_the_test_run_even_after_sigkill(tmp_path):
    # A test run killed outright runs no fixture teardown: its servers must not outlive it.
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import pathlib, sys, time\n"
            "from tests.processes import Processes\n"
            f"processes = Processes({{'PATH': '/usr/bin:/bin'}}, pathlib.Path({str(tmp_path)!r}))\n"
            "child = processes.start('sleeper', '-c', 'import time; time.sleep(120)')\n"
            "print(child.pid, flush=True)\n"
            "time.sleep(120)\n",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    child = int(starter.stdout.readline())
    assert running({child}) == {child}

    starter.kill()
    starter.wait(10)

    assert_all_end({child}, "the process a killed test run had started")
