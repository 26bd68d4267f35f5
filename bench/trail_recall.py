"""What the trail check's ranker pre-filter loses, on real pages: WiCE's dev claims and the web
pages they cite (../shared/data/wice-dev/, not in the repository). For each claim with gold
supporting sentences, the page's sentences go through trail_select.prompt_chunks as a large
node's would (BM25, the best TRAIL_RANK_TOP_K with ±1 neighbour, rank_above_sentences=0 so every
page is ranked); reported: the share of gold sentences still shown to the model (recall over the
union of the gold sets), the share of claims with a whole gold set shown, and the share of the
page's sentences sent.

    .venv/bin/python bench/trail_recall.py [--data ../shared/data/wice-dev/dev.jsonl] [--top-k 5 10 20 40]"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verification.pipeline.trail_select import SelectionOptions, prompt_chunks  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "wice-dev" / "dev.jsonl"


def measure(items: list[dict], top_k: int) -> dict:
    options = SelectionOptions(rank_top_k=top_k, rank_above_sentences=0, context=1, max_chars_per_prompt=10**9)
    found = gold_total = whole_sets = sent = offered = 0
    for item in items:
        sentences = item["evidence"]
        kept = {i for chunk in prompt_chunks(item["claim"], sentences, options) for i in chunk}
        gold = {i for group in item["supporting_sentences"] for i in group}
        found += len(gold & kept)
        gold_total += len(gold)
        whole_sets += any(set(group) <= kept for group in item["supporting_sentences"] if group)
        sent += len(kept)
        offered += len(sentences)
    return {
        "top_k": top_k,
        "claims": len(items),
        "gold_recall": found / gold_total,
        "claims_with_a_gold_set_shown": whole_sets / len(items),
        "share_of_sentences_sent": sent / offered,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--top-k", type=int, nargs="+", default=[5, 10, 20, 40])
    args = parser.parse_args()
    items = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    items = [item for item in items if any(item["supporting_sentences"]) and item["evidence"]]
    print(
        "| top k (±1 neighbour) | claims | gold sentences shown | claims with a whole gold set shown | sentences sent |"
    )
    print("| ---: | ---: | ---: | ---: | ---: |")
    for top_k in args.top_k:
        row = measure(items, top_k)
        print(
            f"| {top_k} | {row['claims']} | {row['gold_recall']:.3f} | {row['claims_with_a_gold_set_shown']:.3f} "
            f"| {row['share_of_sentences_sent']:.3f} |"
        )


if __name__ == "__main__":
    main()
