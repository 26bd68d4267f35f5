"""The dense re-scorer's quality and CPU, side by side for each backend and shortlist size.

    /work/main/.venv/bin/python bench/rescorer.py [--pages 16] [--claims 0]

Quality: WiCE dev (../shared/data/wice-dev/dev.jsonl, read in place, never copied): each claim's
cited page ranked, the top 5 distinct sentences kept; recall@5 over the union of the gold sets,
any-set@5 (some gold set wholly in the top 5) and hit@5 (some gold sentence in it). Claims with
no supporting sentence are left out, as the data's README says.

CPU: `time.process_time()` of one (claim, page) ranking, BM25 included, in this one process
with one thread, each measured with an empty vector cache (the embedder caches by sentence
text, and a warm cache would measure the cache). Over the WiCE pages and over generated 50 KB–1 MB
pages (bench/pages.py) read by the app's own `verification.worker.cpu.read_page`, with the sentence each
page states as the claim and a sentence about its topic that it may not state.

Start-up: a fresh interpreter importing the embeddings module, loading each backend and
encoding one sentence: wall seconds and peak RSS (what each CPU-pool process pays)."""

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import prose  # noqa: E402
from bench.chrome import site_chrome  # noqa: E402
from bench.pages import generated_page  # noqa: E402
from bench.web import KINDS  # noqa: E402
from verification.clients import embeddings  # noqa: E402
from verification.pipeline import passages  # noqa: E402
from verification.pipeline.segment import split_sentences  # noqa: E402
from verification.pipeline.types import FetchedDocument  # noqa: E402
from verification.worker.cpu import read_page  # noqa: E402

WICE = ROOT.parent / "shared" / "data" / "wice-dev" / "dev.jsonl"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TOP = 5
# The form's defaults: what a run asks of each page.
TOP_K, CONTEXT = 3, 1


@dataclass(frozen=True)
class Variant:
    label: str
    backend: str | None  # None: BM25 alone
    shortlist: int = passages.DENSE_SHORTLIST
    followers: int = passages.FOLLOWERS


VARIANTS = [
    Variant("old: torch 30+6", "torch", 30, 6),
    Variant("bm25 only", None),
    Variant("torch 20+6", "torch", 20, 6),
    Variant("onnx 20+6", "onnx", 20, 6),
    Variant("onnx-int8 30+6", "onnx-int8", 30, 6),
    Variant("onnx-int8 20+6", "onnx-int8", 20, 6),
    Variant("onnx-int8 15+6", "onnx-int8", 15, 6),
    Variant("onnx-int8 10+3", "onnx-int8", 10, 3),
]


@dataclass
class Case:
    claim: str
    sentences: list[str]
    gold: list[set[int]]


def wice_cases(limit: int) -> list[Case]:
    cases = []
    for line in WICE.read_text().splitlines():
        row = json.loads(line)
        gold = [set(group) for group in row["supporting_sentences"] if group]
        if gold:
            cases.append(Case(row["claim"], row["evidence"], gold))
    return cases[:limit] if limit else cases


def realistic_cases(pages: int) -> list[Case]:
    """Generated pages about the sample text's subjects, read as the app reads them."""
    text = (ROOT / "sample.txt").read_text()
    statements = [span.text for span in split_sentences(text)]
    cases = []
    for n in range(pages):
        statement = statements[n % len(statements)]
        topic = prose.topic_of(statement, text)
        kind = KINDS[n % len(KINDS)]
        page = generated_page(
            title=f"{topic.name} - {kind}",
            claim=statement,
            restated=f"In short, {statement[0].lower()}{statement[1:]}",
            topic=topic,
            kind=kind,
            chrome=site_chrome(kind, f"rescorer:{n}"),
            url=f"https://site{n}.example/page",
            seed=f"rescorer:{n}",
        )
        document = FetchedDocument(f"https://site{n}.example/page", "", "text/html", "utf-8", page.html())
        sentences = list(read_page(document).sentences)
        stated = [i for i, s in enumerate(sentences) if statement in s]
        cases.append(Case(statement, sentences, [{i} for i in stated]))
        cases.append(Case(prose.sentence(random.Random(n), topic), sentences, []))
    return cases


def model_of(backend: str):
    """The bare model (no cache): each measurement wraps it in a new SentenceEmbedder."""
    if backend == "torch":
        return embeddings.load_sentence_transformer(MODEL)
    return embeddings.OnnxSentenceModel(embeddings.prepare(MODEL, backend))


