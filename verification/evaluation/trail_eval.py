"""Trails with labelled claims: reading them, and VeriTrail's metrics over what a check found.

The format: JSON lines, one object per labelled claim (blank lines are skipped):

    {"trail": {"nodes": [...]},            # the trail itself (trail_graph's format), or
     "trail_file": "trails/book-7.json",   # a file holding it, relative to this .jsonl file
     "claim": "The keeper counted ninety gulls.",
     "label": "fully_supported" | "not_fully_supported" | "inconclusive",
     "error_stage": 2 | "final" | null,    # where an unsupported claim entered, when known
     "id": "book-7-claim-3"}               # optional: how the report names the claim

`error_stage` is for not_fully_supported claims only: the stage (an integer, as trail_graph counts
stages: a node's longest distance from a source unless the trail gives one) of the intermediate
texts that first state the claim, or "final" when the final text is the first. It must be a stage
some intermediate node of the trail has, which catches stages counted from 1 instead of 0. A
directory is read as all its *.jsonl files, in name order; trails named by several lines are read
once.

The metrics, as VeriTrail reports them. Fully Supported against Not Fully Supported: macro-F1 (the
mean of the two classes' F1, over the classes that occur among gold labels or predictions) and
balanced accuracy (the mean of the two classes' recall, over the classes that occur among gold
labels). Claims labelled inconclusive are left out, as in the paper. A predicted contradicted
counts as not fully supported (VeriTrail merges the two); a predicted inconclusive on a claim
labelled either way counts as wrong: it is a miss for its gold class and a prediction of neither.
Error-stage accuracy: over the claims labelled not_fully_supported with a known stage, the share
whose predicted error stage is right (kind "stage" with the gold stage among its stages, or kind
"final_step" for "final"); a claim not predicted Not Fully Supported has no error stage and counts
as wrong, and how many were predicted so is reported beside it."""

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from verification.pipeline.trail_graph import Trail, TrailError, parse_trail
from verification.pipeline.trail_loop import ClaimTrailResult, ErrorStage
from verification.pipeline.trail_verdict import TrailVerdict

FULLY_SUPPORTED, NOT_FULLY_SUPPORTED, INCONCLUSIVE = "fully_supported", "not_fully_supported", "inconclusive"
LABELS = (FULLY_SUPPORTED, NOT_FULLY_SUPPORTED, INCONCLUSIVE)
_KEYS = frozenset({"trail", "trail_file", "claim", "label", "error_stage", "id"})
# Evaluation reads files its operator chose, so these bound memory, not abuse; well above the app's
# TRAIL_MAX_* defaults, since FABLES+'s books alone average about 118k tokens.
MAX_NODES = 100_000
MAX_CHARS = 200_000_000

GoldStage = int | Literal["final"] | None


class LabelledTrailError(ValueError):
    """A labelled-trail file that cannot be read; the message names the file and the line."""


@dataclass(frozen=True)
class LabelledClaim:
    # "<file>, line <n>", or the line's own "id".
    name: str
    trail: dict[str, Any]
    claim: str
    label: str
    error_stage: GoldStage


