"""Tokens and LLM calls per answer, by step, for the code in the current directory.

    cd <a checkout> && python <path>/bench/tokens.py [--out evidence.json] [--compare other.json]

Runs the chatbot-like answers of bench/answers.py through the real pipeline (embedded Celery
worker, SQLite, a fresh in-memory cache) against the fakes of tests/fakes.py: FakeLLM, FakeSerper
and a simulated web built from the answers' sentences (bench/web.py), all on 127.0.0.1. Counts
come from what FakeLLM received (prompt: len(text)//4, as the fake counts) and wrote
(completion: len(answer)//4). The fakes are imported from the checkout being measured, so the
fake reads that checkout's prompts. `--out` writes the (claim, url, passage) triples the judge
saw; `--compare` checks them against another checkout's file: the same evidence must be judged."""

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from multiprocessing import resource_tracker
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, os.getcwd())  # the checkout being measured: its verification and tests.fakes


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_tokens_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="write the judged (claim, url, passage) triples here")
    parser.add_argument("--compare", help="a file --out wrote for another checkout")
    args = parser.parse_args()
    answers = _load("answers").ANSWERS
    from bench.web import build_sites
    from tests.fakes import FakeLLM, FakeSerper
    from verification.pipeline.segment import segment

    sentences = [s.text for text in answers for s in segment(text)]
    sites = [site.start() for site in build_sites(sentences, pages_per_sentence=5)]
    serper = FakeSerper(sites=sites).start()
    written: list[tuple[str, int]] = []

    class CountingLLM(FakeLLM):
        def answer(self, request):
            status, content = super().answer(request)
            with self._lock:
                written.append((id(request), len(content) // 4 if status == 200 else 0))
            return status, content

    llm = CountingLLM().start()
    workdir = tempfile.mkdtemp(prefix="tokens-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="factsite.settings",
        DATABASE_URL=f"sqlite:///{workdir}/db.sqlite3",
        CACHE_URL="locmemcache://",
        OPENAI_API_KEY="fake",
        OPENAI_BASE_URL=llm.url + "/v1",
        LLM_MODELS="fake-model",
        SERPER_API_KEY=serper.api_key,
        SERPER_BASE_URL=serper.url,
        SEARCH_PROVIDERS="serper",
        ALLOW_PRIVATE_FETCH="1",
        REDIS_URL="",
        SECRET_KEY="bench-tokens-" + "x" * 50,
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from verification import services
    from verification.models import Evidence, Verification
    from verification.worker import start

    settings = {
        "model": "fake-model",
        "retrieval_mode": "sparse",
        "top_k_results": 5,
        "top_k_passages": 3,
        "context_size": 1,
        "evidence": "web",
    }
    rows, triples = [], []
    for number, text in enumerate(answers, start=1):
        first = len(llm.requests)
        verification = services.verification_create(text=text, settings=settings)
        start.enqueue_verification(verification)
        deadline = time.monotonic() + 120
        while Verification.objects.get(pk=verification.pk).status not in ("done", "failed"):
            if time.monotonic() > deadline:
                raise SystemExit(f"answer {number} did not finish")
            time.sleep(0.05)
        time.sleep(0.3)  # late categorize answers of this run
        run = Verification.objects.get(pk=verification.pk)
        by_kind: dict[str, Counter] = defaultdict(Counter)
        completion = dict(written)
        for request in llm.requests[first:]:
            kind = _kind(request)
            prompt = " ".join(m["content"] for m in request["messages"])
            by_kind[kind]["calls"] += 1
            by_kind[kind]["prompt"] += len(prompt) // 4
            by_kind[kind]["completion"] += completion.get(id(request), 0)
        judged = Evidence.objects.filter(claim__sentence__verification=run).exclude(verdict="")
        evidence = sorted({(e.claim.text, e.source.url.split("/", 3)[-1], e.passage) for e in judged})
        triples.append(evidence)
        rows.append((number, run.sentences.count(), len(evidence), run, by_kind))
    _report(rows)
    if args.out:
        Path(args.out).write_text(json.dumps(triples, indent=1))
    if args.compare:
        other = [[tuple(t) for t in answer] for answer in json.loads(Path(args.compare).read_text())]
        mine = [[tuple(t) for t in answer] for answer in triples]
        same = other == mine
        print(f"same judged evidence as {args.compare}: {same}")
        if not same:
            for n, (a, b) in enumerate(zip(other, mine, strict=True), start=1):
                print(f"  answer {n}: only there {len(set(a) - set(b))}, only here {len(set(b) - set(a))}")
    from verification.worker import cpu

    cpu.stop()  # the CPU pool's processes end with this one, not half a second after it
    # And multiprocessing's resource tracker, reaped here: after os._exit it would end on its
    # own, orphaned, moments after this process.
    with contextlib.suppress(Exception):
        resource_tracker._resource_tracker._stop()
    shutil.rmtree(workdir, ignore_errors=True)  # its SQLite database
    os._exit(0)  # the embedded worker's threads


def _kind(request) -> str:
    schema = (request.get("response_format") or {}).get("json_schema", {}).get("name", "")
    system = request["messages"][0]["content"]
    if "claims" in schema or "atomic claims" in system:
        return "decompose"
    if "source_type" in schema or "classify websites" in system:
        return "categorize"
    return "judge"


def _report(rows) -> None:
    kinds = ("decompose", "judge", "categorize")
    print(f"{'answer':>6} {'sent':>4} {'evid':>4} | " + " | ".join(f"{k:^24}" for k in kinds) + " | total")
    print(
        f"{'':>6} {'':>4} {'':>4} | "
        + " | ".join(f"{'calls':>5} {'prompt':>8} {'compl':>8}" for _ in kinds)
        + " | calls tokens (run usage)"
    )
    totals: dict[str, Counter] = defaultdict(Counter)
    sentences = 0
    for number, count, evidence, run, by_kind in rows:
        sentences += count
        cells = []
        for kind in kinds:
            c = by_kind[kind]
            totals[kind].update(c)
            cells.append(f"{c['calls']:>5} {c['prompt']:>8} {c['completion']:>8}")
        tokens = run.prompt_tokens + run.completion_tokens
        print(f"{number:>6} {count:>4} {evidence:>4} | " + " | ".join(cells) + f" | {run.llm_calls:>5} {tokens:>6}")
    calls = sum(t["calls"] for t in totals.values())
    tokens = sum(t["prompt"] + t["completion"] for t in totals.values())
    print(
        f"{'all':>6} {sentences:>4} {'':>4} | "
        + " | ".join(f"{totals[k]['calls']:>5} {totals[k]['prompt']:>8} {totals[k]['completion']:>8}" for k in kinds)
        + f" | {calls:>5} {tokens:>6}"
    )
    n = len(rows)
    print(
        f"per answer: {calls / n:.1f} calls, {tokens / n:.0f} tokens; "
        f"per sentence: {calls / sentences:.2f} calls, {tokens / sentences:.0f} tokens"
    )
    for kind in kinds:
        t = totals[kind]
        per_sentence = (t["prompt"] + t["completion"]) / sentences
        print(
            f"  {kind:<10} per answer: {t['calls'] / n:5.1f} calls, {t['prompt'] / n:7.0f} prompt, "
            f"{t['completion'] / n:6.0f} completion; per sentence: {per_sentence:6.0f} tokens"
        )


if __name__ == "__main__":
    main()
