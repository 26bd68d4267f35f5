"""The text's own citations (issue 34): AI answers in the citation styles of the products that
write them, each with wrong citations planted, checked on the real pipeline (embedded Celery
worker, SQLite, a cache cleared before each run) against the fakes of tests/fakes.py on 127.0.0.1.

    .venv/bin/python bench/citations.py [--fixtures perplexity,chatgpt,gemini,footnotes,graphrag]
        [--out bench/results/citations.md]

The answers are written from each product's public format: Perplexity (numbered markers and a
"Citations:" list), ChatGPT search (inline domain links in parentheses with utm_source), Gemini
(superscripts and a "Sources" block of "title - site, accessed …, URL"), markdown footnotes, and a
GraphRAG global-search answer ("[Data: Reports (…)]"). Each cites stand-in pages on 127.0.0.1 that
say its sentence, say the opposite, say something else, answer 404, or sit on a host that does not
resolve (`.invalid`, answered by a stand-in for the system's resolver, as tests/test_citation_runs.py
does: nothing is asked outside 127.0.0.1). The simulated model judges by what the passages say
(tests/fakes.FakeLLM: most of the claim's words, with a negation or not), so no outcome is written
in: a wrong outcome means the pipeline sent the wrong page or passage to the wrong claim.

Each web answer runs three times: its text without the citations (the markers and list removed,
web search on: the baseline), as written (web search on, the default), and "cited sources only".
Reported: each citation's outcome against its planted label, LLM calls and tokens against the
baseline (issue 34's goal: at most 1.3× with web search on, fewer with cited sources only), and the
seconds from submission to the first citation outcome. The GraphRAG answer cites community
reports, which are no web address: it runs as a trail (its reports and text units as nodes), where
its markers must not reach a claim and the report a sentence cites must be its claims' first
candidate; its baseline is the same trail without the markers."""

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from multiprocessing import resource_tracker
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
RESULTS = HERE / "results"
TOKENS_GOAL = 1.3
# Outcomes that are decided by reading: the first of them is "the first citation outcome".
READ_OUTCOMES = ("supports", "contradicts", "does_not_say", "could_not_be_read", "does_not_exist")

