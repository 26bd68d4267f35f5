"""A trail run beside documents mode on the same sources and final text: LLM tokens, calls and
wall time per claim, and whether the planted errors' steps are found.

    .venv/bin/python bench/trails.py [--out bench/results/trails.json] [--rank-top-k 20 0]
        [--source-sentences 120 300]

The bench trail is a three-level hierarchical summary: 8 sources of generated article prose
(bench/prose.py: 120-300 sentences each, about 3-7k words, like long web pages) → 4 section
summaries → 2 part summaries → a final text of 9 sentences. Its final text states 4 facts that
come down from the sources, and 5 claims planted at known steps: at a section summary (2), at a
part summary (2) and at the final step (1). Documents mode checks the same final text against the
8 sources as uploaded documents (evidence "documents", BM25). Both run on the real pipeline
(embedded Celery worker, SQLite, a cache cleared before each run) against tests/fakes.FakeLLM on
127.0.0.1, which takes the time a served model takes (--first-token, --prompt-rate, --rate) and
answers every step by what its prompt says (tests/trail_model.py for the trail's)."""

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from multiprocessing import resource_tracker
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import prose  # noqa: E402

PLACES = ["Norbridge", "Easthaven", "Millford", "Caldwick", "Brightmoor", "Ashcombe", "Wexley", "Thornby"]
THINGS = ["ferry", "canal", "mill", "quarry", "chapel", "library", "market", "lighthouse"]


def fact(i: int) -> str:
    return f"The {PLACES[i]} {THINGS[i]} carried {300 + 17 * i} passengers in {1880 + 3 * i}."


# Claims planted at a step: (text, the node that first states it).
PLANTED = [
    ("The Norbridge ferry was painted crimson in 1921.", "section-1"),
    ("The Caldwick quarry flooded during the storm of 1931.", "section-2"),
    ("The Easthaven canal froze solid every winter until 1950.", "part-1"),
    ("The Wexley library burned down after a lightning strike.", "part-2"),
    ("The Thornby lighthouse became a famous jazz club downtown.", "final"),
]
SUPPORTED = [0, 2, 5, 7]  # the facts (by source) the final text repeats


def filler(rng: random.Random, topic: prose.Topic, count: int) -> list[str]:
    return [prose.sentence(rng, topic) for _ in range(count)]


def bench_trail(seed: int = 7, source_sentences: tuple[int, int] = (120, 300)) -> dict:
    rng = random.Random(seed)
    topic = prose.topic_of("The Norbridge town hall was built in 1889.", "")
    sources = []
    for i in range(8):
        body = filler(rng, topic, rng.randint(*source_sentences))
        body.insert(rng.randrange(len(body)), fact(i))
        sources.append({"id": f"source-{i + 1}", "step": "source", "from": [], "text": " ".join(body)})
    planted = {node: text for text, node in PLANTED}
    sections = []
    for s in range(4):
        lines = [fact(2 * s), fact(2 * s + 1), *filler(rng, topic, 4)]
        if f"section-{s + 1}" in planted:
            lines.insert(2, planted[f"section-{s + 1}"])
        inputs = [f"source-{2 * s + 1}", f"source-{2 * s + 2}"]
        sections.append({"id": f"section-{s + 1}", "step": "section summary", "from": inputs, "text": " ".join(lines)})
    parts = []
    for p in range(2):
        own = [2 * p, 2 * p + 1]
        lines = [fact(i) for s in own for i in (2 * s, 2 * s + 1)]
        lines += [text for text, node in PLANTED if node in (f"section-{s + 1}" for s in own)]
        lines.insert(3, planted[f"part-{p + 1}"])
        inputs = [f"section-{s + 1}" for s in own]
        parts.append({"id": f"part-{p + 1}", "step": "part summary", "from": inputs, "text": " ".join(lines)})
    final = [fact(i) for i in SUPPORTED] + [text for text, _ in PLANTED]
    final_node = {"id": "final", "step": "final summary", "from": ["part-1", "part-2"], "text": " ".join(final)}
    return {"nodes": [*sources, *sections, *parts, final_node]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="write the measurements as JSON here")
    parser.add_argument("--first-token", type=float, default=0.3, help="seconds to the first token")
    parser.add_argument("--prompt-rate", type=float, default=3000, help="prompt tokens read per second")
    parser.add_argument("--rate", type=float, default=60, help="completion tokens written per second")
    parser.add_argument(
        "--rank-top-k", type=int, nargs="+", default=[20, 0], help="trail runs to measure (0: every sentence sent)"
    )
    parser.add_argument(
        "--source-sentences",
        type=int,
        nargs=2,
        default=[120, 300],
        metavar=("MIN", "MAX"),
        help="each source's length in sentences (20 40: short pages, sent whole without ranking)",
    )
    args = parser.parse_args()
    from tests.fakes import FakeLLM

    llm = FakeLLM(first_token_s=args.first_token, prompt_tokens_per_s=args.prompt_rate, tokens_per_s=args.rate).start()
    workdir = tempfile.mkdtemp(prefix="bench-trails-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="factsite.settings",
        DATABASE_URL=f"sqlite:///{workdir}/db.sqlite3",
        CACHE_URL="locmemcache://",
        OPENAI_API_KEY="fake",
        OPENAI_BASE_URL=llm.url + "/v1",
        LLM_MODELS="fake-model",
        SEARCH_PROVIDERS="wikipedia",
        REDIS_URL="",
        MAX_UPLOAD_BYTES=str(2**24),
        CPU_PROCESSES="0",
        SECRET_KEY="bench-trails-" + "x" * 50,
    )
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    trail = bench_trail(source_sentences=tuple(args.source_sentences))
    rows = [measure_documents(trail, llm)]
    for top_k in args.rank_top_k:
        settings.TRAIL_RANK_TOP_K = top_k
        rows.append(measure_trail(trail, llm, label=f"trail, top {top_k}" if top_k else "trail, every sentence"))
    report(rows)
    if args.out:
        Path(args.out).write_text(json.dumps({"settings": vars(args), "rows": rows}, indent=2))
    llm.stop()
    with contextlib.suppress(Exception):
        resource_tracker._resource_tracker._stop()
    os._exit(0)  # the embedded worker's threads


