"""The factsite benchmark: full verifications through the real Celery path (worker processes
on a real Redis) against simulated services on 127.0.0.1 with set latencies.

    .venv/bin/python bench/run.py                 # prints the table
    .venv/bin/python bench/run.py --json out.json # and writes the numbers, to compare commits

Needs redis-server on PATH (scripts/test.sh installs it)."""

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.web import build_sites, generated_texts  # noqa: E402
from tests.fakes import FakeLLM, FakeSerper  # noqa: E402
from verification.pipeline.segment import segment  # noqa: E402

EDIT = ("Around seven million people", "Around six million people")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llm-latency", type=float, default=1.0, help="seconds per LLM call (default 1.0)")
    parser.add_argument("--search-latency", type=float, default=0.5, help="seconds per search (default 0.5)")
    parser.add_argument("--page-latency", type=float, default=0.5, help="seconds per page (default 0.5)")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes (default 2)")
    parser.add_argument("--concurrency", type=int, default=32, help="threads per worker (default 32)")
    parser.add_argument("--runs", type=int, default=20, help="runs submitted at once for throughput (default 20)")
    parser.add_argument("--mode", choices=["sparse", "dense"], default="sparse", help="retrieval mode (default sparse)")
    parser.add_argument("--recompute-requests", type=int, default=200)
    parser.add_argument(
        "--database-url", help="run against this database instead of a fresh SQLite file (e.g. PostgreSQL)"
    )
    parser.add_argument("--json", dest="json_out", help="also write the results as JSON here")
    parser.add_argument("--worker-log", help="write the workers' task log (INFO) to this file, to see where time goes")
    parser.add_argument("--only-single", action="store_true", help="measure the 7-sentence passage only")
    return parser.parse_args()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_redis(workdir: str) -> tuple[subprocess.Popen, str]:
    binary = shutil.which("redis-server")
    if not binary:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    return process, f"redis://127.0.0.1:{port}/0"