# {s}: the cited site's address. Each answer's planted label per citation, in the order of the text
# (a marker citing two sources gives two). Pages: path → (title, body); a path not listed is a 404.
FIXTURES: dict[str, dict] = {
    "perplexity": {
        "text": (
            "The Halden ferry crosses the fjord in 40 minutes[1]. The Halden ferry carried 900 cars on "
            "its busiest day[2]. The Halden ferry company ordered two electric ships in 2024[1][3]. "
            "The old Halden pier closed for repairs in 2022[4].\n\n"
            "Citations:\n"
            "[1] Timetable - Halden Ferries {s}/halden/timetable\n"
            "[2] {s}/halden/record-day\n"
            "[3] {s}/halden/fleet\n"
            "[4] {s}/halden/pier\n"
        ),
        "planted": ["supports", "contradicts", "does_not_say", "supports", "does_not_exist"],
        "pages": {
            "/halden/timetable": (
                "Timetable - Halden Ferries",
                "The Halden ferry crosses the fjord in 40 minutes.\n\nDepartures leave every hour from six.",
            ),
            "/halden/record-day": (
                "Halden harbour news",
                "The Halden ferry never carried 900 cars on its busiest day; the record is 610.",
            ),
            "/halden/fleet": (
                "Fleet renewal",
                "The Halden ferry company ordered two electric ships in 2024 from a Bergen yard.",
            ),
        },
    },
    "chatgpt": {
        "text": (
            "The Brenna museum reopened in May 2024 after a renovation. "
            "([brennapost.com]({s}/brenna/reopening?utm_source=chatgpt.com)) "
            "The Brenna museum's new wing shows 300 paintings of the Vask school. "
            "([brennamuseum.org]({s}/brenna/wing?utm_source=chatgpt.com)) "
            "Entry to the Brenna museum is free for visitors under 18. "
            "([visitbrenna.com](https://www.visitbrenna.invalid/tickets?utm_source=chatgpt.com))\n\n"
            "The Brenna museum renovation was designed by the architect Ilse Marken. "
            "([brennapost.com]({s}/brenna/reopening?utm_source=chatgpt.com))"
        ),
        "planted": ["supports", "does_not_say", "does_not_exist", "does_not_say"],
        "pages": {
            "/brenna/reopening": (
                "Brenna Post: museum reopens",
                "The Brenna museum reopened in May 2024 after a renovation.\n\nThe opening drew large crowds.",
            ),
            "/brenna/wing": (
                "Brenna museum: visit",
                "The museum cafe serves lunch daily.\n\nGuided tours start at the main hall each morning.",
            ),
        },
    },
    "gemini": {
        "text": (
            "The Corlin observatory opened in 1931 on Mount Vessa.¹ The main Corlin telescope has a mirror "
            "of 24 metres.² The Corlin observatory discovered the comet Tarsel in 1987.¹˒³\n\n"
            "**Sources**\n\n"
            "1. Corlin observatory history - Corlin University, accessed March 20, 2025, {s}/corlin/history\n"
            "2. Telescope facts | Vessa Science, accessed March 20, 2025, {s}/corlin/telescope\n"
            "3. Comet Tarsel - Sky Notes, accessed March 20, 2025, {s}/corlin/comet-tarsel\n"
        ),
        "planted": ["supports", "contradicts", "supports", "does_not_exist"],
        "pages": {
            "/corlin/history": (
                "Corlin observatory history",
                "The Corlin observatory opened in 1931 on Mount Vessa.\n\n"
                "Astronomers at the Corlin observatory discovered the comet Tarsel in 1987.",
            ),
            "/corlin/telescope": (
                "Telescope facts",
                "The main Corlin telescope does not have a mirror of 24 metres; its mirror is 2 metres wide.",
            ),
        },
    },
    "footnotes": {
        "text": (
            "# The Dunmere canal\n\n"
            "The Dunmere canal was completed in 1794.[^1] Barges on the Dunmere canal carried coal to the "
            "Dunmere mills.[^2] The Dunmere canal reopened for boats in 2019.[^3]\n\n"
            '[^1]: Dunmere Canal Trust, "History of the canal", {s}/dunmere/history\n'
            "[^2]: Inland Waterways Review, [Lock gates]({s}/dunmere/locks)\n"
            "[^3]: Dunmere Gazette, https://www.dunmeregazette.invalid/canal-reopens\n"
        ),
        "planted": ["supports", "does_not_say", "does_not_exist"],
        "pages": {
            "/dunmere/history": (
                "History of the canal",
                "The Dunmere canal was completed in 1794 by the county engineers.",
            ),
            "/dunmere/locks": (
                "Lock gates",
                "The lock gates were replaced with oak in 1960.\n\nEach gate weighs four tonnes.",
            ),
        },
    },
}

