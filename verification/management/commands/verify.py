"""`python manage.py verify --file PATH [--json OUT]`, or `--trail TRAIL.json` to check a text
through the steps that made it (docs/trails.md): one whole verification from the terminal,
through the same path as the web app (Celery workers on Redis when REDIS_URL is set, the
embedded worker otherwise). It exits with 2 when a limit refuses the run (MAX_CLAIMS_PER_RUN,
RUNS_PER_HOUR: the command line counts as one client), 130 when interrupted (Ctrl-C), 1 on any
other error. Standard error holds its own lines (the run's start, its progress, errors); the log
of the run's tasks only with -v 2 or --log."""

import contextlib
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, OutputWrapper
from django.utils.datastructures import MultiValueDict
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from verification import selectors, services
from verification.access import limits
from verification.clients import providers
from verification.inputs.documents import EVIDENCE_MODES
from verification.inputs.forms import CITATION_MODES, VerificationForm, searches_web
from verification.inputs.trails import TrailRefused, trail_from_json, trail_submission
from verification.management.run_options import add_run_settings_arguments
from verification.management.summaries import progress_counts, progress_line, summary, trail_summary
from verification.models import FINISHED, Verification
from verification.scoring import (
    DEFAULT_RULE,
    SCORE_RULES,
)
from verification.selectors.trail_progress import trail_progress
from verification.selectors.trail_result import trail_result
from verification.selectors.viewstate import ViewState
from verification.worker import start

# The exit status when a limit refuses the run, told apart from a run that failed (1).
REFUSED = 2
# As a shell reports a process ended by SIGINT.
INTERRUPTED = 130


class Command(BaseCommand):
    help = "Verify a text (from --file or standard input) and print a summary."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--file", help="the text to verify (default, or -: standard input)")
        parser.add_argument("--json", dest="json_out", help="write the result JSON to this path")
        add_run_settings_arguments(parser)
        parser.add_argument(
            "--score-rule",
            choices=list(SCORE_RULES),
            default=DEFAULT_RULE,
            help="all: supported ÷ all judged evidence (the paper's, default); "
            "decisive: supported ÷ (supported + not supported)",
        )
        parser.add_argument(
            "--source",
            action="append",
            default=[],
            dest="sources",
            metavar="URL_OR_FILE",
            help="a document to read as evidence: a web address, or a PDF, HTML, Markdown or text file (repeatable)",
        )
        parser.add_argument(
            "--evidence",
            choices=[mode for mode, _ in EVIDENCE_MODES],
            help="web (default; with --source documents it becomes both): search the web; "
            "documents: only the --source documents, no search; both",
        )
        parser.add_argument(
            "--quick",
            action="store_true",
            help="quick mode: the model also labels each claim true/false from its own knowledge, and a claim it is "
            "sure of (QUICK_MIN_PROBABILITY, from logprobs) is not searched; web evidence only",
        )
        parser.add_argument(
            "--citations",
            choices=[mode for mode, _ in CITATION_MODES],
            help="also_search (default): read what the text's own citations cite and search the web as well; "
            "only: read what they cite, no web search",
        )
        parser.add_argument("--timeout", type=float, default=900, help="give up waiting after this many seconds")
        parser.add_argument(
            "--trail",
            metavar="TRAIL_JSON",
            help="check the final text of this trail (-: standard input) through the texts that made it "
            "(docs/trails.md), instead of a text against the web",
        )
        parser.add_argument(
            "--q", type=int, help="with --trail: Not Fully Supported verdicts in a row before a claim stops"
        )
        parser.add_argument(
            "--log",
            action="store_true",
            help="show the log of the run's tasks (Celery's task lines, HTTP requests) on standard error, as -v 2 does",
        )

    def handle(self, *args, **options) -> None:
        # From the command line the process ends with the command, and its worker threads may
        # still log on the way out (tasks cut short by a Ctrl-C): the log stays off until then.
        shown = options["log"] or options["verbosity"] >= 2
        with _task_log(shown=shown, until_exit=self._called_from_command_line):
            try:
                if options["trail"]:
                    self._handle_trail(options)
                else:
                    self._handle_text(options)
            except KeyboardInterrupt:
                # Before a run was started (reading the text, creating the tables) or once it has
                # ended (its summary); a run in flight is named by `_start`.
                raise CommandError("interrupted", returncode=INTERRUPTED) from None

    def _handle_text(self, options) -> None:
        text = self._read_text(options["file"])
        form = VerificationForm(
            data={
                "text": text,
                "model": options["model"] or "",
                "retrieval_mode": options["mode"] or "",
                "top_k_results": options["top_k_results"],
                "top_k_passages": options["top_k_passages"],
                "context_size": options["context"],
                "evidence": options["evidence"] or "",
                "quick": options["quick"],
                "citations": options["citations"] or "",
                "sources": "\n".join(source for source in options["sources"] if _is_web_address(source)),
            },
            files=MultiValueDict({"files": [_read_document(s) for s in options["sources"] if not _is_web_address(s)]}),
        )
        if not form.is_valid():
            raise CommandError(
                "\n".join(f"{field}: {' '.join(msgs)}" for field, msgs in form.errors.items()),
                returncode=REFUSED if form.has_error("text", code="budget") else 1,
            )
        run_settings = form.run_settings()
        _check_configuration(run_settings["model"], web_search=searches_web(run_settings))
        # A fresh clone has no tables yet; once they exist this changes nothing.
        call_command("migrate", verbosity=0, interactive=False)
        client = limits.client_key(limits.CLI_ADDRESS)
        verification = self._start(
            client,
            lambda: services.verification_create(
                text=form.cleaned_data["text"],
                settings=run_settings,
                client=client,
                documents=form.documents,
                segments=form.segments,
            ),
            options["timeout"],
        )
        result = selectors.verification_result(verification, ViewState(score_rule=options["score_rule"]))
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(result, indent=2, ensure_ascii=False))
        self.stdout.write(summary(result, verification))
        if result["status"] != "done":
            raise CommandError(f"the verification failed: {result['error']}")

    def _handle_trail(self, options) -> None:
        if options["quick"]:
            raise CommandError(
                "--quick is not offered with --trail: a trail is checked against the texts that made it, never "
                "against the model's own knowledge."
            )
        try:
            submission = trail_submission(
                trail_from_json(self._read_text(options["trail"])), model=options["model"], q=options["q"]
            )
        except TrailRefused as refusal:
            raise CommandError(
                str(refusal), returncode=REFUSED if "MAX_CLAIMS_PER_RUN" in str(refusal) else 1
            ) from None
        _check_configuration(submission.settings["model"], web_search=False)
        call_command("migrate", verbosity=0, interactive=False)
        client = limits.client_key(limits.CLI_ADDRESS)
        verification = self._start(
            client,
            lambda: services.trail_create(
                trail=submission.trail, settings=submission.settings, segments=submission.segments, client=client
            ),
            options["timeout"],
            progress=trail_progress,
        )
        result = trail_result(verification, with_texts=True)  # the command line's own run
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(result, indent=2, ensure_ascii=False))
        self.stdout.write(trail_summary(result))
        if result["status"] != "done":
            raise CommandError(f"the trail check failed: {result['error']}")

    def _start(self, client: str, create, timeout: float, progress=selectors.verification_progress) -> Verification:
        """The run `create` saves, started within the command line's hourly limit, when it ended;
        `progress` tells how far it has gone (a trail's in its own terms)."""
        verification = start.start_run(client, create)
        if isinstance(verification, limits.RateLimited):
            raise CommandError(verification.message(who="the command line"), returncode=REFUSED)
        self.stderr.write(f"verification {verification.pk} started")
        try:
            return self._wait(verification, timeout, progress)
        except KeyboardInterrupt:
            raise CommandError(
                f"interrupted: the run is left unfinished (a factsite server on this database resumes it; "
                f"its result will be at /v/{verification.pk})",
                returncode=INTERRUPTED,
            ) from None

    def _read_text(self, path: str | None) -> str:
        try:
            raw = Path(path).read_bytes() if path and path != "-" else sys.stdin.buffer.read()
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror}") from error
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise CommandError("the input is not UTF-8 text") from error

    def _wait(self, verification: Verification, timeout: float, progress) -> Verification:
        deadline = time.monotonic() + timeout
        with progress_shown(self.stderr) as show:
            while True:
                verification.refresh_from_db()
                verification = services.verification_expire_if_stale(verification, timeout_s=settings.RUN_TIMEOUT)
                show(progress(verification))
                if verification.status in FINISHED:
                    return verification
                if time.monotonic() > deadline:
                    raise CommandError(f"still running after {timeout:g} s; the result will be at /v/{verification.pk}")
                time.sleep(0.25)


