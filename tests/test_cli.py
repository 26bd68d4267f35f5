"""`manage.py verify` as a user runs it: separate processes, a file database, and either a
`celery worker` process on the real Redis or (no REDIS_URL) the embedded worker."""

import contextlib
import hashlib
import hmac
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import ROOT, world_environment
from tests.fakes import FakePage, FakeSite
from tests.processes import READY_WITHIN_S, wait_until

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


def test_verify_refuses_an_invalid_trail_naming_the_node(env, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"nodes": [{"id": "a", "text": "A.", "from": ["missing"]}]}))
    done = manage(env, "verify", "--trail", str(path))

    assert done.returncode == 1
    assert "'missing'" in done.stderr and "node 'a'" in done.stderr
