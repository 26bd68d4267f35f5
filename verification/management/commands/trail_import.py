"""`python manage.py trail_import langchain RUN.json` or `trail_import graphrag FOLDER --answer
ANSWER.txt [--report N …]`: what a pipeline already saved, written out as a trail
(docs/trails-formats.md says how each maps), ready for `manage.py verify --trail`, the form's
trail file or POST /api/trails. A GraphRAG answer's own "[Data: Reports (…)]" markers choose the
reports; --report names them by hand instead."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from verification.pipeline.trail_import import TrailImportError, graphrag_trail, langchain_map_reduce_trail


class Command(BaseCommand):
    help = "Write a trail (JSON) from a LangChain map-reduce run or a Microsoft GraphRAG output folder."

    def add_arguments(self, parser) -> None:
        parser.add_argument("kind", choices=["langchain", "graphrag"])
        parser.add_argument("source", type=Path, help="langchain: the run's JSON file; graphrag: the output folder")
        parser.add_argument("--answer", type=Path, help="graphrag: a file holding the answer to check")
        parser.add_argument(
            "--report",
            action="append",
            dest="reports",
            metavar="COMMUNITY",
            help=(
                "graphrag: a community report the answer was written from (repeatable); without it, what the "
                "answer's [Data: Reports (…); Sources (…); Entities (…)] markers cite, every report when none"
            ),
        )
        parser.add_argument("--max-text-units", type=int, help="graphrag: refuse a folder with more text units")
        parser.add_argument("-o", "--output", type=Path, help="write the trail here (default: standard output)")

    def handle(self, *args, **options) -> None:
        try:
            trail = self._trail(options)
        except TrailImportError as error:
            raise CommandError(str(error)) from None
        except OSError as error:
            raise CommandError(f"cannot read {error.filename}: {error.strerror}") from None
        if options["kind"] == "graphrag":
            self.stderr.write(_written_from(trail))
        text = json.dumps(trail, indent=2, ensure_ascii=False)
        if options["output"]:
            options["output"].write_text(text)
        else:
            self.stdout.write(text)

    def _trail(self, options) -> dict:
        if options["kind"] == "langchain":
            try:
                run = json.loads(options["source"].read_text())
            except json.JSONDecodeError as error:
                raise CommandError(f"{options['source']} is not JSON: {error}") from None
            return langchain_map_reduce_trail(run)
        if options["answer"] is None:
            raise CommandError("graphrag needs --answer: a file holding the answer to check")
        reports = [int(r) if r.isdigit() else r for r in options["reports"] or []] or None
        return graphrag_trail(
            options["source"],
            options["answer"].read_text(),
            reports=reports,
            max_text_units=options["max_text_units"],
        )


def _written_from(trail: dict) -> str:
    """What the answer node is written from, said on stderr: the trail goes to stdout."""
    inputs = trail["nodes"][-1]["from"]
    reports = [name.removeprefix("report-") for name in inputs if name.startswith("report-")]
    units = [name.removeprefix("text-unit-") for name in inputs if name.startswith("text-unit-")]
    said = f"the answer is written from {len(reports)} report{'s' * (len(reports) != 1)}"
    said += f" ({', '.join(reports[:20])}{' …' if len(reports) > 20 else ''})" if reports else ""
    if units:
        said += f" and {len(units)} text unit{'s' * (len(units) != 1)} it cites ({', '.join(units[:20])})"
    return said