def _wait(verification_id, timeout: float = 900):
    from verification.models import Verification

    deadline = time.monotonic() + timeout
    while (run := Verification.objects.get(pk=verification_id)).status not in ("done", "failed"):
        if time.monotonic() > deadline:
            raise SystemExit(f"run {verification_id} did not finish")
        time.sleep(0.05)
    return run


def _by_step(requests: list) -> dict:
    """Calls and prompt tokens (characters / 4, as the fake counts) by the step that asked."""
    steps: dict = {}
    for request in requests:
        system = request["messages"][0]["content"]
        name = (request.get("response_format") or {}).get("json_schema", {}).get("name") or system[:30]
        step = steps.setdefault(name, {"calls": 0, "prompt_tokens": 0})
        step["calls"] += 1
        step["prompt_tokens"] += sum(len(m["content"]) for m in request["messages"]) // 4
    return steps


def _row(label: str, run, wall: float, calls_before: int, llm) -> dict:
    from verification.models import Claim

    claims = Claim.objects.filter(sentence__verification=run).count()
    tokens = run.prompt_tokens + run.completion_tokens
    return {
        "mode": label,
        "status": run.status,
        "claims": claims,
        "llm_calls": len(llm.requests) - calls_before,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "tokens_per_claim": tokens / max(claims, 1),
        "calls_per_claim": (len(llm.requests) - calls_before) / max(claims, 1),
        "wall_s": wall,
        "wall_per_claim_s": wall / max(claims, 1),
        "by_step": _by_step(llm.requests[calls_before:]),
    }


def measure_documents(trail: dict, llm) -> dict:
    from django.core.cache import cache
    from django.core.files.uploadedfile import SimpleUploadedFile

    from verification import services
    from verification.inputs.documents import uploaded_document
    from verification.worker import start

    cache.clear()
    sources = [node for node in trail["nodes"] if not node["from"]]
    drafts = [uploaded_document(SimpleUploadedFile(f"{n['id']}.txt", n["text"].encode())) for n in sources]
    final = trail["nodes"][-1]["text"]
    settings = {"model": "fake-model", "retrieval_mode": "sparse", "top_k_results": 5, "top_k_passages": 3}
    settings |= {"context_size": 1, "evidence": "documents"}
    before, started = len(llm.requests), time.monotonic()
    run = services.verification_create(text=final, settings=settings, documents=drafts)
    start.enqueue_verification(run)
    run = _wait(run.pk)
    return _row("documents", run, time.monotonic() - started, before, llm)


def measure_trail(trail: dict, llm, *, label: str) -> dict:
    from django.core.cache import cache

    from verification import services
    from verification.inputs.trails import trail_submission
    from verification.selectors.trail_result import trail_result
    from verification.worker import start

    cache.clear()
    submission = trail_submission(trail)
    before, started = len(llm.requests), time.monotonic()
    run = services.trail_create(trail=submission.trail, settings=submission.settings, segments=submission.segments)
    start.enqueue_verification(run)
    run = _wait(run.pk)
    row = _row(label, run, time.monotonic() - started, before, llm)
    result = trail_result(run, with_texts=False)
    claims = {claim["text"]: claim for claim in result["claims"]}
    found = 0
    for text, node in PLANTED:
        entered = (claims.get(text) or {}).get("entered") or {}
        found += (entered.get("kind") == "final_step") if node == "final" else node in entered.get("nodes", [])
    paths = 0
    for i in SUPPORTED:
        path = (claims.get(fact(i)) or {}).get("path") or {}
        paths += path.get("sources") == [f"source-{i + 1}"]
    row |= {"planted_steps_found": f"{found}/{len(PLANTED)}", "supported_paths_found": f"{paths}/{len(SUPPORTED)}"}
    return row


def report(rows: list[dict]) -> None:
    base = rows[0]
    print(
        "| mode | claims | LLM calls | prompt tokens | completion tokens | tokens/claim (× documents) "
        "| wall s | wall/claim s (× documents) | planted steps | supported paths |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: | :---: |")
    for row in rows:
        tokens = f"{row['tokens_per_claim']:.0f} ({row['tokens_per_claim'] / base['tokens_per_claim']:.2f}×)"
        wall = f"{row['wall_per_claim_s']:.2f} ({row['wall_s'] / base['wall_s']:.2f}×)"
        print(
            f"| {row['mode']} | {row['claims']} | {row['llm_calls']} | {row['prompt_tokens']} | "
            f"{row['completion_tokens']} | {tokens} | {row['wall_s']:.1f} | {wall} | "
            f"{row.get('planted_steps_found', '–')} | {row.get('supported_paths_found', '–')} |"
        )
    print()
    for row in rows:
        steps = ", ".join(
            f"{name}: {s['calls']} calls, {s['prompt_tokens']} prompt tokens" for name, s in row["by_step"].items()
        )
        print(f"- {row['mode']}: {steps}")


if __name__ == "__main__":
    main()
