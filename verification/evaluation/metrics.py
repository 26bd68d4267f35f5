"""Accuracy metrics, pure: sentence-level binary F1 (FavaBench, as in the FACTS&EVIDENCE paper),
bootstrap intervals over texts, error types caught, the judge's stance classification and
sentence-boundary F1. No Django: the runner hands in plain numbers and labels."""

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .annotated import ERROR_TYPES, ErrorSpan

# ---- binary: "not factual" is the positive class, as in the paper ---------------------------


@dataclass
class Binary:
    """Counts of a binary decision whose positive class is "not factual". Precision, recall and
    F1 are 0.0 when undefined (nothing predicted positive, nothing positive, or both zero), so a
    detector that flags nothing scores 0, never NaN, and the report stays valid JSON."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float:
        # Equal to 2PR/(P+R) whenever that is defined, and 0 exactly when it is not.
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    def to_dict(self) -> dict:
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def _touches(start: int, end: int, span: ErrorSpan) -> bool:
    """Half-open intervals share a character. An insertion (an empty span) has none: it belongs
    to a sentence when its point lies within it or at its end."""
    if span.start == span.end:
        return start <= span.start <= end
    return span.start < end and start < span.end


def sentence_is_factual(start: int, end: int, errors: Iterable[ErrorSpan]) -> bool:
    """The paper's gold label: output[start:end] is factual unless an error span overlaps it."""
    return not any(_touches(start, end, span) for span in errors)


def predict_not_factual(credibility: float | None, threshold: float) -> bool:
    """Our prediction for one sentence. No score (no evidence counted: nothing found, every page
    irrelevant, or the sentence has no claims) is predicted not factual: a fact-checker that
    confirms nothing has not verified the sentence, and counting it as factual would reward
    failing to find evidence. The report counts these sentences separately ("unscored")."""
    return credibility is None or credibility < threshold


def binary(pairs: Iterable[tuple[bool, bool]]) -> Binary:
    """Counts over (gold_not_factual, predicted_not_factual) pairs."""
    counts = Binary()
    for gold, predicted in pairs:
        if gold and predicted:
            counts.tp += 1
        elif predicted:
            counts.fp += 1
        elif gold:
            counts.fn += 1
        else:
            counts.tn += 1
    return counts


STATISTICS = ("precision", "recall", "f1")


def bootstrap_interval(
    groups: Sequence[Sequence[tuple[bool, bool]]],
    statistic: str = "f1",
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of `statistic` over the pooled pairs. Whole texts (groups)
    are resampled, not sentences: sentences of one text share its topic and its model's habits,
    so resampling them one by one would give too narrow an interval. The same seed gives the same
    interval. No texts → (0.0, 0.0)."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic should be one of {', '.join(STATISTICS)}, not {statistic!r}")
    if not groups:
        return (0.0, 0.0)
    per_text = np.array([_counts_tuple(binary(group)) for group in groups], dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(samples, len(groups)))
    tp, fp, fn, _ = per_text[picks].sum(axis=1).T
    numerator, denominator = {
        "precision": (tp, tp + fp),
        "recall": (tp, tp + fn),
        "f1": (2 * tp, 2 * tp + fp + fn),
    }[statistic]
    values = np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)
    tail = (1 - level) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return (float(low), float(high))


def _counts_tuple(counts: Binary) -> tuple[int, int, int, int]:
    return (counts.tp, counts.fp, counts.fn, counts.tn)


# ---- error types caught ---------------------------------------------------------------------


def span_caught(span: ErrorSpan, sentences: Sequence[tuple[int, int, bool]]) -> bool:
    """Whether some sentence touching the span, given as (start, end, predicted_not_factual),
    was predicted not factual."""
    return any(predicted and _touches(start, end, span) for start, end, predicted in sentences)


def error_types_caught(spans_with_caught: Iterable[tuple[str, bool]]) -> dict[str, dict[str, int]]:
    """Per error type, how many spans were caught and missed: FavaBench's types first, in its
    order, then any other type met, alphabetically."""
    caught, missed = Counter(), Counter()
    for error_type, was_caught in spans_with_caught:
        (caught if was_caught else missed)[error_type] += 1
    seen = set(caught) | set(missed)
    order = [t for t in ERROR_TYPES if t in seen] + sorted(seen - set(ERROR_TYPES))
    return {t: {"caught": caught[t], "missed": missed[t]} for t in order}


# ---- claim-stance: the judge against gold stances -------------------------------------------

