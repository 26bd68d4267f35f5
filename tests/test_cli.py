"""`manage.py verify` as a user runs it: separate processes, a file database, and either a
`celery worker` process on the real Redis or (no REDIS_URL) the embedded worker."""

import contextlib
import fcntl
import hashlib
import hmac
import io
import json
import os
import pty
import re
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import termios
import threading
import uuid
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import ROOT, free_port, world_environment
from tests.fakes import FakePage, FakeSite, LoopbackServer, _Handler
from tests.processes import READY_WITHIN_S, wait_until
from tests.test_trail_views import finished_trail
from tests.test_views import make_run
from verification.clients import providers
from verification.management.summaries import summary, trail_summary
from verification.models import Verification
from verification.selectors import verification_result
from verification.selectors.trail_result import trail_result

SAMPLE = ROOT / "sample.txt"


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory):
    """Migrated once; each test gets a copy (a migrate run costs seconds)."""
    path = tmp_path_factory.mktemp("db") / "template.sqlite3"
    manage(
        {"PATH": os.environ["PATH"], "DATABASE_URL": f"sqlite:///{path}", "DJANGO_SECRET_KEY": "x"},
        "migrate",
        "--no-input",
        "-v0",
        check=True,
    )
    return path


@pytest.fixture
def env(world, tmp_path, migrated_database):
    database = tmp_path / "cli.sqlite3"
    shutil.copy(migrated_database, database)
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{database}",
        **world_environment(world),
        "DJANGO_SECRET_KEY": "cli-test",
        "LOG_LEVEL": "WARNING",
        "CACHE_URL": "locmemcache://",
    }
    return environment


def manage(environment, *args, stdin=None, check=False, timeout=180):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


@pytest.fixture
def worker_process(env, redis_url):
    # Redis database 1: the in-process test worker consumes database 0 against another database.
    env["REDIS_URL"] = redis_url.rsplit("/", 1)[0] + "/1"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "factsite",
            "worker",
            "--pool=threads",
            "--concurrency=8",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: beating(env["DATABASE_URL"], process.pid), READY_WITHIN_S, "the celery worker beating")
    yield process
    process.terminate()
    process.wait(20)


def beating(database_url: str, pid: int) -> bool:
    """The worker has loaded the app and beats (verification.worker.heartbeat: its WorkerProcess row)."""
    with contextlib.closing(sqlite3.connect(database_url.removeprefix("sqlite:///"))) as database:
        found = database.execute("SELECT 1 FROM verification_workerprocess WHERE name LIKE ?", (f"%:{pid}:%",))
        return found.fetchone() is not None


def check_result(result: dict, world) -> None:
    assert result["status"] == "done", result["error"]
    assert len(result["sentences"]) == 7
    evidence = [e for s in result["sentences"] for c in s["claims"] for e in c["evidence"]]
    assert evidence and all(e["source_type"] and e["verdict"] for e in evidence if e["status"] == "done")
    counted = [e for e in evidence if e["verdict"] in ("supported", "not_supported", "irrelevant")]
    assert result["score_rule"] == "all"
    assert result["total"] == len(counted)
    assert result["score"] == sum(e["verdict"] == "supported" for e in counted) / len(counted)
    assert result["usage"]["llm_calls"] == sum(world.llm.calls.values())


def test_verify_runs_through_a_celery_worker_process_on_redis(env, worker_process, world, tmp_path):
    out = tmp_path / "out.json"
    done = manage(env, "verify", "--file", str(SAMPLE), "--json", str(out), "--mode", "sparse")

    assert done.returncode == 0, done.stderr
    check_result(json.loads(out.read_text()), world)
    assert "Overall credibility" in done.stdout and "LLM calls" in done.stdout
    assert "judgements" in done.stderr  # progress lines
    assert worker_process.poll() is None


