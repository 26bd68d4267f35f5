"""What each MCP tool does, in the API's steps and words: the same form, limits, services and
selectors as POST /api/verifications, POST /api/trails, GET /api/verifications/{id} and its
cancel. Synchronous (the tools run them in a thread); a refusal raises Refused with the sentence
the API would answer with."""

import uuid

from django.conf import settings
from django.http import Http404
from django.utils.datastructures import MultiValueDict

from verification import selectors, services
from verification.access import limits, ownership
from verification.clients import providers
from verification.inputs.forms import VerificationForm
from verification.inputs.trails import TrailRefused, trail_submission
from verification.mcp import answers
from verification.mcp.identity import Identity
from verification.models import FINISHED, Verification
from verification.models import Status as RunState
from verification.scoring import DEFAULT_RULE
from verification.selectors.trail_progress import trail_progress
from verification.selectors.trail_result import is_trail, trail_result
from verification.selectors.viewstate import ViewState
from verification.web import reports, trail_reports
from verification.worker import start


class Refused(Exception):
    """The API's 4xx or 5xx, in its words: the tool answers it as a tool error."""


def text_start(
    who: Identity, *, text: str, evidence: str, documents: list[str], citations: str = "also_search"
) -> Verification:
    """POST /api/verifications with JSON (documents by address; files are the API's)."""
    form = VerificationForm(
        data={"text": text, "evidence": evidence, "sources": "\n".join(documents), "citations": citations},
        files=MultiValueDict(),
    )
    if not form.is_valid():
        raise Refused(form.refusal())
    run_settings = form.run_settings()
    problems = providers.configuration_problems(
        run_settings["model"], web_search=run_settings["evidence"] != "documents"
    )
    if problems:
        raise Refused(" ".join(problems))
    return _started(
        start.start_run(
            who.client,
            lambda: services.verification_create(
                text=form.cleaned_data["text"],
                settings=run_settings,
                client=who.client,
                creator=who.creator,
                documents=form.documents,
                segments=form.segments,
            ),
        )
    )


def trail_start(who: Identity, *, nodes: list[dict]) -> Verification:
    """POST /api/trails with {"trail": {"nodes": nodes}}."""
    try:
        submission = trail_submission({"nodes": nodes})
    except TrailRefused as refusal:
        raise Refused(str(refusal)) from None
    problems = providers.configuration_problems(submission.settings["model"], web_search=False)
    if problems:
        raise Refused(" ".join(problems))
    return _started(start.start_trail_run(who.client, submission, creator=who.creator))


def _started(started: Verification | limits.RateLimited) -> Verification:
    if isinstance(started, limits.RateLimited):
        # The API's 429, its Retry-After in the sentence.
        raise Refused(started.message())
    return started


def run(verification_id: str) -> Verification:
    """The run, as GET /api/verifications/{id} finds it (a run past RUN_TIMEOUT is ended first)."""
    try:
        key = uuid.UUID(str(verification_id))
    except ValueError:
        raise Refused(f"{verification_id!r} is not a run's id: give the id check_text or check_trail gave.") from None
    try:
        verification = selectors.verification_or_404(key)
    except Http404 as missing:
        raise Refused(str(missing) or "No run has this id.") from None
    return services.verification_expire_if_stale(verification, timeout_s=settings.RUN_TIMEOUT)


def finished(verification_id: str) -> tuple[bool, int, str]:
    """Whether the run has ended, and else how far it is (percent) and what is done, in words."""
    verification = run(verification_id)
    if verification.status in FINISHED:
        return True, 100, verification.status
    progress = trail_progress(verification) if is_trail(verification) else selectors.verification_progress(verification)
    return False, progress["percent"], answers.progress_words(progress)


def answer(who: Identity, verification_id: str, view: dict | None = None) -> str:
    """The result of GET /api/verifications/{id} (a trail's of GET /api/trails/{id}, its texts
    its creator's alone) for a model (answers.py), with the view's selection as the permalink
    takes it (exclude_evidence, exclude_types, exclude_kinds, score_rule, model_knowledge)."""
    verification = run(verification_id)
    if is_trail(verification):
        result = trail_result(verification, with_texts=ownership.token_may_read_trail_texts(who.token, verification))
        return answers.trail_answer(result, permalink=who.url(selectors.permalink(verification)))
    state = view_state(view or {})
    result = selectors.verification_result(verification, state)
    return answers.text_answer(result, permalink=who.url(selectors.permalink(verification) + state.query()))


def view_state(view: dict) -> ViewState:
    return ViewState(
        excluded_ids=frozenset(view.get("exclude_evidence") or ()),
        excluded_types=frozenset(view.get("exclude_types") or ()),
        score_rule=view.get("score_rule") or DEFAULT_RULE,
        model_knowledge=bool(view.get("model_knowledge")),
        excluded_kinds=frozenset(view.get("exclude_kinds") or ()),
    )


def result_json(who: Identity, verification_id: str) -> dict:
    """The whole result JSON, as the API serves it (the resource at a run's permalink)."""
    verification = run(verification_id)
    if is_trail(verification):
        return trail_result(verification, with_texts=ownership.token_may_read_trail_texts(who.token, verification))
    return selectors.verification_result(verification, ViewState())


def report_markdown(who: Identity, verification_id: str) -> str:
    """The Markdown report, as the result page's download serves it."""
    verification = run(verification_id)
    address = who.url(selectors.permalink(verification))
    if is_trail(verification):
        result = trail_result(verification, with_texts=ownership.token_may_read_trail_texts(who.token, verification))
        return trail_reports.trail_report_markdown(result, verification.text, address=address)
    return reports.report_markdown(selectors.verification_report(verification, ViewState()), address=address)


def cancel(who: Identity, verification_id: str) -> Verification:
    """POST /api/verifications/{id}/cancel: its creator only."""
    verification = run(verification_id)
    if not ownership.token_is_creator(who.token, verification):
        raise Refused(ownership.NOT_CREATOR)
    if not services.verification_cancel(verification.pk):
        raise Refused(f"The run has already ended ({verification.status}): there is nothing to cancel.")
    verification.status = RunState.CANCELLED
    return verification