def start_worker(env: dict, concurrency: int, name: str, log: str | None) -> subprocess.Popen:
    command = [sys.executable, "-m", "celery", "-A", "factsite", "worker", "--pool=threads"]
    command += [
        f"--concurrency={concurrency}",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-n",
        name,
    ]
    command += ["--loglevel=INFO", f"--logfile={log}"] if log else ["--loglevel=WARNING"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def submit(text: str, mode: str):
    from verification import services, tasks
    from verification.forms import DEFAULT_SETTINGS

    settings = {**DEFAULT_SETTINGS, "model": "bench-model", "retrieval_mode": mode}
    verification = services.verification_create(text=text, settings=settings)
    tasks.enqueue_verification(verification)
    return verification


def wait(verifications, timeout: float = 600) -> float:
    """Seconds until every run has finished (wall clock, measured here)."""
    from verification.models import FINISHED, Verification

    start = time.monotonic()
    ids = [v.pk for v in verifications]
    while Verification.objects.filter(pk__in=ids).exclude(status__in=FINISHED).exists():
        if time.monotonic() - start > timeout:
            raise SystemExit(f"runs did not finish within {timeout} s")
        time.sleep(0.02)
    return time.monotonic() - start


def run_once(text: str, mode: str) -> dict:
    from verification.models import Claim, Evidence, Source

    started = time.monotonic()
    verification = submit(text, mode)
    wait([verification])
    wall = time.monotonic() - started
    verification.refresh_from_db()
    sentences = verification.sentences.count()
    evidence = Evidence.objects.filter(claim__sentence__verification=verification).count()
    sources = Source.objects.filter(verification=verification).count()
    return {
        "status": verification.status,
        "wall_s": round(wall, 3),
        "sentences": sentences,
        "claims": Claim.objects.filter(sentence__verification=verification).count(),
        "evidence": evidence,
        "sources": sources,
        "llm_calls": verification.llm_calls,
        "prompt_tokens": verification.prompt_tokens,
        "completion_tokens": verification.completion_tokens,
        "searches": verification.searches,
        # FACTS&EVIDENCE: one call per sentence to decompose, one per (claim, evidence) to judge,
        # one per source to categorize.
        "paper_llm_calls": sentences + evidence + sources,
    }


def build_large_run(sentences: int = 50, claims_per_sentence: int = 3, evidence_per_claim: int = 6):
    """A stored, finished run of 50 sentences, 150 claims and 900 evidence items."""
    from verification.models import Claim, Evidence, SearchResult, Sentence, Source, SourceType, Verdict, Verification

    rng = random.Random(3)
    text = " ".join(f"Sentence number {i} states a fact about topic {i}." for i in range(sentences))
    run = Verification.objects.create(text=text, settings={"model": "bench-model"}, status="done")
    position, rows = 0, []
    for i in range(sentences):
        piece = f"Sentence number {i} states a fact about topic {i}."
        rows.append(
            Sentence(
                verification=run,
                index=i,
                text=piece,
                start=position,
                end=position + len(piece),
                paragraph_index=i // 5,
                context=[piece],
                position_in_context=0,
                status="done",
            )
        )
        position += len(piece) + 1
    sentence_rows = Sentence.objects.bulk_create(rows)
    claims = Claim.objects.bulk_create(
        [
            Claim(sentence=s, index=k, text=f"Claim {k} of {s.index}", query="q", status="done")
            for s in sentence_rows
            for k in range(claims_per_sentence)
        ]
    )
    sources = Source.objects.bulk_create(
        [
            Source(
                verification=run,
                url=f"https://site{n}.example/page",
                host=f"site{n}.example",
                title=f"Page {n}",
                source_type=rng.choice(SourceType.values),
                status="done",
            )
            for n in range(60)
        ]
    )
    SearchResult.objects.bulk_create(
        [
            SearchResult(claim=c, source=sources[(c.pk + k) % 60], rank=k + 1, status="done")
            for c in claims
            for k in range(evidence_per_claim)
        ]
    )
    Evidence.objects.bulk_create(
        [
            Evidence(
                claim=c,
                source=sources[(c.pk + k) % 60],
                index=0,
                passage="A passage. " * 30,
                highlights=[[0, 10]],
                relevance=rng.random(),
                verdict=rng.choice(Verdict.values),
                rationale="Because. " * 10,
                status="done",
            )
            for c in claims
            for k in range(evidence_per_claim)
        ]
    )
    return run


def measure_recompute(requests: int) -> dict:
    """Server-side latency of the live-toggle request (the HTMX fragment), in process."""
    from django.test import Client

    from verification.models import Evidence, SourceType

    run = build_large_run()
    evidence_ids = list(Evidence.objects.filter(claim__sentence__verification=run).values_list("pk", flat=True))
    rng = random.Random(5)
    client = Client(HTTP_HX_REQUEST="true")
    client.get(f"/v/{run.pk}")  # warm templates and connections
    timings = []
    for _ in range(requests):
        excluded = ",".join(map(str, rng.sample(evidence_ids, rng.randint(1, 40))))
        types = ",".join(rng.sample(SourceType.values, rng.randint(0, 2)))
        url = f"/v/{run.pk}?sentence={rng.randrange(50)}&exclude_evidence={excluded}&exclude_types={types}"
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    timings.sort()
    return {
        "evidence": len(evidence_ids),
        "p50_ms": round(statistics.median(timings), 1),
        "p95_ms": round(timings[int(0.95 * len(timings)) - 1], 1),
    }


def clear_caches() -> None:
    from django.core.cache import cache

    from verification.models import HostCategory

    cache.clear()
    HostCategory.objects.all().delete()


def main() -> None:
    args = parse_args()
    workdir = tempfile.mkdtemp(prefix="factsite-bench-")
    processes: list[subprocess.Popen] = []
    try:
        redis, redis_url = start_redis(workdir)
        processes.append(redis)
        results = run_benchmark(args, workdir, redis_url, processes)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(results)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))


