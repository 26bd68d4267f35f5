"""The measuring side of the benchmark: a Django process, like the web process, that submits
runs through the same path as the web app (create the row, enqueue after commit), waits for
them and says what it saw. bench/run.py starts one per database (a process reads Django's
settings once) with the services in its environment; it migrates the database, then answers
requests, one JSON object a line on stdin, one JSON line on stdout:

    {"texts": [...], "mode": "dense", "timeout": 900, "clear_caches": true,
     "edited": "...", "recompute": 200}     (the last two optional)"""

import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POLL_S = 0.02


def submit(text: str, mode: str):
    from verification import services
    from verification.inputs.forms import DEFAULT_SETTINGS
    from verification.worker import start

    settings = {**DEFAULT_SETTINGS, "model": "bench-model", "retrieval_mode": mode}
    verification = services.verification_create(text=text, settings=settings)
    start.enqueue_verification(verification)
    return verification


def measure_runs(texts: list[str], mode: str, timeout: float) -> list[dict]:
    """Submit every text at once; each run's wall time is from its submission until this
    process sees it finished, and its first coloured sentence when this process first sees a
    judged evidence item of it (a sentence has a score as soon as one of its evidence items
    has a verdict: verification/scoring.py). Both polled every 20 ms."""
    from verification.models import FINISHED, Evidence, Verification

    submitted = {}
    for text in texts:
        started = time.time()
        submitted[submit(text, mode).pk] = started
    finished: dict = {}
    coloured: dict = {}
    deadline = time.monotonic() + timeout
    while len(finished) < len(submitted) and time.monotonic() < deadline:
        now = time.time()
        if uncoloured := submitted.keys() - coloured.keys():
            judged = Evidence.objects.filter(claim__sentence__verification__in=uncoloured).exclude(verdict="")
            coloured |= dict.fromkeys(judged.values_list("claim__sentence__verification", flat=True).distinct(), now)
        done = Verification.objects.filter(pk__in=submitted.keys() - finished.keys(), status__in=FINISHED)
        finished |= dict.fromkeys(done.values_list("pk", flat=True), now)
        time.sleep(POLL_S)
    return [describe_run(pk, submitted[pk], finished.get(pk), coloured.get(pk)) for pk in submitted]


def describe_run(pk, submitted: float, finished: float | None, coloured: float | None = None) -> dict:
    from verification.models import Claim, Evidence, Source, Status, Verification

    run = Verification.objects.get(pk=pk)
    sentences = run.sentences.count()
    evidence = Evidence.objects.filter(claim__sentence__verification=run).count()
    sources = Source.objects.filter(verification=run)
    return {
        "id": str(pk),
        "status": run.status if finished else f"unfinished ({run.status})",
        "error": run.error,
        "submitted_at": round(submitted, 3),
        "finished_at": round(finished, 3) if finished else None,
        "wall_s": round(finished - submitted, 3) if finished else None,
        "first_coloured_s": round(coloured - submitted, 3) if coloured else None,
        "sentences": sentences,
        "claims": Claim.objects.filter(sentence__verification=run).count(),
        "evidence": evidence,
        "evidence_judged": Evidence.objects.filter(claim__sentence__verification=run, status=Status.DONE).count(),
        "sources": sources.count(),
        "sources_failed": sources.filter(status=Status.FAILED).count(),
        "sentences_failed": run.sentences.filter(status=Status.FAILED).count(),
        "claims_failed": Claim.objects.filter(sentence__verification=run, status=Status.FAILED).count(),
        "evidence_failed": Evidence.objects.filter(claim__sentence__verification=run, status=Status.FAILED).count(),
        "llm_calls": run.llm_calls,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "searches": run.searches,
        # FACTS&EVIDENCE: one call per sentence to decompose, one per (claim, evidence) to judge,
        # one per source to categorize.
        "paper_llm_calls": sentences + evidence + sources.count(),
        "claim_texts": claim_texts(run),
    }


def claim_texts(run) -> list[dict]:
    """What bench/calls.py matches a claim's calls by: its sentence, its text, its query and
    the URLs of its pages (as asked for, and where they led)."""
    from verification.models import Claim

    claims = Claim.objects.filter(sentence__verification=run).select_related("sentence")
    claims = claims.prefetch_related("search_results__source")
    return [
        {
            "sentence": claim.sentence.text,
            "claim": claim.text,
            "query": claim.query,
            "urls": sorted({u for r in claim.search_results.all() for u in (r.source.url, r.source.final_url) if u}),
        }
        for claim in claims
    ]


def clear_caches() -> None:
    """Cached searches, pages, claims and judgements, and the hosts' learnt source types: the
    next run pays for every step."""
    from django.core.cache import cache

    from verification.models import HostCategory

    cache.clear()
    HostCategory.objects.all().delete()


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
        assert response.status_code == 200, response.status_code
    timings.sort()
    return {
        "evidence": len(evidence_ids),
        "p50_ms": round(statistics.median(timings), 1),
        "p95_ms": round(timings[max(0, int(0.95 * len(timings)) - 1)], 1),
    }


def answer(request: dict) -> dict:
    if request.get("clear_caches"):
        clear_caches()
    result = {"runs": measure_runs(request["texts"], request["mode"], request["timeout"])}
    if request.get("edited"):
        result["edited_rerun"] = measure_runs([request["edited"]], request["mode"], request["timeout"])[0]
    if request.get("recompute"):
        result["recompute"] = measure_recompute(request["recompute"])
    return result


def main() -> None:
    # Our answers go to the real stdout; anything else printed goes to stderr (the log).
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)
    # Imports and the first connection before any clock starts: they are this process's
    # start-up, not a run's (the web process has them done long before a user submits).
    from verification import tasks  # noqa: F401
    from verification.models import Verification

    Verification.objects.exists()
    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    for line in sys.stdin:
        answers.write(json.dumps(answer(json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
