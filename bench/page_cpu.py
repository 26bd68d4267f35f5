"""Where a page's CPU goes while it is read for a run: the stages the CPU pool runs for each page
of the benchmark's realistic web (bench/pages.py: 50 KB–1 MB pages with navigation, scripts and
tables), in CPU milliseconds per page, with the claim each page was built for:

    .venv/bin/python bench/page_cpu.py             # 30 pages, as in a six-claim run of bench/run.py
    .venv/bin/python bench/page_cpu.py --pages 120

- reading: decoding, parsing, both readers (trafilatura and readability-lxml, extract_choice.py),
  title and date (verification.pipeline.extract.read_document);
- splitting: the reading's sentences (passages.page_sentences);
- BM25: the page's index built and the claim ranked (passages.Corpus, rank_sentences sparse);
- dense: the claim and its shortlist encoded (the embedder's vector cache emptied before each page,
  as a new page's sentences are new), and the blend.

Each stage is each page's least of --repeat readings, so that other load on a shared machine
counts less. One process, one thread; the model is the configured EMBEDDING_MODEL on its backend.
The sum is the floor of what one run's reading costs: on C cores, a run's N pages take at least
N × sum ÷ C seconds of wall time after they arrive (bench/results/history.md)."""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "factsite.settings")

from bench.extraction import pages  # noqa: E402
from verification.clients import embeddings  # noqa: E402
from verification.pipeline import extract, passages  # noqa: E402
from verification.pipeline.types import FetchedDocument  # noqa: E402

STAGES = ("reading", "splitting", "BM25", "dense")
PAGE_URL = "https://bench.example/page"


def least_cpu_ms(function, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        began = time.process_time()
        result = function()
        best = min(best, (time.process_time() - began) * 1000)
    return best, result


def page_stages(page, embedder, repeat: int) -> dict[str, float]:
    document = FetchedDocument(PAGE_URL, PAGE_URL, "text/html", "utf-8", page.document)
    claim = page.body.split("\n\n")[0]  # the sentence the page was built to state
    reading_ms, reading = least_cpu_ms(lambda: extract.read_document(document), repeat)
    splitting_ms, sentences = least_cpu_ms(lambda: passages.page_sentences(reading.text), repeat)
    bm25_ms, _ = least_cpu_ms(lambda: passages.rank_sentences(claim, passages.Corpus(sentences), None), repeat)

    def dense():
        embedder._cache.clear()
        return passages.rank_sentences(claim, passages.Corpus(sentences), embedder)

    dense_ms, _ = least_cpu_ms(dense, repeat)
    return {"reading": reading_ms, "splitting": splitting_ms, "BM25": bm25_ms, "dense": dense_ms - bm25_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import django

    django.setup()
    from django.conf import settings

    embedder = embeddings.load_embedder(settings.EMBEDDING_MODEL)
    embedder.encode(["Warm-up."])
    sample = pages(args.pages)
    rows = [page_stages(page, embedder, args.repeat) for page in sample]
    kb = sorted(len(page.document) // 1000 for page in sample)
    print(
        f"{len(sample)} pages, {kb[0]}–{kb[-1]} KB (median {kb[len(kb) // 2]}); "
        f"{settings.EMBEDDING_MODEL} on {embeddings.embedding_backend()}"
    )
    print("| stage | CPU ms per page, mean | median | p90 | for all pages, s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for stage in (*STAGES, "all"):
        values = sorted(sum(row.values()) if stage == "all" else row[stage] for row in rows)
        print(
            f"| {stage} | {statistics.mean(values):.0f} | {statistics.median(values):.0f} "
            f"| {values[len(values) * 9 // 10]:.0f} | {sum(values) / 1000:.2f} |"
        )


if __name__ == "__main__":
    main()
