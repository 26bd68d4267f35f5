"""Passage ranking in other languages than English, against English (issue 36), and what a
sentence of each language costs the model.

    .venv/bin/python bench/languages.py --data DIR [--languages en,es,fr,id,ja,zh] [--claims 300]
        [--distractors 20] [--multilingual-model NAME] [--json out.json] [--md out.md]
    .venv/bin/python bench/languages.py --xquad DIR [--languages en,de,zh,...] [--questions N]
        [--multilingual-model NAME] [--json out.json] [--md out.md]

The set is XFEVER (Chang et al., ROCLING 2023; BSD-3-Clause, its claims and evidence from FEVER):
FEVER's claims with their gold evidence, machine-translated into es, fr, id, ja and zh, line by
line parallel to English. DIR is its experiments/data/ with one folder per language, each with
dev.jsonl or test.jsonl ({"id", "claim", "evidence", "label"}), as its 01_prepare.sh unpacks them
(the repository nii-yamagishilab/xfever keeps the archives in Git LFS; the same data is in Zenodo
record 8206962).

Per language, the same claims (ids present in every language asked for, labelled SUPPORTS or
REFUTES, in file order): each claim's page is its gold evidence and the evidence of
`--distractors` other claims (the same ones in every language), split into sentences in that
language (pipeline/segment.py); the claim's gold sentences are those of its own evidence. The
page is ranked by BM25 tokenised in the language (passages.Corpus(sentences, language)), by
BM25 tokenised as English (today's ranker on every language), and, when the multilingual model
loads, by the dense re-scorer with it. recall@k: the share of gold sentences in the top k, over
claims; MRR: 1 / the rank of the first gold sentence. Tokens per sentence: characters / 4, as
bench/tokens.py counts what the model reads (its fake LLM counts so); for Chinese and Japanese a
real tokenizer counts about one token per character, several times more.

`--xquad DIR` ranks instead on XQuAD (Artetxe, Ruder and Yogatama, ACL 2020; CC BY-SA 4.0;
google-deepmind/xquad): 240 SQuAD v1.1 dev paragraphs and their 1,190 questions, professionally
translated into ar, de, el, es, hi, ro, ru, th, tr, vi and zh. DIR holds its xquad.<code>.json
(SQuAD v1.1 format). It is not a claim-evidence set: a question stands in for the claim, the
sentences of its paragraph (split in the paragraph's language, segment.split_sentences as
passages.page_sentences does) for the page, and the sentence(s) holding an answer's answer_start
for the gold evidence. Each language is ranked on the questions present in every language asked
for (English, the reference, first), by the same three rankers; "paragraph order" is what a
ranker that scores nothing gets (ties keep the page's order), the floor for that split.

`--answers DIR` counts the same for texts named answer_<code>.txt in DIR (tests/data/languages/
holds one short answer, the same in each language), and needs no data set."""

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verification.clients import embeddings, embeddings_languages  # noqa: E402
from verification.pipeline import passages  # noqa: E402
from verification.pipeline.segment import segment, split_sentences  # noqa: E402

LANGUAGES = ("en", "es", "fr", "id", "ja", "zh")
SPLITS = ("dev", "test")
KS = (1, 5)
XQUAD_KS = (1, 3)
SEED = 36


def read_claims(data: Path, language: str) -> dict[str, dict]:
    """The language's claims with evidence, by id, from its dev (else test) split."""
    for split in SPLITS:
        path = data / language / f"{split}.jsonl"
        if path.exists():
            rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
            return {
                str(row["id"]): row
                for row in rows
                if row.get("evidence") and str(row.get("label", "S"))[:1].upper() in ("S", "R")
            }
    raise SystemExit(f"no {' or '.join(SPLITS)}.jsonl in {data / language}: see this script's docstring")