def run_benchmark(args, workdir: str, redis_url: str, processes: list) -> dict:
    """Simulated services in this process, Celery workers in others, this process submitting."""
    sample = (ROOT / "sample.txt").read_text()
    edited = sample.replace(*EDIT)
    texts = generated_texts(args.runs + 1)
    sentences = [s.text for text in [sample, edited, *texts] for s in segment(text)]
    sites = [site.start() for site in build_sites(list(dict.fromkeys(sentences)), latency=args.page_latency)]
    serper = FakeSerper(sites=sites, latency=args.search_latency).start()
    llm = FakeLLM(latency=args.llm_latency).start()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "factsite.settings",
        "DATABASE_URL": args.database_url or f"sqlite:///{workdir}/bench.sqlite3",
        "REDIS_URL": redis_url,
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": llm.url + "/v1",
        "LLM_MODELS": "bench-model",
        "SERPER_API_KEY": serper.api_key,
        "SERPER_BASE_URL": serper.url,
        "ALLOW_PRIVATE_FETCH": "1",
        "DJANGO_ALLOWED_HOSTS": "testserver,127.0.0.1",
        "DJANGO_SECRET_KEY": "bench",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    for n in range(args.workers):
        processes.append(start_worker(env, args.concurrency, f"bench{n}@%h", args.worker_log))
    return benchmark(args, sample, edited, texts)


def benchmark(args, sample: str, edited: str, texts: list[str]) -> dict:
    run_once(texts[-1], args.mode)  # warm-up: worker imports, connections, model load
    clear_caches()
    single = run_once(sample, args.mode)
    bound = 2 * args.llm_latency + args.search_latency + args.page_latency
    single |= {"critical_path_s": bound, "ratio": round(single["wall_s"] / bound, 2)}
    if args.only_single:
        return {"settings": vars(args) | {"json_out": None}, "single": single}
    edited_run = run_once(edited, args.mode)
    clear_caches()
    started = time.monotonic()
    batch = [submit(text, args.mode) for text in texts[: args.runs]]
    wait(batch)
    total = time.monotonic() - started
    from verification.models import Verification

    finished = Verification.objects.filter(pk__in=[v.pk for v in batch], status="done").count()
    return {
        "settings": vars(args) | {"json_out": None},
        "single": single,
        "edited_rerun": edited_run,
        "recompute": measure_recompute(args.recompute_requests),
        "throughput": {"runs": args.runs, "finished": finished, "wall_s": round(total, 2)},
    }


def print_table(r: dict) -> None:
    if "recompute" not in r:
        print(json.dumps(r["single"], indent=2))
        return
    s, e, c, t = r["single"], r["edited_rerun"], r["recompute"], r["throughput"]
    rows = [
        ("7-sentence passage: wall time", f"{s['wall_s']:.2f} s"),
        ("critical-path bound (decompose + search + fetch + judge)", f"{s['critical_path_s']:.2f} s"),
        ("ratio wall / bound", f"{s['ratio']:.2f}"),
        (
            "sentences / claims / evidence / sources",
            f"{s['sentences']} / {s['claims']} / {s['evidence']} / {s['sources']}",
        ),
        ("LLM calls (FACTS&EVIDENCE scheme for the same evidence)", f"{s['llm_calls']} ({s['paper_llm_calls']})"),
        ("prompt / completion tokens", f"{s['prompt_tokens']} / {s['completion_tokens']}"),
        ("web searches", f"{s['searches']}"),
        (
            "edited text, one sentence changed: LLM calls / searches",
            f"{e['llm_calls']} / {e['searches']}  ({e['wall_s']:.2f} s)",
        ),
        (f"recompute p50 / p95 ({c['evidence']} evidence, server-side)", f"{c['p50_ms']} / {c['p95_ms']} ms"),
        (
            f"throughput: {t['runs']} runs at once, {r['settings']['workers']} workers",
            f"{t['finished']}/{t['runs']} done in {t['wall_s']:.1f} s",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'measure'.ljust(width)}  value")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
