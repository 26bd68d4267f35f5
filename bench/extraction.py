"""Extraction quality and CPU cost: each extractor's text against the article (token F1, as
issue 9 measures it), and CPU milliseconds per page.

On the realistic generated pages (bench/pages.py), against the article each page was built from,
plus what finding a page's date costs next to that:

    .venv/bin/python bench/extraction.py               # 120 pages
    .venv/bin/python bench/extraction.py --pages 300

On a public benchmark of real pages, scrapinghub/article-extraction-benchmark (181 news and blog
pages, gzipped under html/, with each page's article text in ground-truth.json), taken out of its
git snapshot into a directory outside the repository:

    mkdir -p /work/data/article-extraction-benchmark
    git --git-dir=/work/.mirror/scrapinghub+article-extraction-benchmark/repo archive HEAD -- \
        html ground-truth.json | tar -x -C /work/data/article-extraction-benchmark
    .venv/bin/python bench/extraction.py --benchmark /work/data/article-extraction-benchmark

(the snapshot lacks some large files of output/; git names one it cannot find and still writes
html/ and ground-truth.json whole.) It compares readability-lxml alone, trafilatura as factsite
used it before the combination, and factsite's reading now (both, extract_choice.py), with
median and mean token F1, CPU per page, which reading the combination kept, and the same on the
even- and odd-numbered pages (in file-name order), to show how much the rule leans on the pages
it was set on.

No server is started: the pages are read here, one process, one thread."""

import argparse
import gzip
import itertools
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import htmldate  # noqa: E402
import lxml.html  # noqa: E402
import trafilatura  # noqa: E402
from nltk.tokenize import wordpunct_tokenize  # noqa: E402
from readability import Document  # noqa: E402

from bench.pages import GeneratedPage, build_realistic_sites  # noqa: E402
from bench.prose import topic_of  # noqa: E402
from bench.web import generated_texts  # noqa: E402
from verification.pipeline import extract, extract_choice, html_meta  # noqa: E402
from verification.pipeline.segment import segment  # noqa: E402

_HTML_BLOCKS = frozenset(
    "p div li ul ol h1 h2 h3 h4 h5 h6 blockquote pre tr td th dt dd section article br figcaption".split()
)


def readability_text(html: str) -> str:
    """What factsite used before trafilatura (commit 136c32b): readability's summary and short
    title, a line per block."""
    document = Document(html)
    document.short_title()
    root = lxml.html.fromstring(document.summary(html_partial=True))
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag.lower() in _HTML_BLOCKS:
            element.tail = "\n" + (element.tail or "")
            element.text = "\n" + (element.text or "")
    return root.text_content()


def factsite_text(html: str) -> str:
    return extract.read_html(html).text


def readability_summary_text(html: str) -> str:
    """readability-lxml as a library user runs it: the page in, its summary's text out."""
    root = lxml.html.fragment_fromstring(Document(html).summary(html_partial=True), create_parent="div")
    return extract._html_block_text(root)


def trafilatura_before_text(html: str) -> str:
    """extract.read_html as it was before both extractors read every page (98e69f1 and before):
    trafilatura with its own fallbacks (its copy of readability, jusText), title and date."""
    tree = extract.parse_html(html)
    html_meta.page_title(tree), html_meta.published_date(tree)
    extracted = trafilatura.bare_extraction(
        tree, include_comments=False, include_tables=True, favor_recall=True, with_metadata=False
    )
    text = "" if extracted is None or extracted.body is None else extract._block_text(extracted.body)
    if len(extract._tidy(text)) < extract.SHORT_TEXT_CHARS:
        summary = html_meta.description(tree)
        if summary and summary not in extract._tidy(text):
            text = f"{text}\n{summary}"
    return text


def trafilatura_text(html: str, *, fast: bool) -> str:
    return trafilatura.extract(html, include_comments=False, include_tables=True, favor_recall=True, fast=fast) or ""


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "readability-lxml": readability_text,
    "trafilatura (fast)": lambda html: trafilatura_text(html, fast=True),
    "trafilatura (with its readability/justext fallback)": lambda html: trafilatura_text(html, fast=False),
    "factsite before (extract.read_html at 98e69f1: trafilatura with fallback, title, date)": (
        lambda html: trafilatura_before_text(html)
    ),
    "factsite (extract.read_html: trafilatura and readability, the better kept; title, date)": factsite_text,
}


def token_f1(found: str, expected: str) -> float:
    found_tokens = Counter(t for t in wordpunct_tokenize(found.lower()) if t.isalnum())
    expected_tokens = Counter(t for t in wordpunct_tokenize(expected.lower()) if t.isalnum())
    common = sum((found_tokens & expected_tokens).values())
    if not common:
        return 0.0
    precision = common / sum(found_tokens.values())
    recall = common / sum(expected_tokens.values())
    return 2 * precision * recall / (precision + recall)