def build_cases(data: Path, languages: list[str], claims: int, distractors: int) -> dict[str, list[dict]]:
    """Per language: [{claim, sentences, gold}] for the same claims and distractors."""
    rows = {language: read_claims(data, language) for language in languages}
    ids = [i for i in rows[languages[0]] if all(i in rows[language] for language in languages)][:claims]
    rng = random.Random(SEED)
    others = {i: rng.sample([j for j in ids if j != i], min(distractors, len(ids) - 1)) for i in ids}
    cases: dict[str, list[dict]] = {}
    for language in languages:
        cases[language] = []
        for i in ids:
            sentences, gold = [], set()
            for j in sorted([i, *others[i]], key=lambda j: rng.random()):
                found = [s.text for s in segment(rows[language][j]["evidence"], language)]
                if j == i:
                    gold.update(range(len(sentences), len(sentences) + len(found)))
                sentences.extend(found)
            if gold:
                cases[language].append({"claim": rows[language][i]["claim"], "sentences": sentences, "gold": gold})
    return cases


def scores(cases: list[dict], language: str | None, embedder=None, ks=KS) -> dict[str, float]:
    """recall@k and MRR of `cases` ranked by BM25 tokenised in `language` (and `embedder`), or
    in the page's order when `language` is None. Cases sharing a sentence list share its corpus."""
    recall = {k: [] for k in ks}
    reciprocal = []
    corpora: dict[int, passages.Corpus] = {}
    started = time.perf_counter()
    for case in cases:
        if language is None:
            ranked = list(range(len(case["sentences"])))
        else:
            key = id(case["sentences"])
            corpus = corpora.get(key) or corpora.setdefault(key, passages.Corpus(case["sentences"], language))
            ranked = [
                int(i) for i in np.argsort(-passages.rank_sentences(case["claim"], corpus, embedder), kind="stable")
            ]
        for k in ks:
            recall[k].append(len(case["gold"] & set(ranked[:k])) / min(k, len(case["gold"])))
        first = next(rank for rank, i in enumerate(ranked, 1) if i in case["gold"])
        reciprocal.append(1 / first)
    return {
        **{f"recall@{k}": round(statistics.mean(recall[k]), 3) for k in ks},
        "mrr": round(statistics.mean(reciprocal), 3),
        "ms_per_claim": round(1000 * (time.perf_counter() - started) / max(1, len(cases)), 2),
    }


def tokens_per_sentence(cases: list[dict]) -> dict[str, float]:
    return tokens_per_sentence_of(list(dict.fromkeys(s for case in cases for s in case["sentences"])))