# Our judge's prompt (verification/pipeline/judge.py, SYSTEM_PROMPT) calls a passage "supported"
# only when it "states or clearly implies that the claim is true": a passage that bears out only
# part of a claim does not, so partially-support cannot map to supported. The prompt does not say
# whether such a passage is not_supported or irrelevant ("says too little to decide"); we map it to
# not_supported, as a claim that is only partly right is not right as a whole, and the report
# spells the mapping out so partial-support confusions can be read for what they are.
STANCE_TO_VERDICT = {
    "completely-support": "supported",
    "partially-support": "not_supported",
    "refute": "not_supported",
    "irrelevant": "irrelevant",
}
VERDICT_LABELS = ("supported", "not_supported", "irrelevant")
FAILED = "failed"


def classification(pairs: Iterable[tuple[str, str | None]]) -> dict:
    """Accuracy, per-class precision/recall/F1/support, macro F1 and the confusion matrix over
    (gold, predicted) labels. A predicted None is a judgement that failed: it counts as wrong
    (against accuracy and its gold class's recall) and has its own "failed" column. Labels are
    our three verdicts in a fixed order, then any other label met; macro F1 averages the labels
    that occur in gold or predictions."""
    pairs = [(gold, predicted if predicted is not None else FAILED) for gold, predicted in pairs]
    seen = {label for pair in pairs for label in pair} - {FAILED}
    labels = [label for label in VERDICT_LABELS if label in seen] + sorted(seen - set(VERDICT_LABELS))
    counts = Counter(pairs)
    per_class = {label: _class_scores(label, counts) for label in labels}
    columns = [*labels, FAILED]
    correct = sum(n for (gold, predicted), n in counts.items() if gold == predicted)
    return {
        "labels": labels,
        "total": len(pairs),
        "correct": correct,
        "failed": sum(n for (_, predicted), n in counts.items() if predicted == FAILED),
        "accuracy": _ratio(correct, len(pairs)),
        "per_class": per_class,
        "macro_f1": _ratio(sum(scores["f1"] for scores in per_class.values()), len(per_class)),
        "confusion": {gold: {predicted: counts[(gold, predicted)] for predicted in columns} for gold in labels},
    }


def _class_scores(label: str, counts: Counter) -> dict:
    tp = counts[(label, label)]
    predicted = sum(n for (_, p), n in counts.items() if p == label)
    support = sum(n for (g, _), n in counts.items() if g == label)
    counts_of_label = Binary(tp=tp, fp=predicted - tp, fn=support - tp)
    return {
        "precision": counts_of_label.precision,
        "recall": counts_of_label.recall,
        "f1": counts_of_label.f1,
        "support": support,
    }


# ---- segments: sentence-boundary F1 ---------------------------------------------------------


def reference_boundaries(response: str, segments: Sequence[str]) -> set[int]:
    """Offsets in `response` where a reference segment ends (just after its last non-whitespace
    character, like our segmenter's sentence ends), the end of the whole text excluded since every
    splitter gets it right. Segments are found in order; whitespace may differ anywhere, because
    references re-join lines and drop or add spaces."""
    boundaries = set()
    position = 0
    for index, segment in enumerate(segments, start=1):
        characters = [re.escape(char) for char in segment if not char.isspace()]
        if not characters:
            continue
        found = re.compile(r"\s*".join(characters)).search(response, position)
        if found is None:
            words = " ".join(segment.split())[:60]
            raise ValueError(f"reference segment {index} ({words!r}) is not in the response after character {position}")
        position = found.end()
        if response[position:].strip():
            boundaries.add(position)
    return boundaries


def boundary_scores(predicted: set[int], reference: set[int], tolerance: int = 0) -> dict:
    """Boundary precision/recall/F1. A predicted boundary matches a reference boundary at most
    `tolerance` characters away, and each reference boundary matches at most one prediction
    (greedily in order, which is optimal for equal-width windows on a line). Both sides should be
    ends of non-whitespace text, so the default 0 asks for the exact place."""
    matched = 0
    references = sorted(reference)
    next_reference = 0
    for boundary in sorted(predicted):
        while next_reference < len(references) and references[next_reference] < boundary - tolerance:
            next_reference += 1
        if next_reference < len(references) and references[next_reference] <= boundary + tolerance:
            matched += 1
            next_reference += 1
    counts = Binary(tp=matched, fp=len(predicted) - matched, fn=len(reference) - matched)
    result = counts.to_dict()
    del result["tn"]  # every other offset of the text: not a meaningful count
    return result
