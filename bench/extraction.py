"""Extraction quality and CPU cost on the realistic generated pages (bench/pages.py): each
extractor's text against the article the page was built from (token F1, as issue 9 measures it),
and CPU milliseconds per page; plus what finding a page's date costs next to that.

    .venv/bin/python bench/extraction.py               # 120 pages
    .venv/bin/python bench/extraction.py --pages 300

No server is started: the pages are generated in memory and read here, one process, one thread."""

import argparse
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
from verification.pipeline import extract  # noqa: E402
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


def trafilatura_text(html: str, *, fast: bool) -> str:
    return trafilatura.extract(html, include_comments=False, include_tables=True, favor_recall=True, fast=fast) or ""


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "readability-lxml": readability_text,
    "trafilatura (fast)": lambda html: trafilatura_text(html, fast=True),
    "trafilatura (with its readability/justext fallback)": lambda html: trafilatura_text(html, fast=False),
    "factsite (extract.read_html: trafilatura with fallback, title, date)": factsite_text,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=120, help="how many generated pages to read (default 120)")
    args = parser.parse_args()
    measure(pages(args.pages))


if __name__ == "__main__":
    main()