def ranked(case: Case, model, variant: Variant, *, top_k: int, context: int) -> tuple[list[int], float]:
    """The chosen sentences' indices and the CPU seconds the ranking took (cold vector cache)."""
    passages.DENSE_SHORTLIST, passages.FOLLOWERS = variant.shortlist, variant.followers
    embedder = embeddings.SentenceEmbedder(model) if model is not None else None
    started = time.process_time()
    chosen = passages.select_passages(case.claim, case.sentences, top_k=top_k, context=context, embedder=embedder)
    spent = time.process_time() - started
    # With context 0 a passage is a run of adjacent chosen sentences, one highlight each.
    return [p.position + k for p in chosen for k in range(len(p.highlights))], spent


def quality(cases: list[Case], model, variant: Variant) -> dict:
    recall, any_set, hit, cpu = [], [], [], []
    for case in cases:
        top, spent = ranked(case, model, variant, top_k=TOP, context=0)
        union = set().union(*case.gold)
        recall.append(len(union & set(top)) / len(union))
        any_set.append(any(group <= set(top) for group in case.gold))
        hit.append(bool(union & set(top)))
        cpu.append(spent)
    return {
        "recall@5": statistics.mean(recall),
        "any-set@5": statistics.mean(any_set),
        "hit@5": statistics.mean(hit),
        "ms": 1000 * statistics.mean(cpu),
    }


def realistic_cpu(cases: list[Case], model, variant: Variant) -> dict:
    cpu, found = [], []
    for case in cases:
        # A run's settings, not the quality measure's: what the app pays per page.
        started = time.process_time()
        ranked(case, model, variant, top_k=TOP_K, context=CONTEXT)
        cpu.append(time.process_time() - started)
        if case.gold:
            top, _ = ranked(case, model, variant, top_k=TOP, context=0)
            found.append(any(group <= set(top) for group in case.gold))
    return {"ms": 1000 * statistics.mean(cpu), "found": statistics.mean(found) if found else float("nan")}


# Peak RSS from /proc (VmHWM): getrusage's maximum survives exec, so a child would report its parent's.
STARTUP = """
import re, sys, time
started = time.perf_counter()
from verification.clients.embeddings import load_embedder
embedder = load_embedder({model!r}, {backend!r})
embedder.encode(["One sentence."])
peak_kb = re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)
print(time.perf_counter() - started, int(peak_kb) / 1024, "torch" in sys.modules)
"""


def startup(backend: str) -> dict:
    """Import, load and first encode in a fresh interpreter (the vectors' cache file built already)."""
    code = STARTUP.format(model=MODEL, backend=backend)
    output = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    seconds, rss, torch = output.stdout.split()
    return {"s": float(seconds), "rss_mb": float(rss), "torch": torch == "True"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=16, help="generated realistic pages (two claims each)")
    parser.add_argument("--claims", type=int, default=0, help="WiCE claims (0: all with gold sentences)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)  # as in the CPU pool; onnxruntime sessions use one thread already
    wice = wice_cases(args.claims)
    started = time.monotonic()
    pages = realistic_cases(args.pages)
    page_sizes = sorted(len(case.sentences) for case in pages[::2])
    print(f"WiCE: {len(wice)} claims with gold sentences")
    print(
        f"realistic: {len(pages[::2])} pages, {len(pages)} (claim, page) pairs, sentences per page "
        f"{page_sizes[0]}–{page_sizes[-1]} (median {page_sizes[len(page_sizes) // 2]}); read in "
        f"{time.monotonic() - started:.0f} s"
    )
    models = {backend: model_of(backend) for backend in {v.backend for v in VARIANTS if v.backend}}
    for model in models.values():  # first calls pay for lazy set-up, not for encoding
        quality(wice[:3], model, VARIANTS[0])
    rows = []
    for variant in VARIANTS:
        model = models.get(variant.backend)
        rows.append((variant, quality(wice, model, variant), realistic_cpu(pages, model, variant)))
    old_wice, old_pages = rows[0][1]["ms"], rows[0][2]["ms"]
    print()
    print(
        f"{'variant':<17} {'recall@5':>8} {'any-set@5':>9} {'hit@5':>6} {'WiCE ms':>8} {'×old':>5} "
        f"{'pages ms':>8} {'×old':>5} {'found':>5}"
    )
    for variant, wice_row, page_row in rows:
        print(
            f"{variant.label:<17} {wice_row['recall@5']:>8.4f} {wice_row['any-set@5']:>9.4f} {wice_row['hit@5']:>6.3f} "
            f"{wice_row['ms']:>8.1f} {wice_row['ms'] / old_wice:>5.2f} {page_row['ms']:>8.1f} "
            f"{page_row['ms'] / old_pages:>5.2f} {page_row['found']:>5.2f}"
        )
    print()
    print("process start (import + load + first encode, fresh interpreter):")
    for backend in embeddings.BACKENDS:
        row = startup(backend)
        print(f"  {backend:<10} {row['s']:5.1f} s  peak RSS {row['rss_mb']:4.0f} MB  torch imported: {row['torch']}")


if __name__ == "__main__":
    main()