def _check_configuration(model: str, *, web_search: bool) -> None:
    """What a person must set (providers.configuration_problems), then whether the model's server
    answers at all: a wrong OPENAI_BASE_URL is said here, once, before a run is created, not by
    each of its calls after their retries. Only here: the pages and the API answer at once,
    without a round trip to the server."""
    problems = providers.configuration_problems(model, web_search=web_search)
    if not problems and (unreachable := providers.llm_server_problem(model)):
        problems.append(unreachable)
    if problems:
        raise CommandError("\n".join(problems))


@contextlib.contextmanager
def _task_log(*, shown: bool, until_exit: bool) -> Iterator[None]:
    """The log of what the run's tasks do (Celery's task lines, every HTTP request, libraries'
    warnings: a hundred lines and more for a short text, which buried the progress line) only
    when asked. A run's failures are in its summary either way. `until_exit`: not turned back
    on afterwards."""
    if shown:
        yield
        return
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        if not until_exit:
            logging.disable(before)


# On a terminal: the percentage, the counts, the time so far and a bar in the rest of the width
# (an 80-column terminal has room for the counts only: they are what a line cut to it keeps).
BAR_FORMAT = "{percentage:3.0f}%{desc}  {elapsed}  {bar}"


@contextlib.contextmanager
def progress_shown(stderr: OutputWrapper) -> Iterator[Callable[[dict], None]]:
    """A function that shows a run's progress: on a terminal one line redrawn in place (log
    lines, when shown, are printed above it); elsewhere a `progress_line` for each change, for a
    log or a program to read."""
    if not stderr.isatty():
        last = ""

        def write_line(progress: dict) -> None:
            nonlocal last
            if (line := progress_line(progress)) != last:
                stderr.write(line)
                last = line

        yield write_line
        return
    # The terminal itself: OutputWrapper ends every write with a newline.
    with (
        tqdm(total=100, file=stderr._out, bar_format=BAR_FORMAT, dynamic_ncols=True) as bar,
        logging_redirect_tqdm(),
    ):

        def redraw(progress: dict) -> None:
            bar.n = progress["percent"]
            bar.set_description_str(progress_counts(progress), refresh=False)
            bar.refresh()

        yield redraw


def _is_web_address(source: str) -> bool:
    return source.lower().startswith(("http://", "https://"))


def _read_document(path: str) -> SimpleUploadedFile:
    """A --source file, handed to the form as an upload (checked the same way)."""
    try:
        return SimpleUploadedFile(Path(path).name, Path(path).read_bytes())
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from error
