"""What each model server costs a run (issue 37): refused requests, extra seconds and reasoning
tokens, per server profile of the fake model (tests/llm_servers.py, from ../shared/PROVIDERS.md).

    .venv/bin/python bench/servers.py [--profiles mistral gemini …] [--out bench/results/servers.md]

For each profile, on the real pipeline (embedded Celery worker, SQLite, a cache cleared when the
server changes, so a server pays its lessons once): a web check of a five-sentence text, the
example trail (docs/examples/trail.json) and quick mode, against tests/fakes.FakeLLM on
127.0.0.1 taking a served model's time (0.3 s to the first token, 60 tokens a second: thinking
costs what it writes). Verdicts are compared item for item with the plain profile's."""

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from multiprocessing import resource_tracker
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TEXT = (
    "The Eiffel Tower is in Paris, France. It was completed in 1889. It is made of steel. "
    "It is 330 metres tall.\n\nI hope this helps!"
)
PLAIN = "openai-gpt-4o-mini"
KNOWS = {"1889": ("true", 0.999), "steel": ("false", 0.9)}


def main() -> None:
    from tests.llm_servers import PROFILES

    parser = argparse.ArgumentParser()
    parser.add_argument("--profiles", nargs="*", default=[n for n in PROFILES if n != "azure-legacy"])
    parser.add_argument("--out", help="write the table here (Markdown)")
    args = parser.parse_args()
    names = [PLAIN] + [n for n in args.profiles if n != PLAIN]

    from tests.fakes import FakeSerper, sample_sites

    sites = [site.start() for site in sample_sites()]
    serper = FakeSerper(sites=sites).start()
    workdir = tempfile.mkdtemp(prefix="servers-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="factsite.settings",
        DATABASE_URL=f"sqlite:///{workdir}/db.sqlite3",
        CACHE_URL="locmemcache://",
        OPENAI_API_KEY="fake",
        LLM_MODELS="fake-model",
        SERPER_API_KEY=serper.api_key,
        SERPER_BASE_URL=serper.url,
        SEARCH_PROVIDERS="serper",
        ALLOW_PRIVATE_FETCH="1",
        REDIS_URL="",
        CPU_PROCESSES="0",
        LOG_LEVEL="WARNING",
        RUNS_PER_HOUR="0",
        SECRET_KEY="bench-servers-" + "x" * 50,
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    rows = []
    try:
        reference = None
        for name in names:
            row = measure(name, PROFILES[name])
            reference = reference or row
            row["same"] = all(row["verdicts"][kind] == reference["verdicts"][kind] for kind in ("web", "trail"))
            quick_reference = reference["verdicts"]["quick" if row["logprobs"] else "web"]
            row["same"] = row["same"] and row["verdicts"]["quick"] == quick_reference
            row["extra_s"] = row["seconds"] - reference["seconds"]
            rows.append(row)
            print(line(row), flush=True)
    finally:
        for server in (serper, *sites):
            server.stop()
    table = "\n".join([HEADER, *map(line, rows)])
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")
    from verification.worker import cpu

    cpu.stop()
    with contextlib.suppress(Exception):
        resource_tracker._resource_tracker._stop()
    os._exit(0)  # the embedded worker's threads


HEADER = (
    "| server profile | refused requests (what) | seconds (3 runs) | extra s | reasoning tokens | calls | "
    "quick mode | verdicts as plain |\n| --- | --- | --- | --- | --- | --- | --- | --- |"
)


def line(row: dict) -> str:
    refused = ", ".join(f"{what} {n}" for what, n in sorted(row["refused"].items())) or "none"
    quick = "saves searches" if row["logprobs"] else "off (no logprobs), says so"
    return (
        f"| {row['name']} | {sum(row['refused'].values())} ({refused}) | {row['seconds']:.1f} | "
        f"{row.get('extra_s', 0):+.1f} | {row['reasoning_tokens']} | {row['calls']} | {quick} | "
        f"{'yes' if row.get('same') else 'NO'} |"
    )


def measure(name: str, profile) -> dict:
    from django.conf import settings
    from django.core.cache import cache
    from django.test import Client

    from tests.fakes import FakeLLM

    llm = FakeLLM(profile=profile, knows=KNOWS, first_token_s=0.3, tokens_per_s=60).start()
    route = "/openai/v1" if profile.path_prefix == "/openai/v1/" else "/v1"
    settings.OPENAI_BASE_URL = llm.url + route
    settings.LLM_MODELS = profile.model + (
        f";context={profile.context_tokens}" if profile.over_context == "cut" else ""
    )
    cache.clear()  # a new server: its lessons are paid here, once
    client = Client(HTTP_HOST="127.0.0.1")
    verdicts, usage, quick = {}, [], None
    started = time.monotonic()
    try:
        for kind in ("web", "trail", "quick"):
            result = run(client, kind)
            if result["status"] != "done":
                raise SystemExit(f"{name} {kind}: {result['status']} {result.get('error')}")
            verdicts[kind] = _verdicts(result, kind)
            usage.append(result["usage"])
            quick = result.get("quick") if kind == "quick" else quick
    finally:
        llm.stop()
    return {
        "name": name,
        "seconds": time.monotonic() - started,
        "refused": dict(llm.refused),
        "reasoning_tokens": sum(u.get("reasoning_tokens", 0) for u in usage),
        "calls": sum(u["llm_calls"] for u in usage),
        "logprobs": bool(quick and quick.get("logprobs")),
        "verdicts": verdicts,
    }


def run(client, kind: str) -> dict:
    if kind == "trail":
        body = {"trail": json.loads((ROOT / "docs" / "examples" / "trail.json").read_text())}
        created = client.post("/api/trails", body, content_type="application/json")
        path = "/api/trails/{}"
    else:
        run_settings = {"retrieval_mode": "sparse", "quick": kind == "quick"}
        created = client.post(
            "/api/verifications", {"text": TEXT, "settings": run_settings}, content_type="application/json"
        )
        path = "/api/verifications/{}"
    assert created.status_code == 201, created.content
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        result = client.get(path.format(created.json()["id"])).json()
        if result["status"] in ("done", "failed"):
            return result
        time.sleep(0.05)
    raise SystemExit(f"{kind} did not finish")


def _verdicts(result: dict, kind: str) -> list:
    if kind == "trail":
        return sorted((c["text"], c["verdict"]) for c in result["claims"])
    return [
        (c["text"], sorted((e["title"], e["source_type"], e["verdict"]) for e in c["evidence"]))
        for s in result["sentences"]
        for c in s["claims"]
    ]


if __name__ == "__main__":
    main()