# GraphRAG: its reports and text units as a trail; each sentence cites one report.
GRAPHRAG_UNITS = {
    "text-unit-1": "The Riverton council approved a tram line in 2024.",
    "text-unit-2": "The Riverton tram depot stands beside the harbour.",
    "text-unit-3": "The Riverton bus fleet has forty buses.",
}
GRAPHRAG_REPORTS = {
    "report-0": (["text-unit-1"], "The Riverton council approved a tram line in 2024."),
    "report-3": (["text-unit-2"], "The Riverton tram depot stands beside the harbour."),
    "report-5": (["text-unit-3"], "The Riverton bus fleet has forty buses."),
}
GRAPHRAG_ANSWER = (
    "## Riverton's transit\n\n"
    "The Riverton council approved a tram line in 2024 [Data: Reports (0, 5)]. "
    "The Riverton tram depot stands beside the harbour [Data: Reports (3)]. "
    "The Riverton tram line has sixty stops [Data: Reports (5)]."
)
# Per sentence (a word of it): the report it cites first, and the verdict the trail should reach.
GRAPHRAG_PLANTED = [
    ("council", "report-0", "fully_supported"),
    ("depot", "report-3", "fully_supported"),
    ("sixty", "report-5", "not_supported"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixtures", default=",".join([*FIXTURES, "graphrag"]), help="which answers, comma-separated")
    parser.add_argument("--out", type=Path, default=RESULTS / "citations.md", help="the Markdown report (and .json)")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.fixtures.split(",") if name.strip()]
    if unknown := [name for name in chosen if name not in FIXTURES and name != "graphrag"]:
        raise SystemExit(f"unknown fixtures: {', '.join(unknown)} (known: {', '.join([*FIXTURES, 'graphrag'])})")
    workdir = tempfile.mkdtemp(prefix="bench-citations-")
    servers = _start(chosen, workdir)
    try:
        rows = [measure_web(name, servers) for name in chosen if name in FIXTURES]
        trail = measure_graphrag() if "graphrag" in chosen else None
    finally:
        _stop(servers)
    report(rows, trail, args)
    with contextlib.suppress(Exception):
        resource_tracker._resource_tracker._stop()
    os._exit(0)  # the embedded worker's threads


def _start(chosen: list[str], workdir: str) -> dict:
    from bench.web import build_sites
    from tests.fakes import FakeLLM, FakePage, FakeSerper, FakeSite
    from verification.pipeline.citations import read_citations
    from verification.pipeline.segment import segment

    _resolve_invalid_names_as_missing()
    cited = FakeSite(
        pages={
            path: FakePage(title, body, searchable=False)
            for name in chosen
            if name in FIXTURES
            for path, (title, body) in FIXTURES[name]["pages"].items()
        }
    ).start()
    # The web a search finds: pages stating each sentence (some disputing it), on other hosts.
    sentences = [
        s.text
        for name in chosen
        if name in FIXTURES
        for s in segment(read_citations(_text(name, "http://127.0.0.1:9")).text)
    ]
    sites = [site.start() for site in build_sites(sentences, pages_per_sentence=5)]
    serper = FakeSerper(sites=sites).start()
    llm = FakeLLM().start()
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
        RUNS_PER_HOUR="0",
        CPU_PROCESSES="0",
        LOG_LEVEL="WARNING",
        SECRET_KEY="bench-citations-" + "x" * 50,
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return {"cited": cited, "sites": sites, "serper": serper, "llm": llm}


def _stop(servers: dict) -> None:
    for server in (servers["cited"], servers["serper"], servers["llm"], *servers["sites"]):
        server.stop()


def _resolve_invalid_names_as_missing() -> None:
    """`.invalid` names (RFC 2606) fail as a resolver fails them, without asking one."""
    resolve = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return resolve(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo


def _text(name: str, site_url: str) -> str:
    return FIXTURES[name]["text"].replace("{s}", site_url)


def measure_web(name: str, servers: dict) -> dict:
    from verification.pipeline.citations import read_citations

    text = _text(name, servers["cited"].url)
    # Once first, not measured: the search hosts' categories are then known to every measured run
    # (they are kept in the database, not the cache), as on a server that has seen them before.
    _run(read_citations(text).text, "also_search")
    baseline = _run(read_citations(text).text, "also_search")
    cited = _run(text, "also_search")
    only = _run(text, "only")
    planted = FIXTURES[name]["planted"]
    return {
        "fixture": name,
        "planted": planted,
        "baseline": baseline,
        "also_search": cited | _graded(cited, planted),
        "only": only | _graded(only, planted),
    }


def _graded(run: dict, planted: list[str]) -> dict:
    outcomes = [c["outcome"] for c in run["citations"]]
    right = sum(a == b for a, b in zip(outcomes, planted, strict=False)) if len(outcomes) == len(planted) else 0
    return {"outcomes": outcomes, "right": right, "of": len(planted)}


def _run(text: str, citations: str) -> dict:
    from django.core.cache import cache

    from verification import services
    from verification.inputs.forms import VerificationForm
    from verification.models import Claim, Verification
    from verification.selectors.citations import citation_results
    from verification.worker import start

    cache.clear()
    data = {"text": text, "retrieval_mode": "sparse", "top_k_results": 5, "evidence": "web", "citations": citations}
    form = VerificationForm(data=data)
    if not form.is_valid():
        raise SystemExit(form.errors.as_text())
    began = time.monotonic()
    run = services.verification_create(text=text, settings=form.run_settings())
    start.enqueue_verification(run)
    first, deadline = None, began + 600
    while (run := Verification.objects.get(pk=run.pk)).status not in ("done", "failed"):
        if time.monotonic() > deadline:
            raise SystemExit(f"the run {run.pk} did not finish")
        if first is None and any(c["outcome"] in READ_OUTCOMES for c in citation_results(run)):
            first = time.monotonic() - began
        time.sleep(0.02)
    seconds = time.monotonic() - began
    citations = citation_results(run)
    if first is None and any(c["outcome"] in READ_OUTCOMES for c in citations):
        first = seconds
    claims = list(Claim.objects.filter(sentence__verification=run).values_list("text", flat=True))
    return {
        "status": run.status,
        "claims": len(claims),
        "markers_in_claims": sum("[" in claim or "http" in claim or "Data:" in claim for claim in claims),
        "llm_calls": run.llm_calls,
        "tokens": run.prompt_tokens + run.completion_tokens,
        "searches": run.searches + run.searches_cached,
        "seconds": round(seconds, 2),
        "first_outcome_s": None if first is None else round(first, 2),
        "citations": [{"marker": c["marker"], "outcome": c["outcome"], "reason": c["reason"]} for c in citations],
    }


def graphrag_trail(answer: str) -> dict:
    nodes = [{"id": node, "text": text, "step": "text unit"} for node, text in GRAPHRAG_UNITS.items()]
    nodes += [
        {"id": node, "text": text, "from": units, "step": "community report"}
        for node, (units, text) in GRAPHRAG_REPORTS.items()
    ]
    nodes.append({"id": "answer", "text": answer, "from": list(GRAPHRAG_REPORTS), "step": "answer"})
    return {"nodes": nodes}


def measure_graphrag() -> dict:
    from verification.pipeline.citations import read_citations

    _trail_run(read_citations(GRAPHRAG_ANSWER).text)  # a first trail run warms the process: not measured
    baseline = _trail_run(read_citations(GRAPHRAG_ANSWER).text)
    return {"cited": _trail_run(GRAPHRAG_ANSWER), "baseline": baseline}


def _trail_run(answer: str) -> dict:
    from django.core.cache import cache

    from verification import services
    from verification.inputs.trails import trail_submission
    from verification.models import Verification
    from verification.selectors.trail_result import trail_result
    from verification.worker import start

    cache.clear()
    submission = trail_submission(graphrag_trail(answer))
    began = time.monotonic()
    run = services.trail_create(trail=submission.trail, settings=submission.settings, segments=submission.segments)
    start.enqueue_verification(run)
    while (run := Verification.objects.get(pk=run.pk)).status not in ("done", "failed"):
        if time.monotonic() > began + 600:
            raise SystemExit(f"the trail run {run.pk} did not finish")
        time.sleep(0.02)
    result = trail_result(run, with_texts=False)
    claims = result["claims"]
    planted = [next((c for c in claims if word in c["text"].lower()), None) for word, _, _ in GRAPHRAG_PLANTED]
    firsts = [claim["rounds"][0]["candidates"][0] if claim and claim["rounds"] else None for claim in planted]
    verdicts = [
        None if claim is None else "fully_supported" if claim["verdict"] == "fully_supported" else "not_supported"
        for claim in planted
    ]
    return {
        "status": run.status,
        "claims": len(claims),
        "markers_in_claims": sum("[" in claim["text"] for claim in claims),
        "first_candidates": firsts,
        "verdicts": verdicts,
        "cited_first": sum(first == node for first, (_, node, _) in zip(firsts, GRAPHRAG_PLANTED, strict=True)),
        "verdicts_right": sum(v == want for v, (_, _, want) in zip(verdicts, GRAPHRAG_PLANTED, strict=True)),
        "llm_calls": run.llm_calls,
        "tokens": run.prompt_tokens + run.completion_tokens,
        "seconds": round(time.monotonic() - began, 2),
    }


def report(rows: list[dict], trail: dict | None, args) -> None:
    command = ".venv/bin/python bench/citations.py " + " ".join(sys.argv[1:])
    lines = [
        "# The text's own citations (issue 34)",
        "",
        f"`{command.strip()}` at {_commit()} on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        "Each answer as its product writes citations, pointing at stand-in pages on 127.0.0.1 (and a host that does "
        "not resolve); planted: pages that say the sentence, say the opposite, say something else, or are not there. "
        "The simulated model judges by the passages' words (tests/fakes.FakeLLM). Tokens and calls are against the "
        "same text with its citations removed, web search on (the baseline); 5 search results a claim, sparse "
        "retrieval, a cache cleared before each run (the baseline run once before, unmeasured, so that every "
        "measured run finds the search hosts' categories known).",
        "",
        "| answer | citations right (web on) | right (cited only) | tokens: baseline → web on (×) → cited only (×) "
        "| LLM calls: baseline → web on → cited only | searches (web on / cited only) "
        "| first outcome s (web on / cited only) | markers in claims |",
        "| --- | ---: | ---: | --- | --- | --- | --- | ---: |",
    ]
    totals = {"right": 0, "right_only": 0, "of": 0, "base": 0, "web": 0, "only": 0}
    for row in rows:
        base, web, only = row["baseline"], row["also_search"], row["only"]
        totals["right"] += web["right"]
        totals["right_only"] += only["right"]
        totals["of"] += web["of"]
        totals["base"] += base["tokens"]
        totals["web"] += web["tokens"]
        totals["only"] += only["tokens"]
        lines.append(
            f"| {row['fixture']} | {web['right']}/{web['of']} | {only['right']}/{only['of']} "
            f"| {base['tokens']} → {web['tokens']} ({_ratio(web['tokens'], base['tokens'])}) → {only['tokens']} "
            f"({_ratio(only['tokens'], base['tokens'])}) | {base['llm_calls']} → {web['llm_calls']} → "
            f"{only['llm_calls']} | {web['searches']} / {only['searches']} "
            f"| {_s(web['first_outcome_s'])} / {_s(only['first_outcome_s'])} "
            f"| {web['markers_in_claims'] + only['markers_in_claims']} |"
        )
    if rows:
        web_ratio = totals["web"] / max(1, totals["base"])
        only_ratio = totals["only"] / max(1, totals["base"])
        lines += [
            "",
            f"All web answers: {totals['right']}/{totals['of']} citation outcomes right with web search on, "
            f"{totals['right_only']}/{totals['of']} with cited sources only; tokens {web_ratio:.2f}× the baseline with "
            f"web search on (goal ≤ {TOKENS_GOAL}×: {'met' if web_ratio <= TOKENS_GOAL else 'not met'}), "
            f"{only_ratio:.2f}× with cited sources only (goal < 1×: {'met' if only_ratio < 1 else 'not met'}).",
            "",
            "Outcomes (planted → found, web on):",
            "",
        ]
        for row in rows:
            found = row["also_search"]["outcomes"]
            pairs = ", ".join(
                f"`{_short(c['marker'])}` {want}{'' if want == got else f' → **{got}**'}"
                for c, want, got in zip(row["also_search"]["citations"], row["planted"], found, strict=False)
            )
            lines.append(f"- {row['fixture']}: {pairs}")
    if trail is not None:
        cited, base = trail["cited"], trail["baseline"]
        lines += [
            "",
            "## GraphRAG answer, as a trail",
            "",
            "| run | claims | markers in claims | cited report first | verdicts right | LLM calls | tokens | s |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for label, run in (("with its [Data: Reports (…)] markers", cited), ("markers removed by hand", base)):
            lines.append(
                f"| {label} | {run['claims']} | {run['markers_in_claims']} | {run['cited_first']}/"
                f"{len(GRAPHRAG_PLANTED)} | {run['verdicts_right']}/{len(GRAPHRAG_PLANTED)} | {run['llm_calls']} "
                f"| {run['tokens']} ({_ratio(run['tokens'], base['tokens'])}) | {run['seconds']:.1f} |"
            )
        lines += [
            "",
            "Without markers no report is cited, so the first candidate is the trail's first report: the third "
            "sentence's cited report-5 comes first only when its marker is read.",
        ]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(
        json.dumps({"command": command, "web": rows, "graphrag": trail}, indent=1, ensure_ascii=False)
    )
    print(text)


def _short(marker: str) -> str:
    """A marker as the list shows it: a link's address cut, its port being the run's own."""
    return marker if len(marker) <= 24 else marker[:22] + "…"


def _ratio(value: int, base: int) -> str:
    return f"{value / base:.2f}×" if base else "–"


def _s(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds:.2f}"


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return (done.stdout.strip() or "an unknown commit") + (" with uncommitted changes" if dirty else "")


if __name__ == "__main__":
    main()
