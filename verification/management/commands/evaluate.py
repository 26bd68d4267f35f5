"""`python manage.py evaluate DATASET --file PATH`: factsite's accuracy on a public benchmark,
or `python manage.py evaluate trail DIR`: trails with labelled claims (docs/trails-formats.md),
scored with VeriTrail's metrics (verification/evaluation/trails.py). For a benchmark,
through the same engine as the web app (verification/evaluation/runner.py does the work). Items
are kept as they finish in DIR/items.jsonl, so `--resume` finishes an interrupted evaluation;
the report is DIR/report.json, report.md and plots. Its runs are stored under their own client
("evaluate") and are not held to RUNS_PER_HOUR: an evaluation is an operator's tool."""

import time
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from verification.clients import providers
from verification.evaluation import plan as planning
from verification.evaluation import runner, trails
from verification.evaluation.datasets import DATASETS, DatasetError
from verification.evaluation.journal import ResumeError
from verification.evaluation.trail_eval import LabelledTrailError
from verification.management.run_options import add_run_settings_arguments
from verification.scoring import DEFAULT_RULE, SCORE_RULES


class Command(BaseCommand):
    help = "Measure factsite's accuracy on a dataset (favabench, claim-stance, segments) and write a report."

    def add_arguments(self, parser) -> None:
        parser.add_argument("dataset", choices=[*DATASETS, "trail"])
        parser.add_argument("path", nargs="?", type=Path, help="trail: a .jsonl file or a directory of them")
        parser.add_argument("--file", type=Path, help="the dataset file")
        parser.add_argument("--q", type=int, help="trail: Not Fully Supported verdicts in a row before a claim stops")
        parser.add_argument("--limit", type=int, help="evaluate only the first N items")
        add_run_settings_arguments(parser)
        parser.add_argument("--score-rule", choices=list(SCORE_RULES), default=DEFAULT_RULE)
        parser.add_argument(
            "--threshold",
            type=float,
            default=planning.DEFAULT_THRESHOLD,
            help="a sentence is predicted not factual below this credibility (or with none)",
        )
        parser.add_argument("--out", type=Path, help="the report's directory (default var/evaluations/DATASET-TIME)")
        parser.add_argument("--resume", action="store_true", help="finish the evaluation in --out, skipping done items")
        parser.add_argument(
            "--grid",
            nargs="+",
            metavar="KEY=V1,V2",
            help=f"also evaluate every combination (keys: {', '.join(planning.GRID_KEYS)}), e.g. top_k_results=1,3,5",
        )
        parser.add_argument(
            "--concurrency", type=int, default=planning.DEFAULT_CONCURRENCY, help="texts verified at once"
        )

    def handle(self, *args, **options) -> None:
        if options["dataset"] == "trail":
            return self._trails(options)
        if options["file"] is None:
            raise CommandError("--file is required: the dataset file")
        try:
            plan = planning.make_plan(
                options["dataset"],
                path=options["file"],
                out=options["out"],
                settings={
                    "model": options["model"],
                    "retrieval_mode": options["mode"],
                    "top_k_results": options["top_k_results"],
                    "top_k_passages": options["top_k_passages"],
                    "context_size": options["context"],
                },
                score_rule=options["score_rule"],
                threshold=options["threshold"],
                grid=options["grid"],
                limit=options["limit"],
                resume=options["resume"],
                concurrency=options["concurrency"],
            )
            items = runner.load_items(plan)
            problems = planning.configuration_problems(plan)
            if problems:
                raise CommandError("\n".join(problems))
            if plan.dataset == "favabench":
                # A fresh clone has no tables yet; once they exist this changes nothing.
                call_command("migrate", verbosity=0, interactive=False)
            paths = runner.evaluate(plan, items)
        except (DatasetError, ResumeError, planning.EvaluationError) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Report written to {plan.out}:")
        for path in paths:
            self.stdout.write(f"  {path}")

    def _trails(self, options) -> None:
        path = options["path"] or options["file"]
        if path is None:
            raise CommandError("give the labelled trails: manage.py evaluate trail DIR")
        problems = providers.configuration_problems(options["model"], web_search=False)
        if problems:
            raise CommandError("\n".join(problems))
        out = options["out"] or Path("var") / "evaluations" / f"trail-{time.strftime('%Y%m%d-%H%M%S')}"
        try:
            evaluation = trails.evaluate_trail_dir(path, model=options["model"], q=options["q"], out=out)
        except (LabelledTrailError, OSError) as error:
            raise CommandError(str(error)) from error
        metrics = evaluation.metrics
        self.stdout.write(
            f"{metrics.claims} claims ({metrics.scored} scored, {metrics.inconclusive_labels} labelled inconclusive)\n"
            f"macro-F1 {_number(metrics.macro_f1)}  balanced accuracy {_number(metrics.balanced_accuracy)}\n"
            f"error-stage accuracy {_number(metrics.error_stage_accuracy)} "
            f"({metrics.stage_correct} of {metrics.stage_claims}; "
            f"{metrics.stage_predicted} predicted not fully supported)"
        )
        self.stdout.write(f"Report written to {out / 'report.json'}")


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"