def test_verify_without_redis_uses_the_embedded_worker(env, world, tmp_path):
    out = tmp_path / "out.json"
    done = manage(
        env, "verify", "--json", str(out), "--mode", "sparse", "--score-rule", "decisive", stdin=SAMPLE.read_text()
    )

    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["score_rule"] == "decisive"
    evidence = [e for s in result["sentences"] for c in s["claims"] for e in c["evidence"]]
    decisive = [e for e in evidence if e["verdict"] in ("supported", "not_supported")]
    assert result["total"] == len(decisive) < len([e for e in evidence if e["verdict"]])
    assert "score rule decisive" in done.stdout


def test_verify_with_dense_retrieval_loads_the_offline_model(env, world, tmp_path):
    out = tmp_path / "out.json"
    text = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
    done = manage(env, "verify", "--json", str(out), "--mode", "dense", "--top-k-passages", "1", stdin=text)

    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["settings"]["retrieval_mode"] == "dense"
    assert any(c["evidence"] for c in result["sentences"][0]["claims"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        ((), b"   \n ", "empty"),
        (("--top-k-results", "0"), b"Water boils at 100 degrees.", "top_k_results"),
        (("--model", "nope"), b"Water boils at 100 degrees.", "model"),
        ((), b"\xff\xfe\x00binary", "not UTF-8"),
        (("--file", "/nonexistent/text.txt"), b"", "cannot read"),
        (("--file", "-"), b"   \n ", "empty"),  # "-" is standard input, as for most commands
        (("--trail", "-"), b"[1]", "trail"),
        (
            ("--quick", "--evidence", "documents", "--source", "https://example.org/a", "--timeout", "5"),
            b"Water boils at 100 degrees.",
            "must never be mixed with your documents",
        ),
        (("--quick", "--trail", "/nonexistent/trail.json"), b"", "not offered with --trail"),
    ],
)
def test_verify_rejects_bad_input_with_a_clear_message(world, monkeypatch, args, stdin, message):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))

    with pytest.raises(CommandError, match=message):
        call_command("verify", *args)


@pytest.mark.django_db
def test_verify_names_the_missing_key(world, settings, monkeypatch):
    settings.SERPER_API_KEY = ""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Water boils at 100 degrees.")))

    with pytest.raises(CommandError, match="SERPER_API_KEY"):
        call_command("verify")


# --- limits, and a fresh clone

ONE_SENTENCE = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."


def stored_clients(environment) -> list[str]:
    with sqlite3.connect(environment["DATABASE_URL"].removeprefix("sqlite:///")) as db:
        return [client for (client,) in db.execute("SELECT client FROM verification_verification")]


def test_verify_counts_as_one_client_and_refuses_runs_over_the_hourly_limit(env, world):
    env["RUNS_PER_HOUR"] = "1"

    first = manage(env, "verify", "--mode", "sparse", stdin=ONE_SENTENCE)
    second = manage(env, "verify", "--mode", "sparse", stdin=ONE_SENTENCE)

    assert first.returncode == 0, first.stderr
    assert second.returncode == 2, second.stderr
    # The first run may take over a minute on a busy machine: 59 or 60 minutes are both right.
    assert re.search(
        r"Too many verifications from the command line: 1 in the last hour \(RUNS_PER_HOUR=1\)\. "
        r"Try again in (59|60) minutes\.",
        second.stderr,
    )
    assert "Traceback" not in second.stderr and not second.stdout
    cli = hmac.new(env["DJANGO_SECRET_KEY"].encode(), b"cli", hashlib.sha256).hexdigest()
    assert stored_clients(env) == [cli]


def test_verify_refuses_a_text_over_the_claim_budget_before_starting(env):
    env["MAX_CLAIMS_PER_RUN"] = "2"
    text = "The Eiffel Tower is in Paris. It was completed in 1889. It is 330 metres tall."

    done = manage(env, "verify", stdin=text)

    assert done.returncode == 2, done.stderr
    assert (
        "This text has 3 sentences; a run checks at most 2 claims (MAX_CLAIMS_PER_RUN). "
        "Shorten it or split it into several runs." in done.stderr
    )
    assert "Traceback" not in done.stderr
    assert stored_clients(env) == []


