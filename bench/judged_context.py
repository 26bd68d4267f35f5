"""How much of a passage's context the judge reads, and how much of the evidence it needs it
keeps, for judged_text's rule (`passages.shares_a_word`) and stricter ones (issue 29: "no passage
text the ranker scored as unrelated").

    .venv/bin/python bench/judged_context.py [--dense]

WiCE dev (../shared/data/wice-dev/dev.jsonl, read in place): each claim with gold sentences, its
cited page ranked (sparse unless --dense), the form's top 3 passages with context 1 joined as one
page's evidence (passages.page_excerpt). Per rule: the characters the judge reads; of the gold
sentences that sit in the passages' context (not the ranker's own sentences), the share it still
reads; and the share of claims with a whole gold set in what it reads."""

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.rescorer import MODEL, wice_cases  # noqa: E402
from verification.clients import embeddings  # noqa: E402
from verification.pipeline import passages  # noqa: E402


def rare_word(share: float):
    """Shares a claim word found in at most `share` of the passage's sentences (not its subject)."""

    def related(claim: set[str], sentence: set[str], passage) -> bool:
        counts = Counter(word for words in passage for word in words & claim)
        return any(counts[word] <= share * len(passage) for word in claim & sentence)

    return related


RULES = {
    "every sentence (before issue 29)": None,
    "sharing a word with the claim (now)": passages.shares_a_word,
    "sharing a word in at most 70 % of the passage's sentences": rare_word(0.7),
    "... at most 50 %": rare_word(0.5),
    "sharing two words": lambda claim, sentence, passage: len(claim & sentence) >= 2,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dense", action="store_true", help="rank with all-MiniLM-L6-v2 too (the default mode)")
    args = parser.parse_args()
    embedder = embeddings.SentenceEmbedder(embeddings.load_sentence_transformer(MODEL)) if args.dense else None
    read = {name: [] for name in RULES}
    context_kept = {name: [] for name in RULES}
    whole_set = {name: [] for name in RULES}
    cases = wice_cases(0)
    for case in cases:
        chosen = passages.select_passages(case.claim, case.sentences, top_k=3, context=1, embedder=embedder)
        evidence = passages.page_excerpt(chosen)
        if evidence is None:
            continue
        gold = [{case.sentences[i] for i in group} for group in case.gold]
        chosen_text = [evidence.text[start:end] for start, end in evidence.highlights]
        in_context = {
            s for s in set().union(*gold) if s in evidence.text and not any(s in c or c in s for c in chosen_text)
        }
        for name, rule in RULES.items():
            text = (
                evidence.text
                if rule is None
                else passages.judged_text(case.claim, evidence.text, evidence.highlights, related=rule)
            )
            read[name].append(len(text))
            if in_context:
                context_kept[name].append(sum(s in text for s in in_context) / len(in_context))
            whole_set[name].append(any(all(s in text for s in group) for group in gold))
    print(f"WiCE dev: {len(cases)} claims with gold sentences, {'dense' if args.dense else 'sparse'} ranking")
    print("| context sentences sent | characters | gold context kept | a gold set whole |")
    print("| --- | --- | --- | --- |")
    for name in RULES:
        kept = statistics.mean(context_kept[name])
        print(f"| {name} | {sum(read[name]):,} | {kept:.1%} | {statistics.mean(whole_set[name]):.3f} |")
    print(f"(gold context: the {len(context_kept['sharing two words'])} claims with a gold sentence in the context)")


if __name__ == "__main__":
    main()
