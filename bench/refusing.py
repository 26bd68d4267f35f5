"""Evidence on a web that refuses (issue 28.4): five answers verified through the real pipeline
(embedded Celery worker, SQLite, a fresh cache) against the fakes of tests/fakes.py on 127.0.0.1,
on a stand-in web where 0 %, 30 % and 60 % of the pages refuse a scraper, as real pages do: a
bot challenge (HTTP 403 "Just a moment…"), an empty shell that only JavaScript fills, or no
answer before the fetch timeout. Which pages refuse is drawn from their paths
(tests.fakes.refusal_of), so every run and every share refuses the same pages, and a page that
refuses at 30 % refuses at 60 % too.

    cd <a checkout> && .venv/bin/python bench/refusing.py
    .venv/bin/python bench/refusing.py --file annotations.json   # FavaBench's first five answers
    .venv/bin/python bench/refusing.py --second-search-below 0   # without the second search

Reports per share: claims with at least one judged item, judged items per claim, the share of
them judged from a search snippet alone, the searches (the second ones apart, and all of them
relative to 0 %) and the time; writes bench/results/refusing.md (and .json) with the command.

The answers: `--file` takes FavaBench's annotations.json (fava-uw/fava-data, CC BY 4.0) and keeps
the five outputs it uses in bench/refusing_answers.json, with their source, for later runs;
without it that file is read, and without that file the five chatbot answers of bench/answers.py
are. Each share runs in a process of its own (its own database, cache and worker)."""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from multiprocessing import resource_tracker
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, os.getcwd())  # the checkout being measured: its verification and tests.fakes
ANSWERS_FILE = HERE / "refusing_answers.json"
RESULTS = HERE / "results"
SHARES = (0.0, 0.3, 0.6)
# More pages per sentence than a search reads (top_k_results 5): the web has more than one
# search's worth of pages about a claim, which a second search may find.
PAGES_PER_SENTENCE = 10
# Goals of issue 28.4, against the 0 % row.
GOALS = {0.3: 0.95, 0.6: 0.85}
MAX_SEARCHES = 1.2
# A search engine's snippet: about this long, from a little before the words that match.
SNIPPET_CHARS = 160
SNIPPET_LEAD = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, help="FavaBench's annotations.json: its first --answers outputs are used")
    parser.add_argument("--answers", type=int, default=5, help="how many answers (default 5)")
    parser.add_argument("--shares", default=",".join(f"{s:g}" for s in SHARES), help="refusing shares, e.g. 0,0.3,0.6")
    parser.add_argument(
        "--second-search-below", type=int, default=2, help="SECOND_SEARCH_BELOW for the runs (default 2; 0: off)"
    )
    parser.add_argument("--fetch-timeout", type=float, default=10.0, help="FETCH_TIMEOUT (default 10 s, the app's)")
    parser.add_argument("--out", type=Path, default=RESULTS / "refusing.md", help="the Markdown report (and .json)")
    parser.add_argument("--share", type=float, help=argparse.SUPPRESS)  # one share, in a child process
    parser.add_argument("--child-json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.share is not None:
        return measure_share(args)
    answers, source = choose_answers(args.file, args.answers)
    rows = []
    for share in [float(s) for s in args.shares.split(",")]:
        with tempfile.TemporaryDirectory(prefix="refusing-") as workdir:
            out = Path(workdir) / "share.json"
            Path(workdir, "answers.json").write_text(json.dumps(answers))
            command = [
                sys.executable,
                __file__,
                "--share",
                str(share),
                "--child-json",
                str(out),
                "--fetch-timeout",
                str(args.fetch_timeout),
            ]
            env = {**os.environ, "SECOND_SEARCH_BELOW": str(args.second_search_below), "REFUSING_WORKDIR": workdir}
            subprocess.run(command, check=True, env=env)
            rows.append(json.loads(out.read_text()))
            print(_row_line(rows[-1], rows[0]), flush=True)
    report(rows, args, source)


def choose_answers(path: Path | None, count: int) -> tuple[list[str], str]:
    if path is not None:
        from verification.evaluation import datasets

        items = datasets.load("favabench", path, limit=count)
        source = (
            f"the first {len(items)} records of FavaBench's annotations.json (fava-uw/fava-data, CC BY 4.0; "
            "Mishra et al. 2024), their `output` only, kept in bench/refusing_answers.json"
        )
        kept = [{"prompt": i.prompt, "output": i.output, "model": i.model, "subject": i.subject} for i in items]
        ANSWERS_FILE.write_text(json.dumps({"source": source, "answers": kept}, indent=1, ensure_ascii=False) + "\n")
        return [i.output for i in items], source
    if ANSWERS_FILE.exists():
        kept = json.loads(ANSWERS_FILE.read_text())
        return [a["output"] for a in kept["answers"][:count]], kept["source"]
    sys.path.insert(0, str(ROOT))
    from bench.answers import ANSWERS

    return ANSWERS[:count], "bench/answers.py's chatbot-like answers: no FavaBench file was given"


def measure_share(args) -> None:
    """One share of refusing pages, in this process: the fakes, the app, the answers one by one."""
    workdir = Path(os.environ["REFUSING_WORKDIR"])
    answers = json.loads((workdir / "answers.json").read_text())
    from bench.web import build_sites
    from tests.fakes import FakeLLM, FakeSerper
    from verification.pipeline.segment import segment

    sentences = [s.text for text in answers for s in segment(text)]
    web = build_sites(
        sentences,
        pages_per_sentence=PAGES_PER_SENTENCE,
        refusing=args.share,
        hang_s=args.fetch_timeout + 5,
    )
    sites = [site.start() for site in web]
    serper = _path_ordered(FakeSerper)(sites=sites).start()
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
        FETCH_TIMEOUT=str(args.fetch_timeout),
        REDIS_URL="",
        RUNS_PER_HOUR="0",
        LOG_LEVEL="WARNING",
        SECRET_KEY="bench-refusing-" + "x" * 50,
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.conf import settings

    from verification import services
    from verification.inputs.forms import VerificationForm
    from verification.models import Claim, Evidence, Status, Verification
    from verification.worker import cpu, start

    runs, seconds = [], []
    for number, text in enumerate(answers, start=1):
        form = VerificationForm(data={"text": text, "retrieval_mode": "sparse", "top_k_results": 5, "evidence": "web"})
        if not form.is_valid():
            raise SystemExit(f"answer {number}: {form.errors.as_text()}")
        began = time.monotonic()
        verification = services.verification_create(text=text, settings=form.run_settings())
        start.enqueue_verification(verification)
        deadline = began + 600
        while Verification.objects.get(pk=verification.pk).status not in ("done", "failed"):
            if time.monotonic() > deadline:
                raise SystemExit(f"answer {number} did not finish")
            time.sleep(0.05)
        seconds.append(time.monotonic() - began)
        runs.append(verification.pk)
    claims = Claim.objects.filter(sentence__verification__in=runs)
    # Copies of another item's text take its verdict: judged items, as the issue counts them.
    judged = Evidence.objects.filter(claim__in=claims, status=Status.DONE, verdict__gt="")
    distinct = judged.filter(duplicate_of__isnull=True)
    finished = Verification.objects.filter(pk__in=runs)
    result = {
        "share": args.share,
        "answers": len(answers),
        "sentences": len(sentences),
        "second_search_below": settings.SECOND_SEARCH_BELOW,
        "fetch_timeout": settings.FETCH_TIMEOUT,
        "claims": claims.count(),
        "claims_judged": judged.values("claim_id").distinct().count(),
        "judged": judged.count(),
        "distinct": distinct.count(),
        "decisive": distinct.filter(verdict__in=["supported", "not_supported"]).count(),
        "snippets": judged.filter(snippet_only=True).count(),
        "searches": sum(run.searches + run.searches_cached for run in finished),
        "second_searches": claims.exclude(second_query="").count(),
        "pages": sum(run.sources.count() for run in finished),
        "pages_refused": sum(_refused(source.url, args.share) for run in finished for source in run.sources.all()),
        "seconds": round(sum(seconds), 1),
        "seconds_per_answer": [round(s, 1) for s in seconds],
    }
    args.child_json.write_text(json.dumps(result))
    for server in (llm, serper, *sites):
        server.stop()
    cpu.stop()  # the CPU pool's processes end with this one
    with contextlib.suppress(Exception):
        resource_tracker._resource_tracker._stop()
    os._exit(0)  # the embedded worker's threads


def _path_ordered(serper_class):
    """The fake search engine, its equally good results in the order of their paths rather than
    of their URLs (the sites' ports differ from run to run, and so would which of a sentence's
    ten pages a search finds first, and so which of them refuse), each with a snippet as a search
    engine shows it: the page's text around the passage that best matches the query, not its
    first words (the stand-in pages open with filler, and a snippet is all a refusing page is
    judged from). The words before the match are the page's own, as on the real web, where
    pages state a fact in words of their own: the stand-in pages state it in the same words."""
    from urllib.parse import urlsplit

    from tests.fakes import content_words

    class PathOrdered(serper_class):
        def results(self, query: str, num: int) -> list[dict]:
            words = content_words(query)
            scored = sorted(
                (-len(words & page_words), urlsplit(url).path, url, page)
                for url, page, page_words in self._index()
                if words & page_words and page.searchable
            )
            return [
                {"title": page.title, "link": url, "snippet": _snippet(page.body, words), "position": rank}
                for rank, (_, _, url, page) in enumerate(scored[:num], start=1)
            ]

    def _snippet(body: str, words: set[str]) -> str:
        passages = body.split("\n\n")
        best = max(passages, key=lambda passage: len(words & content_words(passage)))
        text = " ".join(passages)
        start = max(0, text.index(best) - SNIPPET_LEAD)
        start = text.index(" ", start) + 1 if start else 0  # from a word's start, as engines cut
        return text[start : start + SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"

    return PathOrdered


def _refused(url: str, share: float) -> bool:
    from urllib.parse import urlsplit

    from tests.fakes import refusal_of

    return refusal_of(urlsplit(url).path, share) is not None


def _row_line(row: dict, base: dict) -> str:
    return (
        f"{row['share']:>4.0%} refusing: {row['claims_judged']}/{row['claims']} claims with a judged item, "
        f"{row['judged']} judged ({row['judged'] / max(1, base['judged']):.0%} of 0 %), "
        f"{row['snippets']} snippets, {row['searches']} searches ({row['second_searches']} second), {row['seconds']} s"
    )


def report(rows: list[dict], args, source: str) -> None:
    base = rows[0]
    command = ".venv/bin/python bench/refusing.py " + " ".join(sys.argv[1:])
    lines = [
        "# Evidence on a web that refuses (issue 28.4)",
        "",
        f"`{command.strip()}` at {_commit()} on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        f"Answers: {source}",
        "",
        f"{base['answers']} answers, {base['sentences']} sentences, {base['claims']} claims at 0 %; "
        f"{PAGES_PER_SENTENCE} stand-in pages per sentence on 8 sites (each stating its sentence among filler), "
        "5 search results read per claim, each with the page's text around its best match for the query as its "
        "snippet; "
        f"SECOND_SEARCH_BELOW={base['second_search_below']}, FETCH_TIMEOUT={base['fetch_timeout']:g} s; "
        "a refusing page is a bot challenge, a JavaScript shell or a hang past the timeout, a third of them each.",
        "",
        "| refusing | claims with a judged item | judged items | per claim | vs 0 % | distinct | decisive "
        "| snippets | searches | second searches | searches vs 0 % | pages read / refused | time |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['share']:.0%} | {row['claims_judged']} of {row['claims']} | {row['judged']} "
            f"| {row['judged'] / max(1, row['claims']):.2f} | {row['judged'] / max(1, base['judged']):.0%} "
            f"| {row['distinct']} | {row['decisive']} "
            f"| {row['snippets']} ({row['snippets'] / max(1, row['judged']):.0%}) | {row['searches']} "
            f"| {row['second_searches']} | {row['searches'] / max(1, base['searches']):.2f}× "
            f"| {row['pages'] - row['pages_refused']} / {row['pages_refused']} | {row['seconds']:.0f} s |"
        )
    lines += [
        "",
        "Judged items: evidence items with a verdict, a copy of another item's text (the same words at another "
        "URL: it takes that item's verdict and counts once in the scores) included; distinct: copies left out; "
        "decisive: distinct items judged supported or not supported; snippets: judged items judged from a search "
        "title and snippet alone. Searches: sent and taken from the cache. Pages: the runs' sources; refused: "
        "those the stand-in web refuses. Time: the answers one after another, each from submission to its end.",
        "",
        "Goals (issue 28.4): judged items at 30 % ≥ 95 % of 0 %, at 60 % ≥ 85 %, searches ≤ 1.2×.",
        "",
    ]
    for row in rows:
        goal = GOALS.get(row["share"])
        if goal is None:
            continue
        kept = row["judged"] / max(1, base["judged"])
        searches = row["searches"] / max(1, base["searches"])
        met = "met" if kept >= goal and searches <= MAX_SEARCHES else "not met"
        lines.append(
            f"- {row['share']:.0%}: {kept:.0%} of the judged items (goal {goal:.0%}), {searches:.2f}× the "
            f"searches (goal ≤ {MAX_SEARCHES}×): {met}"
        )
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps({"command": command, "source": source, "rows": rows}, indent=1))
    print(text)


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return (done.stdout.strip() or "an unknown commit") + (" with uncommitted changes" if dirty else "")


if __name__ == "__main__":
    main()