def test_verify_on_a_fresh_clone_creates_its_database_tables_first(env, world, tmp_path):
    database = tmp_path / "fresh.sqlite3"
    env["DATABASE_URL"] = f"sqlite:///{database}"
    out = tmp_path / "out.json"

    done = manage(env, "verify", "--json", str(out), "--mode", "sparse", stdin=ONE_SENTENCE)

    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["status"] == "done" and len(result["sentences"]) == 1
    assert "Overall credibility" in done.stdout
    assert len(stored_clients(env)) == 1


# --- the user's own documents


def test_verify_checks_a_summary_against_its_sources_without_searching(env, world, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nThe Eiffel Tower is a wrought-iron lattice tower in Paris, France.\n")
    library = FakeSite(
        pages={"/report": FakePage("Tower report", "The Eiffel Tower was completed in 1889 for the fair.")}
    ).start()
    out = tmp_path / "out.json"
    try:
        done = manage(
            env,
            *("verify", "--evidence", "documents", "--mode", "sparse", "--json", str(out)),
            *("--source", str(notes), "--source", library.url + "/report"),
            stdin="The Eiffel Tower is in Paris, France. It was completed in 1889.",
        )
    finally:
        library.stop()

    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["evidence"] == "documents" and world.serper.queries == []
    assert [(d["kind"], d["status"]) for d in result["documents"]] == [("url", "done"), ("file", "done")]
    assert result["documents"][1]["name"] == "notes.md"
    evidence = [e for s in result["sentences"] for c in s["claims"] for e in c["evidence"]]
    assert {e["source_type"] for e in evidence} == {"your_document"}
    assert sum(e["verdict"] == "supported" for e in evidence) >= 2


@pytest.mark.django_db
def test_verify_refuses_a_source_that_is_not_a_document(world, tmp_path, monkeypatch):
    junk = tmp_path / "photo.pdf"
    junk.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Water boils at 100 degrees.")))

    with pytest.raises(CommandError, match="photo.pdf is not a PDF, HTML, Markdown or text file"):
        call_command("verify", "--evidence", "documents", "--source", str(junk))


def test_verify_checks_a_trail_and_names_the_step_each_unsupported_claim_entered_at(env, world, tmp_path):
    out = tmp_path / "trail.json"
    done = manage(env, "verify", "--trail", str(ROOT / "docs" / "examples" / "trail.json"), "--json", str(out))

    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    verdicts = {claim["text"]: claim["verdict"] for claim in result["claims"]}
    assert verdicts == {
        "The Eiffel Tower opened in Paris in 1889.": "fully_supported",
        "The tower was painted gold in 1920.": "not_fully_supported",
        "The tower hosts a famous underwater aquarium.": "not_fully_supported",
    }
    assert "1 unsupported claim(s) entered at 'section summary'" in done.stdout
    assert "entered at the final step" in done.stdout
    assert world.serper.queries == []  # a trail is checked against its own texts, not the web
    # Its progress in a trail's terms (issue 38.8): it said "claims searched 3/3  pages 0/0".
    progress = [line for line in done.stderr.splitlines() if "%" in line]
    assert progress and all(TRAIL_PROGRESS.match(line) for line in progress), progress
    assert re.match(
        r"^100%  sentences 3/3  texts read (\d+)/\1  rounds judged (\d+)/\2  claims traced 3/3$", progress[-1]
    )


def test_verify_refuses_an_invalid_trail_naming_the_node(env, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"nodes": [{"id": "a", "text": "A.", "from": ["missing"]}]}))
    done = manage(env, "verify", "--trail", str(path))

    assert done.returncode == 1
    assert "'missing'" in done.stderr and "node 'a'" in done.stderr


