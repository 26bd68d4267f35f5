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

On a second public set the reading rule was not set on, trafilatura's own evaluation pages (990 pages
of many languages, tests/eval and tests/cache of github.com/adbar/trafilatura, with strings each
reading must hold and strings it must not in tests/evaldata.json), scored as trafilatura scores
them (precision, recall and F1 over those strings, each found as a substring):

    mkdir -p /work/data/trafilatura-eval
    git --git-dir=/work/.mirror/adbar+trafilatura/repo archive HEAD -- tests/eval tests/cache \
        tests/evaldata.json | tar -x -C /work/data/trafilatura-eval
    .venv/bin/python bench/extraction.py --trafilatura-eval /work/data/trafilatura-eval/tests

CPU against an older reader, on either set: the older commit's verification/pipeline, taken out of
git, is loaded beside the current one and both read each page in turn (each page's least of 5
readings of each), so that the load of a shared machine falls on both alike:

    mkdir -p /tmp/pipeline-before && git archive <commit> verification/pipeline | tar -x -C /tmp/pipeline-before
    .venv/bin/python bench/extraction.py --benchmark /work/data/article-extraction-benchmark \
        --cpu-against /tmp/pipeline-before

No server is started: the pages are read here, one process, one thread."""

import argparse
import gzip
import importlib.util
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


def trafilatura_eval_pages(path: Path) -> list[tuple[str, str, dict]]:
    """(file, html, its evaldata item) of each page of trafilatura's evaluation set, in URL order."""
    evaldata = json.loads((path / "evaldata.json").read_text())
    found = []
    for url in sorted(evaldata):
        item = evaldata[url]
        file = next(
            path / folder / item["file"] for folder in ("cache", "eval") if (path / folder / item["file"]).is_file()
        )
        found.append((item["file"], extract.decode(file.read_bytes(), None), item))
    return found


def snippet_counts(text: str, item: dict) -> tuple[int, int, int, int]:
    """trafilatura's scoring (tests/eval_common.count_item): true and false positives, false and true
    negatives of the page's with/without strings, each looked for in the whitespace-normalised text."""
    normal = " ".join(text.split())
    found = sum(" ".join(w.split()) in normal for w in item["with"])
    kept = sum(" ".join(w.split()) in normal for w in item["without"])
    return found, kept, len(item["with"]) - found, len(item["without"]) - kept


def measure_trafilatura_eval(path: Path) -> None:
    sample = trafilatura_eval_pages(path)
    print(f"{len(sample)} pages of trafilatura's evaluation set; strings each reading must and must not hold")
    print(
        "| extractor | precision | recall | F1 | accuracy | pages with a 'without' string | "
        "CPU ms per page, mean | median |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, extractor in BENCHMARK_EXTRACTORS.items():
        totals, times, chrome_pages = [0, 0, 0, 0], [], 0
        for _, html, item in sample:
            try:
                ms, text = cpu_ms(lambda extractor=extractor, html=html: extractor(html))
            except Exception:  # a page the extractor refuses (empty, unparsable) counts as read as nothing
                ms, text = 0.0, ""
            times.append(ms)
            counts = snippet_counts(text, item)
            chrome_pages += counts[1] > 0
            totals = [total + count for total, count in zip(totals, counts, strict=True)]
        tp, fp, fn, tn = totals
        precision, recall = tp / (tp + fp), tp / (tp + fn)
        print(
            f"| {name} | {precision:.3f} | {recall:.3f} | {2 * tp / (2 * tp + fp + fn):.3f} "
            f"| {(tp + tn) / sum(totals):.3f} | {chrome_pages} | {statistics.mean(times):.1f} "
            f"| {statistics.median(times):.1f} |"
        )
    choices = Counter(kept_reading(html) for _, html, _ in sample if html.strip())
    print("kept by the combination: " + ", ".join(f"{choice.value} {count}" for choice, count in choices.most_common()))


def pipeline_from(path: Path):
    """The extract module of an older copy of verification/pipeline under PATH, as a package of its
    own (its modules import each other relatively)."""
    folder = path / "verification" / "pipeline"
    spec = importlib.util.spec_from_file_location(
        "pipeline_before", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules["pipeline_before"] = package
    spec.loader.exec_module(package)
    return importlib.import_module("pipeline_before.extract")


def compare_cpu(htmls: list[str], path: Path, repeat: int = 5) -> None:
    """CPU per page of extract.read_html now and of the older copy under PATH, read in turn."""
    readers = {"before": pipeline_from(path).read_html, "now": extract.read_html}
    totals = dict.fromkeys(readers, 0.0)
    for html in htmls:
        least = dict.fromkeys(readers, float("inf"))
        for _ in range(repeat):
            for name, reader in readers.items():
                ms, _ = cpu_ms(lambda reader=reader, html=html: _read_or_refuse(reader, html))
                least[name] = min(least[name], ms)
        totals = {name: totals[name] + least[name] for name in readers}
    before, now = (totals[name] / len(htmls) for name in ("before", "now"))
    print(
        f"{len(htmls)} pages, each page's least of {repeat} readings: before {before:.1f} ms, now {now:.1f} ms "
        f"CPU a page ({now / before:.2f}×)"
    )


def _read_or_refuse(reader: Callable[[str], object], html: str) -> object:
    try:
        return reader(html)
    except Exception:  # an empty or unparsable page (each copy has its own StepError) costs what finding so costs
        return None


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
        "--trafilatura-eval",
        type=Path,
        metavar="PATH",
        help="read trafilatura's evaluation pages from PATH (its tests/ folder: evaldata.json, eval/, cache/)",
    )
    parser.add_argument(
        "--cpu-against",
        type=Path,
        metavar="PATH",
        help="with --benchmark or --trafilatura-eval: compare the CPU per page with an older verification/pipeline "
        "under PATH, read in turn",
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
    if args.cpu_against and (args.benchmark or args.trafilatura_eval):
        pages = (
            [html for _, html, _ in benchmark_pages(args.benchmark)]
            if args.benchmark
            else [html for _, html, _ in trafilatura_eval_pages(args.trafilatura_eval)]
        )
        compare_cpu(pages, args.cpu_against)
    elif args.trafilatura_eval:
        measure_trafilatura_eval(args.trafilatura_eval)
    elif args.benchmark and args.fit_halves:
        fit_on_halves(args.benchmark)
    elif args.benchmark:
        measure_benchmark(args.benchmark, args.repeat)
    else:
        measure(pages(args.pages))


if __name__ == "__main__":
    main()