def read_labelled(path: str | Path, *, max_nodes: int = MAX_NODES, max_chars: int = MAX_CHARS) -> list[LabelledClaim]:
    """The labelled claims of one .jsonl file, or of every *.jsonl file in a directory. Each
    trail is checked with parse_trail (within the limits given) before anything runs."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise LabelledTrailError(f"{path}: no *.jsonl files in this directory")
    elif path.is_file():
        files = [path]
    else:
        raise LabelledTrailError(f"{path}: no such file or directory")
    reader = _Reader(max_nodes, max_chars)
    claims = []
    for file in files:
        for line_number, line in _lines(file):
            where = f"{file}, line {line_number}"
            try:
                claims.append(reader.claim(json.loads(line), file, where))
            except json.JSONDecodeError as error:
                raise LabelledTrailError(f"{where}: not JSON ({error.msg})") from None
            except ValueError as error:
                raise LabelledTrailError(f"{where}: {error}") from None
    return claims


def _lines(file: Path) -> Iterable[tuple[int, str]]:
    try:
        text = file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise LabelledTrailError(f"{file}: not UTF-8 text (byte {error.start})") from None
    return ((number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip())


@dataclass
class _Reader:
    """One line → a LabelledClaim (ValueError saying what is wrong); each trail file read once."""

    max_nodes: int
    max_chars: int
    files: dict[Path, tuple[dict[str, Any], Trail]] = field(default_factory=dict)

    def claim(self, record: Any, file: Path, where: str) -> LabelledClaim:
        if not isinstance(record, dict):
            raise ValueError("a line is one JSON object")
        if extra := set(record) - _KEYS:
            raise ValueError(f"unknown key {sorted(extra)[0]!r} (the keys are {', '.join(sorted(_KEYS))})")
        claim, label, name = record.get("claim"), record.get("label"), record.get("id", where)
        if not isinstance(claim, str) or not claim.strip():
            raise ValueError("'claim' is missing or not text")
        if label not in LABELS:
            raise ValueError(f"'label' is {label!r}: one of {', '.join(LABELS)}")
        if not isinstance(name, str):
            raise ValueError("'id' is text")
        if ("trail" in record) == ("trail_file" in record):
            raise ValueError("give the trail as 'trail' or as 'trail_file', one of the two")
        if "trail" in record:
            data, trail = record["trail"], self.parse(record["trail"])
        else:
            data, trail = self.trail_file(record["trail_file"], file)
        return LabelledClaim(name, data, claim, label, _error_stage(record.get("error_stage"), label, trail))

    def parse(self, data: Any) -> Trail:
        try:
            return parse_trail(data, max_nodes=self.max_nodes, max_chars=self.max_chars)
        except TrailError as error:
            raise ValueError(f"not a valid trail: {error}") from None

    def trail_file(self, relative: Any, file: Path) -> tuple[dict[str, Any], Trail]:
        if not isinstance(relative, str) or not relative.strip():
            raise ValueError("'trail_file' is a path, relative to this file")
        path = (file.parent / relative).resolve()
        if path not in self.files:
            if not path.is_file():
                raise ValueError(f"trail_file {relative!r}: no such file ({path})")
            try:
                data = json.loads(path.read_text(encoding="utf-8-sig"))
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                raise ValueError(f"trail_file {relative!r}: not JSON text ({error})") from None
            try:
                self.files[path] = data, self.parse(data)
            except ValueError as error:
                raise ValueError(f"trail_file {relative!r}: {error}") from None
        return self.files[path]


def _error_stage(value: Any, label: str, trail: Trail) -> GoldStage:
    if value is None:
        return None
    if label != NOT_FULLY_SUPPORTED:
        raise ValueError(f"'error_stage' is for not_fully_supported claims only, and this one is {label}")
    if value == "final":
        return "final"
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"'error_stage' is {value!r}: a stage (a whole number), \"final\" or null")
    intermediate = sorted({trail.stage(n) for n in trail.ids if not trail.is_root(n) and n != trail.final})
    if value not in intermediate:
        stages = ", ".join(map(str, intermediate)) or "none"
        raise ValueError(f"'error_stage' {value} is no intermediate text's stage in its trail (theirs: {stages})")
    return value


# ---- metrics ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrailMetrics:
    claims: int
    # Claims labelled fully or not fully supported: the ones macro-F1 and balanced accuracy count.
    scored: int
    # Left out of both, as in the paper.
    inconclusive_labels: int
    # Among the scored: counted wrong.
    inconclusive_predictions: int
    f1_fully_supported: float | None
    f1_not_fully_supported: float | None
    macro_f1: float | None
    balanced_accuracy: float | None
    # Claims labelled not_fully_supported with a known stage; of those, predicted Not Fully
    # Supported; of those, at the right stage.
    stage_claims: int
    stage_predicted: int
    stage_correct: int
    error_stage_accuracy: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Scored = tuple[str, TrailVerdict | str, GoldStage, ErrorStage | None]


def trail_metrics(rows: Iterable[Scored]) -> TrailMetrics:
    """Over (gold label, predicted verdict, gold error stage, predicted error stage) rows; see the
    module's doc for what counts. A metric with nothing to count is None."""
    pairs: Counter[tuple[str, str]] = Counter()
    claims = stage_claims = stage_predicted = stage_correct = 0
    for label, verdict, gold_stage, found in rows:
        claims += 1
        predicted = _predicted(TrailVerdict(verdict))
        pairs[label, predicted] += 1
        if label == NOT_FULLY_SUPPORTED and gold_stage is not None:
            stage_claims += 1
            stage_predicted += predicted == NOT_FULLY_SUPPORTED
            stage_correct += stage_found(gold_stage, found)
    f1, recall = {}, {}
    for kind, other in ((FULLY_SUPPORTED, NOT_FULLY_SUPPORTED), (NOT_FULLY_SUPPORTED, FULLY_SUPPORTED)):
        tp, fp = pairs[kind, kind], pairs[other, kind]
        fn = pairs[kind, other] + pairs[kind, INCONCLUSIVE]
        f1[kind] = _share(2 * tp, 2 * tp + fp + fn)
        recall[kind] = _share(tp, tp + fn)
    return TrailMetrics(
        claims=claims,
        scored=sum(n for (label, _), n in pairs.items() if label != INCONCLUSIVE),
        inconclusive_labels=sum(n for (label, _), n in pairs.items() if label == INCONCLUSIVE),
        inconclusive_predictions=pairs[FULLY_SUPPORTED, INCONCLUSIVE] + pairs[NOT_FULLY_SUPPORTED, INCONCLUSIVE],
        f1_fully_supported=f1[FULLY_SUPPORTED],
        f1_not_fully_supported=f1[NOT_FULLY_SUPPORTED],
        macro_f1=_mean(f1.values()),
        balanced_accuracy=_mean(recall.values()),
        stage_claims=stage_claims,
        stage_predicted=stage_predicted,
        stage_correct=stage_correct,
        error_stage_accuracy=_share(stage_correct, stage_claims),
    )


def _predicted(verdict: TrailVerdict) -> str:
    if verdict is TrailVerdict.INCONCLUSIVE:
        return INCONCLUSIVE
    return NOT_FULLY_SUPPORTED if verdict.not_fully_supported else FULLY_SUPPORTED


def stage_found(gold: GoldStage, found: ErrorStage | None) -> bool:
    """Whether the predicted error stage is the labelled one."""
    if found is None or gold is None:
        return False
    if gold == "final":
        return found.kind == "final_step"
    return found.kind == "stage" and gold in found.stages


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _mean(values: Iterable[float | None]) -> float | None:
    defined = [value for value in values if value is not None]
    return sum(defined) / len(defined) if defined else None


# ---- evaluation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrailEvaluation:
    results: tuple[tuple[LabelledClaim, ClaimTrailResult], ...]
    metrics: TrailMetrics


def evaluate_trails(
    claims: Iterable[LabelledClaim], check: Callable[[dict[str, Any], str], ClaimTrailResult]
) -> TrailEvaluation:
    """Each labelled claim checked by `check(trail_json, claim_text)`, then the metrics."""
    results = tuple((claim, check(claim.trail, claim.claim)) for claim in claims)
    metrics = trail_metrics((claim.label, result.verdict, claim.error_stage, result.error) for claim, result in results)
    return TrailEvaluation(results, metrics)