# A trail run's progress line: what it reads and judges, round by round.
TRAIL_PROGRESS = re.compile(
    r"^ *\d+%  sentences \d+/\d+  texts read \d+/\d+  rounds judged \d+/\d+  claims traced \d+/\d+$"
)


# --- quiet by default: the command's own lines on standard error, the task log when asked

# verify.progress_line's format, which programs and these tests read.
PROGRESS = re.compile(
    r"^ *\d+%(  starting: [a-z ]+)?"
    r"  sentences \d+/\d+  claims searched \d+/\d+  pages \d+/\d+  judgements \d+/\d+$"
)


def test_verify_keeps_the_task_log_off_standard_error_by_default(env, world):
    env["LOG_LEVEL"] = "INFO"  # settings.py's default

    done = manage(env, "verify", "--mode", "sparse", "--file", str(SAMPLE))

    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert re.fullmatch(r"verification [0-9a-f-]{36} started", lines[0]), done.stderr
    assert all(PROGRESS.match(line) for line in lines[1:]), done.stderr
    assert lines[-1].startswith("100%")
    assert "Task verification." not in done.stderr and "HTTP Request" not in done.stderr
    assert "No hostname was supplied" not in done.stderr


@pytest.mark.parametrize("asked", [("-v", "2"), ("--log",)])
def test_verify_shows_the_task_log_when_asked(env, world, asked):
    env["LOG_LEVEL"] = "INFO"

    done = manage(env, "verify", "--mode", "sparse", *asked, stdin=ONE_SENTENCE)

    assert done.returncode == 0, done.stderr
    assert "Task verification.tasks.verification_start" in done.stderr
    assert "HTTP Request: POST" in done.stderr
    assert any(PROGRESS.match(line) for line in done.stderr.splitlines())