def tokens_per_sentence_of(sentences: list[str]) -> dict[str, float]:
    return {
        "sentences": len(sentences),
        "chars_per_sentence": round(statistics.mean(len(s) for s in sentences), 1),
        "tokens_per_sentence": round(statistics.mean(len(s) // 4 for s in sentences), 1),
    }


def answer_tokens(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("answer_*.txt")):
        language = path.stem.removeprefix("answer_")
        sentences = [s.text for s in segment(path.read_text(encoding="utf-8"), language)]
        rows.append({"language": language, "characters": sum(map(len, sentences)), **tokens_per_sentence_of(sentences)})
    return rows


def answers_table(rows: list[dict]) -> str:
    lines = ["| answer | sentences | chars / sentence | tokens / sentence (chars / 4) |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {r['language']} | {r['sentences']} | {r['chars_per_sentence']} | {r['tokens_per_sentence']} |" for r in rows
    ]
    return "\n".join(lines)


def multilingual_embedder(name: str):
    """The multilingual model, loaded now (the bench waits for it, where a run ranks by BM25 while it
    loads: clients/embeddings_languages.py); None when none is named or it cannot be loaded."""
    if not name:
        return None
    try:
        return embeddings.shared_embedder(name)
    except Exception as error:  # no internet to fetch it, a wrong name: BM25 rows only
        print(f"the multilingual model {name} could not be loaded ({error}): BM25 only", file=sys.stderr)
        return None


def measure(args: argparse.Namespace) -> dict:
    languages = [code.strip() for code in args.languages.split(",") if code.strip()]
    cases = build_cases(Path(args.data), languages, args.claims, args.distractors)
    embedder = multilingual_embedder(args.multilingual_model)
    rows = []
    for language in languages:
        row = {"language": language, "claims": len(cases[language]), **tokens_per_sentence(cases[language])}
        row["bm25_language"] = scores(cases[language], language)
        row["bm25_english"] = scores(cases[language], "en")
        if embedder is not None:
            row["dense_multilingual"] = scores(cases[language], language, embedder)
        rows.append(row)
    return {
        "set": "XFEVER",
        "data": str(args.data),
        "claims": args.claims,
        "distractors": args.distractors,
        "multilingual_model": args.multilingual_model if embedder is not None else None,
        "rows": rows,
    }


def read_xquad(folder: Path, language: str) -> dict[str, dict]:
    """XQuAD's questions in `language` by id: {question, context, starts} (SQuAD v1.1 JSON)."""
    path = folder / f"xquad.{language}.json"
    if not path.exists():
        raise SystemExit(f"no {path}: see bench/results/languages.md for how XQuAD is fetched")
    rows = {}
    for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                starts = sorted({int(a["answer_start"]) for a in qa.get("answers", [])})
                rows[str(qa["id"])] = {"question": qa["question"], "context": paragraph["context"], "starts": starts}
    return rows


def gold_sentences(spans: list, starts: list[int]) -> set[int]:
    """The sentences whose span holds an answer's start; a start between two sentences (on a
    space) counts for the sentence after it."""
    gold = set()
    for at in starts:
        found = next((i for i, s in enumerate(spans) if s.start <= at < s.end), None)
        if found is None:
            found = next((i for i, s in enumerate(spans) if s.start > at), None)
        if found is not None:
            gold.add(found)
    return gold


def xquad_cases(folder: Path, languages: list[str], limit: int) -> tuple[dict[str, list[dict]], dict[str, dict]]:
    """Per language: [{claim, sentences, gold}] for the questions present in every language (a
    paragraph's cases share one sentence list), and per language the splitter's figures."""
    rows = {language: read_xquad(folder, language) for language in languages}
    ids = [i for i in rows[languages[0]] if all(i in rows[language] for language in languages)]
    ids = ids[:limit] if limit else ids
    cases: dict[str, list[dict]] = {}
    split: dict[str, dict] = {}
    for language in languages:
        pages: dict[str, tuple[list, list[str]]] = {}
        cases[language], missed = [], 0
        for i in ids:
            row = rows[language][i]
            if row["context"] not in pages:
                spans = split_sentences(row["context"], language=language)
                pages[row["context"]] = (spans, [s.text for s in spans])
            spans, sentences = pages[row["context"]]
            gold = gold_sentences(spans, row["starts"])
            if gold:
                cases[language].append({"claim": row["question"], "sentences": sentences, "gold": gold})
            else:
                missed += 1
        counts = [len(sentences) for _, sentences in pages.values()]
        split[language] = {
            "paragraphs": len(pages),
            "sentences_per_paragraph": round(statistics.mean(counts), 2),
            "one_sentence_paragraphs": sum(1 for n in counts if n == 1),
            "questions_without_gold": missed,
        }
    return cases, split


def measure_xquad(args: argparse.Namespace) -> dict:
    folder = Path(args.xquad)
    if args.languages:
        languages = [code.strip() for code in args.languages.split(",") if code.strip()]
    else:
        present = sorted(p.name.split(".")[1] for p in folder.glob("xquad.*.json"))
        languages = ["en"] + [code for code in present if code != "en"] if "en" in present else present
    if not languages:
        raise SystemExit(f"no xquad.<code>.json in {folder}")
    cases, split = xquad_cases(folder, languages, args.questions)
    embedder = multilingual_embedder(args.multilingual_model)
    rows = []
    for language in languages:
        row = {"language": language, "questions": len(cases[language]), **split[language]}
        row["bm25_language"] = scores(cases[language], language, ks=XQUAD_KS)
        row["bm25_english"] = scores(cases[language], "en", ks=XQUAD_KS)
        if embedder is not None:
            row["dense_multilingual"] = scores(cases[language], language, embedder, ks=XQUAD_KS)
        row["paragraph_order"] = scores(cases[language], None, ks=XQUAD_KS)
        rows.append(row)
    return {
        "set": "XQuAD",
        "data": str(folder),
        "questions": len(cases[languages[0]]) if languages else 0,
        "multilingual_model": args.multilingual_model if embedder is not None else None,
        "multilingual_model_asked": args.multilingual_model or None,
        "rows": rows,
    }


def xquad_table(result: dict) -> str:
    methods = ["bm25_language", "bm25_english"] + (["dense_multilingual"] if result["multilingual_model"] else [])
    methods.append("paragraph_order")
    head = ["language", "questions"]
    for method in methods:
        head += [f"{method} R@1", f"{method} R@3", f"{method} MRR"]
    head += ["sentences / paragraph", "one-sentence paragraphs"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for row in result["rows"]:
        cells = [row["language"], str(row["questions"])]
        for method in methods:
            cells += [f"{row[method]['recall@1']:.3f}", f"{row[method]['recall@3']:.3f}", f"{row[method]['mrr']:.3f}"]
        cells += [str(row["sentences_per_paragraph"]), f"{row['one_sentence_paragraphs']} / {row['paragraphs']}"]
        lines.append("| " + " | ".join(cells) + " |")
    if result["multilingual_model"]:
        model = result["multilingual_model"]
    elif result["multilingual_model_asked"]:
        model = f"{result['multilingual_model_asked']} could not be loaded (BM25 only)"
    else:
        model = "none asked (BM25 only)"
    lines.append("")
    lines.append(
        f"XQuAD ({result['data']}): {result['questions']} questions, each ranking the sentences of its own "
        f"paragraph; gold: the sentence holding the answer's start; multilingual model: {model}."
    )
    return "\n".join(lines)


def table(result: dict) -> str:
    methods = ["bm25_language", "bm25_english"] + (["dense_multilingual"] if result["multilingual_model"] else [])
    head = ["language", "claims"]
    for method in methods:
        head += [f"{method} R@1", f"{method} R@5", f"{method} MRR"]
    head += ["sentences", "chars / sentence", "tokens / sentence"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for row in result["rows"]:
        cells = [row["language"], str(row["claims"])]
        for method in methods:
            cells += [f"{row[method]['recall@1']:.3f}", f"{row[method]['recall@5']:.3f}", f"{row[method]['mrr']:.3f}"]
        cells += [str(row["sentences"]), str(row["chars_per_sentence"]), str(row["tokens_per_sentence"])]
        lines.append("| " + " | ".join(cells) + " |")
    model = result["multilingual_model"] or "not loaded (BM25 only)"
    lines.append("")
    lines.append(
        f"{result['set']} ({result['data']}), {result['claims']} claims asked for, each ranked among the "
        f"evidence of {result['distractors']} others; multilingual model: {model}."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="XFEVER's experiments/data/ (a folder per language)")
    parser.add_argument("--xquad", help="a folder of XQuAD's xquad.<code>.json: rank its questions' paragraphs")
    parser.add_argument("--answers", help="a folder of answer_<code>.txt: tokens per sentence of each")
    parser.add_argument(
        "--languages",
        help=f"comma list; the first is the reference (default {','.join(LANGUAGES)}; with --xquad, en and "
        "every language in the folder)",
    )
    parser.add_argument("--questions", type=int, default=0, help="with --xquad: the first N questions (0: all)")
    parser.add_argument("--claims", type=int, default=300, help="claims per language (the same in each)")
    parser.add_argument("--distractors", type=int, default=20, help="other claims' evidence on each claim's page")
    parser.add_argument(
        "--multilingual-model",
        default=embeddings_languages.multilingual_model_name(),
        help="dense re-scorer for every language ('' for none; default: EMBEDDING_MODEL_MULTILINGUAL)",
    )
    parser.add_argument("--json", help="write the numbers here")
    parser.add_argument("--md", help="write the table here")
    args = parser.parse_args()
    if not (args.data or args.xquad or args.answers):
        parser.error("give --data, --xquad or --answers")
    if args.data and args.xquad:
        parser.error("give --data or --xquad, not both")
    result, texts = {}, []
    if args.data:
        args.languages = args.languages or ",".join(LANGUAGES)
        result = measure(args)
        texts.append(table(result))
    if args.xquad:
        result = measure_xquad(args)
        texts.append(xquad_table(result))
    if args.answers:
        result["answers"] = answer_tokens(Path(args.answers))
        texts.append(answers_table(result["answers"]))
    text = "\n\n".join(texts)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    if args.md:
        Path(args.md).write_text(text + "\n")


if __name__ == "__main__":
    main()
