"""What `manage.py evaluate` was asked to do, checked before anything runs: the dataset and
file, the run settings (validated by the web form, as `manage.py verify` and the API validate
them), the score rule and threshold, and the --grid of other settings to compare."""

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings as django_settings

from verification.clients import providers
from verification.evaluation import datasets, engine
from verification.evaluation.journal import settings_key
from verification.scoring import DEFAULT_RULE, SCORE_RULES

DEFAULT_THRESHOLD = 0.3
DEFAULT_CONCURRENCY = 4
# --grid keys → run settings; `mode` as the --mode flag calls it.
GRID_KEYS = {
    "top_k_results": "top_k_results",
    "top_k_passages": "top_k_passages",
    "context_size": "context_size",
    "mode": "retrieval_mode",
}
# Run settings → the flag a person typed, for error messages.
FLAGS = {
    "model": "--model",
    "retrieval_mode": "--mode",
    "top_k_results": "--top-k-results",
    "top_k_passages": "--top-k-passages",
    "context_size": "--context",
}
# The form validates settings together with a text; this one sentence passes every text check,
# so only the settings' own errors remain.
SETTINGS_PROBE_TEXT = "Settings are checked with this sentence."


class EvaluationError(ValueError):
    """Bad options or configuration: the message says which and how to fix it."""


@dataclass(frozen=True)
class Plan:
    dataset: str
    path: Path
    out: Path
    run_settings: dict  # validated, as a run stores them
    score_rule: str = DEFAULT_RULE
    threshold: float = DEFAULT_THRESHOLD
    grid: tuple[dict, ...] = ()  # one dict of grid-key overrides per combination
    limit: int | None = None
    resume: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    grid_spec: tuple[str, ...] = ()  # --grid as given, for the report

    @property
    def settings(self) -> dict:
        """What decides an item's result (and must match to resume): per dataset."""
        if self.dataset == "favabench":
            return {**self.run_settings, "score_rule": self.score_rule}
        if self.dataset == "claim-stance":
            return {"model": self.run_settings["model"]}
        return {}

    def combination(self, overrides: dict) -> dict:
        return {**self.settings, **{GRID_KEYS[key]: value for key, value in overrides.items()}}

    def combinations(self) -> dict[str, dict]:
        """Settings key → the combination's settings: the command line's first, then the grid's
        (a grid combination equal to the command line's is run once)."""
        keys = {settings_key(self.settings): self.settings}
        for overrides in self.grid:
            combination = self.combination(overrides)
            keys.setdefault(settings_key(combination), combination)
        return keys


def make_plan(
    dataset: str,
    *,
    path: Path,
    out: Path | None,
    settings: dict,
    score_rule: str = DEFAULT_RULE,
    threshold: float = DEFAULT_THRESHOLD,
    grid: list[str] | None = None,
    limit: int | None = None,
    resume: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> Plan:
    """The options checked before anything runs. `settings` as VerificationForm names them."""
    if dataset not in datasets.DATASETS:
        raise EvaluationError(f"unknown dataset {dataset!r}: choose one of {', '.join(datasets.DATASETS)}")
    if score_rule not in SCORE_RULES:
        raise EvaluationError(f"--score-rule must be one of {', '.join(SCORE_RULES)}")
    if not 0 <= threshold <= 1:
        raise EvaluationError(f"--threshold must be between 0 and 1 (a credibility), not {threshold:g}")
    if limit is not None and limit < 0:
        raise EvaluationError(f"--limit must be 0 or more, not {limit}")
    if concurrency < 1:
        raise EvaluationError(f"--concurrency must be 1 or more, not {concurrency}")
    if grid and dataset != "favabench":
        raise EvaluationError("--grid compares settings of whole runs: it is for favabench only")
    if resume and out is None:
        raise EvaluationError("--resume needs --out DIR: the directory of the evaluation to finish")
    checked = validated_settings(settings)
    combinations = parse_grid(grid or [])
    for overrides in combinations:
        validated_settings({**settings, **{GRID_KEYS[k]: v for k, v in overrides.items()}}, grid=overrides)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Plan(
        dataset=dataset,
        path=path,
        out=out or Path(django_settings.VAR_DIR) / "evaluations" / f"{dataset}-{stamp}",
        run_settings=checked,
        score_rule=score_rule,
        threshold=threshold,
        grid=tuple(combinations),
        limit=limit,
        resume=resume,
        concurrency=concurrency,
        grid_spec=tuple(grid or ()),
    )


def validated_settings(settings: dict, grid: dict | None = None) -> dict:
    """Run settings checked by the web form (the same ranges, the model among LLM_MODELS)."""
    form = engine.verification_form(SETTINGS_PROBE_TEXT, settings)
    if form.is_valid():
        return form.run_settings()
    where = f"--grid {' '.join(f'{k}={v}' for k, v in grid.items())}: " if grid else ""
    problems = [f"{where}{FLAGS.get(name, name)}: {' '.join(messages)}" for name, messages in form.errors.items()]
    raise EvaluationError("\n".join(problems))


def parse_grid(specs: list[str]) -> list[dict]:
    """["top_k_results=1,3", "mode=dense,sparse"] → every combination, as overrides
    ({"top_k_results": 1, "mode": "dense"}, …), the first key varying slowest."""
    axes: dict[str, list] = {}
    for spec in specs:
        key, equals, values = spec.partition("=")
        key = key.strip().replace("-", "_")
        if not equals or key not in GRID_KEYS:
            raise EvaluationError(f"--grid {spec!r}: write KEY=V1,V2 with KEY one of {', '.join(GRID_KEYS)}")
        if key in axes:
            raise EvaluationError(f"--grid names {key} twice")
        choices = [value.strip() for value in values.split(",") if value.strip()]
        if not choices:
            raise EvaluationError(f"--grid {spec!r}: give at least one value")
        axes[key] = [value if key == "mode" else _integer(key, value) for value in choices]
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())] if axes else []


def _integer(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise EvaluationError(f"--grid {key}={value}: {key} takes whole numbers") from None


def configuration_problems(plan: Plan) -> list[str]:
    """What must be set before the dataset can run (segments needs nothing)."""
    if plan.dataset == "segments":
        return []
    return providers.configuration_problems(plan.run_settings["model"], web_search=plan.dataset == "favabench")