def test_verify_redraws_its_progress_in_place_on_a_terminal(env, world):
    terminal, its_end = pty.openpty()
    fcntl.ioctl(its_end, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # as a terminal says its size
    process = subprocess.Popen(
        [sys.executable, "manage.py", "verify", "--mode", "sparse", "--file", str(SAMPLE)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=its_end,
    )
    os.close(its_end)
    shown = bytearray()
    reader = threading.Thread(target=_read_all, args=(terminal, shown))
    reader.start()
    stdout, _ = process.communicate(timeout=180)
    reader.join(30)
    os.close(terminal)
    screen = shown.decode(errors="replace")

    assert process.returncode == 0, screen
    assert "Overall credibility" in stdout.decode()
    progress = [line for line in screen.split("\n") if "judgements" in line]
    assert len(progress) == 1, screen  # one line, redrawn with carriage returns
    # Every judgement counted made (how many depends on the pages found, second searches included).
    assert progress[0].count("\r") > 1 and "100%" in progress[0] and re.search(r"judgements (\d+)/\1\b", progress[0])


def _read_all(terminal: int, into: bytearray) -> None:
    with contextlib.suppress(OSError):  # EIO: every writer has closed the terminal
        while chunk := os.read(terminal, 4096):
            into.extend(chunk)


# --- Ctrl-C

HELD_TEXT = "The Eiffel Tower is in Paris, France. It was completed in 1889. It is made of steel."


def start_manage(environment, *args) -> subprocess.Popen:
    """`manage.py` in a process group of its own, as a terminal starts a command: a Ctrl-C
    (SIGINT to the group) reaches it and every process it started."""
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def waits_on_a_pipe(pid: int) -> bool:
    """From /proc: the process sleeps reading a pipe (its standard input here)."""
    return "pipe" in Path(f"/proc/{pid}/wchan").read_text()


def test_ctrl_c_while_verify_waits_for_its_text_exits_130_without_a_traceback(env):
    verify = start_manage(env, "verify")  # no --file: it reads standard input, left open
    wait_until(lambda: waits_on_a_pipe(verify.pid), READY_WITHIN_S, "verify reading standard input")

    os.killpg(verify.pid, signal.SIGINT)

    assert verify.wait(60) == 130
    _, stderr = verify.communicate()
    assert stderr.strip() == "CommandError: interrupted", stderr
    assert stored_clients(env) == []


def test_ctrl_c_during_a_run_exits_130_and_says_where_its_result_will_be(env, world):
    world.llm.held_words = ("1889",)  # the run is in flight: the calls about this sentence wait
    verify = start_manage(env, "verify", "--mode", "sparse")
    verify.stdin.write(HELD_TEXT)
    verify.stdin.close()
    verify.stdin = None
    wait_until(lambda: world.llm.held >= 1, READY_WITHIN_S, "the run's LLM calls")

    os.killpg(verify.pid, signal.SIGINT)

    assert verify.wait(60) == 130
    _, stderr = verify.communicate()
    (run,) = sqlite3.connect(env["DATABASE_URL"].removeprefix("sqlite:///")).execute(
        "SELECT id FROM verification_verification"
    )
    assert "CommandError: interrupted: the run is left unfinished" in stderr
    assert f"its result will be at /v/{uuid.UUID(run[0])})" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


# --- the LLM server, checked once before the run


@contextlib.contextmanager
def not_http_server():
    """Something on a port of 127.0.0.1 that answers, but not in HTTP (an SSH server, say)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = listener.accept()
                with connection:
                    connection.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

    threading.Thread(target=answer, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        listener.close()


@contextlib.contextmanager
def closed_port():
    yield f"http://127.0.0.1:{free_port()}/v1"


@pytest.mark.parametrize("server", [closed_port, not_http_server])
@pytest.mark.parametrize("command", [(), ("--trail", str(ROOT / "docs" / "examples" / "trail.json"))])
def test_verify_refuses_an_llm_server_it_cannot_reach_before_creating_a_run(env, world, server, command):
    with server() as base_url:
        env["OPENAI_BASE_URL"] = base_url
        done = manage(env, "verify", "--mode", "sparse", *command, stdin=ONE_SENTENCE)

    assert done.returncode == 1, done.stderr
    assert f"at {base_url} (OPENAI_BASE_URL)" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert stored_clients(env) == []  # no run was created
    assert world.llm.requests == []


class _NoModelsList(_Handler):
    def do_GET(self) -> None:
        self._json(404, {"error": {"message": "not found"}})


@pytest.mark.parametrize("answer", ["a models list", "404 in JSON"])
def test_the_llm_server_check_takes_any_http_answer(world, settings, answer):
    server = LoopbackServer(_NoModelsList).start() if answer == "404 in JSON" else world.llm
    try:
        settings.OPENAI_BASE_URL = server.url + "/v1"

        assert providers.llm_server_problem(None) == ""
    finally:
        if server is not world.llm:
            server.stop()


@pytest.mark.django_db
def test_the_summary_of_a_run_answered_from_the_cache_says_how_many_answers_were_reused(configured):
    """ "LLM calls 0" alone read as if nothing was asked: the answers came from the cache."""
    run = make_run("The Eiffel Tower is in Paris.")
    Verification.objects.filter(pk=run.pk).update(
        llm_calls=0, llm_cached=3, searches=0, searches_cached=1, finished_at=run.created_at
    )
    run.refresh_from_db()
    trail = finished_trail()
    Verification.objects.filter(pk=trail.pk).update(llm_calls=1, llm_cached=5)
    trail.refresh_from_db()

    said = summary(verification_result(run), run).splitlines()[-1]
    trail_said = trail_summary(trail_result(trail, with_texts=True)).splitlines()[-1]

    assert said.startswith("LLM calls 0 (3 answers reused from the cache; 0 prompt + 0 completion tokens)")
    assert said.endswith("web searches 0 (1 reused from the cache)")
    assert trail_said.startswith("LLM calls 1 (5 answers reused from the cache; 0 prompt + 0 completion tokens)")
