"""How well and how fast factsite tells a text's language (pipeline/languages.py, issue 36).

    .venv/bin/python bench/language_detection.py [--data tests/data/languages]

Every file named <anything>_<code>.txt in the folder is a text in that language (this issue's
answers, answer_<code>.txt, and the splitting fixtures, split_<code>.txt): each whole file, and
each of its sentences alone (pipeline/segment.py, in its language), is told by detect_language,
and counted right, unsure (None) or wrong. A file in a script factsite refuses (answer_bo.txt) is
left out. Then what the detector costs: its model's first load in this process (time and memory)
and the time to tell a 3,000-character text (languages.SAMPLE_CHARS, what a page is told from)."""

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verification.pipeline import languages, segment  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def resident_mb() -> float:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "languages")
    parser.add_argument("--repeat", type=int, default=200, help="texts told to time one (default 200)")
    args = parser.parse_args()

    before = resident_mb()
    start = time.perf_counter()
    languages.detect_language("Der Eiffelturm steht auf dem Marsfeld in Paris.")
    print(f"model loaded and first text told in {1000 * (time.perf_counter() - start):.0f} ms, "
          f"{resident_mb() - before:.0f} MB more resident")  # fmt: skip

    texts = {path: path.read_text(encoding="utf-8") for path in sorted(args.data.glob("*_*.txt"))}
    texts = {path: text for path, text in texts.items() if not languages.unsupported_script(text)}
    wholes, sentences = Counter(), {}
    for path, text in texts.items():
        code = path.stem.rsplit("_", 1)[1]
        wholes[_outcome(languages.detect_language(text), code)] += 1
        counts = sentences.setdefault(code, Counter())
        for sentence in segment.segment(text, code):
            counts[_outcome(languages.detect_language(sentence.text), code)] += 1
    print(f"whole texts ({len(texts)}): {_line(wholes)}")
    print("single sentences:")
    for code, counts in sorted(sentences.items()):
        print(f"  {code}: {_line(counts)}")
    print(f"  all: {_line(sum(sentences.values(), Counter()))}")

    sample = ("".join(texts.values()) * 50)[: languages.SAMPLE_CHARS]
    start = time.perf_counter()
    for _ in range(args.repeat):
        languages.detect_language(sample)
    print(f"a {len(sample):,}-character text told in {1000 * (time.perf_counter() - start) / args.repeat:.2f} ms")


def _outcome(found: str | None, code: str) -> str:
    return "right" if found == code else "unsure" if found is None else "wrong"


def _line(counts: Counter) -> str:
    total = sum(counts.values()) or 1
    return ", ".join(f"{counts[key]} {key} ({100 * counts[key] / total:.0f} %)" for key in ("right", "unsure", "wrong"))


if __name__ == "__main__":
    main()