def pages(count: int) -> list[GeneratedPage]:
    texts = [(ROOT / "sample.txt").read_text(), *generated_texts(20)]
    sentences = list(dict.fromkeys((s.text, topic_of(s.text, text)) for text in texts for s in segment(text)))
    generated = [page for site in build_realistic_sites(sentences) for page in site.pages.values()]
    # Every k-th page rather than the first ones: the first are all one site's layout.
    step = max(1, len(generated) // count)
    return generated[::step][:count]


def cpu_ms(function: Callable[[], object]) -> tuple[float, object]:
    began = time.process_time()
    result = function()
    return (time.process_time() - began) * 1000, result


def measure(sample: list[GeneratedPage]) -> None:
    htmls = [extract.decode(page.document, "utf-8") for page in sample]
    sizes = sorted(len(page.document) for page in sample)
    print(f"{len(sample)} pages, {sizes[0] // 1000}–{sizes[-1] // 1000} KB (median {statistics.median(sizes) // 1000})")
    print("| extractor | token F1 mean | median | min | CPU ms mean | median | p95 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, extractor in EXTRACTORS.items():
        scores, times = [], []
        for page, html in zip(sample, htmls, strict=True):
            ms, text = cpu_ms(lambda extractor=extractor, html=html: extractor(html))
            times.append(ms)
            scores.append(token_f1(text, " ".join(page.article)))
        times.sort()
        print(
            f"| {name} | {statistics.mean(scores):.3f} | {statistics.median(scores):.3f} | {min(scores):.3f} "
            f"| {statistics.mean(times):.0f} | {statistics.median(times):.0f} | {times[len(times) * 95 // 100]:.0f} |"
        )
    readings = [extract.read_html(html) for html in htmls]
    # The generated pages' headline (JSON-LD, H1) is their <title>/og:title without " - <site>".
    headlines = [page.title.rsplit(" - ", 1)[0] for page in sample]
    titled = sum(reading.title == headline for reading, headline in zip(readings, headlines, strict=True))
    dated = sum(reading.published is not None for reading in readings)
    print(f"read_html: titled by the headline on {titled}/{len(sample)} pages, dated on {dated}/{len(sample)}")
    largest = max(htmls, key=len)
    for name, finder in {
        "htmldate (fast, original date)": lambda: htmldate.find_date(
            largest, extensive_search=False, original_date=True
        ),
        "readability-lxml": lambda: readability_text(largest),
        "extract.read_html (text, title, date)": lambda: extract.read_html(largest),
    }.items():
        runs = sorted(cpu_ms(finder)[0] for _ in range(5))
        print(f"{name} on the largest page ({len(largest) // 1000} KB): {runs[2]:.0f} ms CPU (median of 5)")


BENCHMARK_EXTRACTORS: dict[str, Callable[[str], str]] = {
    "readability-lxml alone (Document(html).summary())": readability_summary_text,
    "trafilatura as factsite used it before (with its fallbacks; title, date)": trafilatura_before_text,
    "factsite now: both, the better kept (extract.read_html; title, date)": factsite_text,
}


def kept_reading(html: str) -> extract.Choice:
    """Which reading extract.read_html keeps for this page (the same steps, its choice kept)."""
    tree = extract.parse_html(html)
    known = (html_meta.page_title(tree), html_meta.description(tree))
    return extract.read_main_text(tree, known=known)[1]


def benchmark_pages(path: Path) -> list[tuple[str, str, str]]:
    """(id, html, article text) of each page, in file-name order. The pages are stored as UTF-8."""
    truth = json.loads((path / "ground-truth.json").read_text())
    return [
        (
            key,
            gzip.decompress((path / "html" / f"{key}.html.gz").read_bytes()).decode("utf-8"),
            truth[key]["articleBody"],
        )
        for key in sorted(truth)
    ]


def measure_benchmark(path: Path, repeat: int) -> None:
    sample = benchmark_pages(path)
    print(f"{len(sample)} pages of {path.name}; token F1 against ground-truth.json's articleBody")
    print(f"CPU: each page's least of {repeat} readings, after one reading of the first 5 pages (warm-up)")
    print(
        "| extractor | token F1 median | mean | even pages median / mean | odd pages median / mean "
        "| CPU ms per page, mean | median |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    before_ms = None
    for name, extractor in BENCHMARK_EXTRACTORS.items():
        for _, html, _ in sample[:5]:
            extractor(html)
        scores, times = [], []
        for _, html, article in sample:
            readings = [cpu_ms(lambda extractor=extractor, html=html: extractor(html)) for _ in range(repeat)]
            times.append(min(ms for ms, _ in readings))
            scores.append(token_f1(readings[0][1], article))
        even, odd = scores[::2], scores[1::2]
        mean_ms = statistics.mean(times)
        if extractor is trafilatura_before_text:
            before_ms = mean_ms
        ratio = (
            f" ({mean_ms / before_ms:.2f}× before)" if before_ms and extractor is not trafilatura_before_text else ""
        )
        print(
            f"| {name} | {statistics.median(scores):.3f} | {statistics.mean(scores):.3f} "
            f"| {statistics.median(even):.3f} / {statistics.mean(even):.3f} "
            f"| {statistics.median(odd):.3f} / {statistics.mean(odd):.3f} "
            f"| {mean_ms:.1f}{ratio} | {statistics.median(times):.1f} |"
        )
    choices = Counter(kept_reading(html) for _, html, _ in sample)
    print("kept by the combination: " + ", ".join(f"{choice.value} {count}" for choice, count in choices.most_common()))


# extract_choice's thresholds and the values tried for each when the rule is fitted on half the pages.
THRESHOLDS = {
    "FRAGMENT_MIN_WORDS": (30, 50, 100),
    "FRAGMENT_SHARE": (0.2, 0.3, 0.5),
    "FRAGMENT_STRAY_SHARE": (0.05, 0.1, 0.2),
    "CHROME_SHARE": (0.02, 0.05, 0.1),
    "CHROME_CONTENT_SHARE": (0.25, 0.5, 1.0),
    "CHROME_STRAY_SHARE": (0.02, 0.05, 0.1),
}


def fit_on_halves(path: Path) -> None:
    """How much the rule's thresholds lean on the pages: the best of THRESHOLDS' 729 settings on
    the even-numbered pages, measured on the odd ones, and the other way round (the text each
    reading gives, without the description read_html adds to a page of under 80 characters)."""
    readings = []
    for _, html, article in benchmark_pages(path):
        tree = extract.parse_html(html)
        known = (html_meta.page_title(tree), html_meta.description(tree))
        extract.remove_unseen(tree)
        by_readability, by_trafilatura = extract.read_with_readability(tree), extract.read_with_trafilatura(tree)
        scores = {
            reading: token_f1("\n".join(line.text for line in lines), article)
            for reading, lines in (("r", by_readability), ("t", by_trafilatura))
        }
        readings.append((by_trafilatura, by_readability, known, scores))
    hand_set = {name: getattr(extract_choice, name) for name in THRESHOLDS}

    def scores_with(settings: dict, pages: range) -> tuple[float, float]:
        for name, value in settings.items():
            setattr(extract_choice, name, value)
        kept = [
            scores["r" if extract_choice.choose(t, r, known=known).readability else "t"]
            for t, r, known, scores in (readings[i] for i in pages)
        ]
        return statistics.median(kept), statistics.mean(kept)

    every = range(len(readings))
    print("| thresholds | chosen on | median / mean there | measured on | median / mean there | all pages |")
    print("| --- | --- | ---: | --- | ---: | ---: |")
    for fit, test, fit_name, test_name in (
        (every[::2], every[1::2], "even", "odd"),
        (every[1::2], every[::2], "odd", "even"),
    ):
        settings = [dict(zip(THRESHOLDS, values, strict=True)) for values in itertools.product(*THRESHOLDS.values())]
        best = max(settings, key=lambda s: scores_with(s, fit)[::-1])
        rows = [scores_with(best, pages) for pages in (fit, test, every)]
        print(
            f"| {', '.join(f'{k}={v}' for k, v in best.items())} "
            f"| {fit_name} pages | {rows[0][0]:.3f} / {rows[0][1]:.3f} "
            f"| {test_name} pages | {rows[1][0]:.3f} / {rows[1][1]:.3f} | {rows[2][0]:.3f} / {rows[2][1]:.3f} |"
        )
    rows = [scores_with(hand_set, pages) for pages in (every[::2], every[1::2], every)]
    print(
        f"| as set in extract_choice.py | — | — | even / odd | {rows[0][0]:.3f} / {rows[0][1]:.3f}, "
        f"{rows[1][0]:.3f} / {rows[1][1]:.3f} | {rows[2][0]:.3f} / {rows[2][1]:.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=120, help="how many generated pages to read (default 120)")
    parser.add_argument(
        "--benchmark", type=Path, metavar="PATH", help="read article-extraction-benchmark's pages from PATH instead"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="with --benchmark: read each page this many times, keep the least CPU"
    )
    parser.add_argument(
        "--fit-halves",
        action="store_true",
        help="with --benchmark: fit extract_choice's thresholds on half the pages, measure on the other half",
    )
    args = parser.parse_args()
    if args.benchmark and args.fit_halves:
        fit_on_halves(args.benchmark)
    elif args.benchmark:
        measure_benchmark(args.benchmark, args.repeat)
    else:
        measure(pages(args.pages))


if __name__ == "__main__":
    main()
