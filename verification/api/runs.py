"""The REST API (django-ninja): OpenAPI schema at /api/openapi.json, docs at /api/docs.

Create and read verifications here; every pipeline step on its own is in api_steps.py, mounted
under /api/steps. Response schemas shared by both are in schemas.py."""

import uuid
from dataclasses import asdict
from datetime import datetime
from typing import Literal

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest
from django.utils.datastructures import MultiValueDict
from ninja import Field, NinjaAPI, Query, Schema
from ninja.errors import ValidationError as NinjaValidationError
from ninja.responses import Status

from verification import selectors, services
from verification.access import limits, ownership
from verification.api import uploads as api_uploads
from verification.api.schemas import (
    BODY_ERRORS,
    SPENDING_ERRORS,
    Band,
    Error,
    EvidenceMode,
    RunStatus,
    ScoreRule,
    VerificationCreated,
    VerificationResult,
    created_body,
)
from verification.api.steps import steps
from verification.api.strict import StrictIn
from verification.api.trails import trails
from verification.clients import providers
from verification.inputs.forms import CITATION_MODES, VerificationForm, searches_web
from verification.models import FINISHED, Verification
from verification.models import Status as RunState
from verification.pipeline.domains import MAX_RUN_BLOCKED_DOMAINS
from verification.pipeline.types import RefusedAddress, StepError
from verification.scoring import DEFAULT_RULE
from verification.selectors.viewstate import ViewState, parse_ids
from verification.worker import resume, start

api = NinjaAPI(
    title="factsite API",
    version="1",
    description="Fact verification for AI-generated text: sentences → claims → web evidence → verdicts → scores. "
    "Every error is JSON with a `detail`; a method a path does not take is answered 405 with `Allow`.",
    urls_namespace="api",
)


@api.exception_handler(NinjaValidationError)
def invalid_request(request: HttpRequest, exc: NinjaValidationError):
    problems = []
    for e in exc.errors:
        where = ".".join(str(p) for p in e.get("loc", ()) if p not in ("body", "payload"))
        # Our own validators' messages are sentences already: pydantic's prefix adds nothing.
        said = str(e.get("msg")).removeprefix("Value error, ")
        problems.append(f"{where}: {said}" if where else said)
    return api.create_response(request, {"detail": "Invalid request: " + "; ".join(problems)}, status=400)


@api.exception_handler(RequestDataTooBig)
def body_too_large(request: HttpRequest, exc: RequestDataTooBig):
    return api.create_response(
        request,
        {"detail": f"The request body is too large: the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes."},
        status=413,
    )


@api.exception_handler(RefusedAddress)
def address_refused(request: HttpRequest, exc: RefusedAddress):
    # The address given is at fault (it leads into a private network), not an outside service.
    return api.create_response(request, {"detail": str(exc)}, status=422)


@api.exception_handler(StepError)
def step_failed(request: HttpRequest, exc: StepError):
    return api.create_response(request, {"detail": str(exc)}, status=502)


# --- verifications


class RunSettingsIn(StrictIn):
    # A misspelt setting must be an error, not silently the default.
    MISPLACED = {
        "text": "belongs at the top level, beside settings",
        "sources": "belongs at the top level, beside settings",
    }

    model: str | None = None
    retrieval_mode: Literal["dense", "sparse"] | None = None
    top_k_results: int | None = None
    top_k_passages: int | None = None
    context_size: int | None = None
    evidence: EvidenceMode | None = Field(
        None, description="web (the default): search the web; documents: only the sources given; both"
    )
    blocked_domains: list[str] | None = Field(
        None,
        description=f"Domains whose results this run never reads nor counts (subdomains included), at most "
        f"{MAX_RUN_BLOCKED_DOMAINS}; added to the server's BLOCKED_DOMAINS.",
    )
    quick: bool | None = Field(
        None,
        description="Quick mode (FaStfact's pre-verification): the model also labels each claim true, false or unsure "
        "from its own knowledge, and a claim labelled true or false with a probability of at least "
        "QUICK_MIN_PROBABILITY (from the label token's logprob) is not searched; such claims are marked "
        "from_model_knowledge and left out of the scores unless asked for (model_knowledge=1). A server without "
        "logprobs has every claim searched. Web evidence only: refused (400) with evidence documents or both.",
    )
    citations: Literal[tuple(mode for mode, _ in CITATION_MODES)] | None = Field(
        None,
        description="The text's own citations (markers such as [1], footnotes, inline links, DOIs, a Sources list) "
        "are always read and judged for the claims of the sentences that cite them. also_search (the default): the "
        "web is searched as well; only: no web search, each claim is checked against what its sentence cites.",
    )


class SourceIn(StrictIn):
    url: str = Field(description="a web page or file (http or https) to read as evidence")


SOURCES_HELP = (
    "Your documents, read as evidence with settings.evidence documents or both (with the uploaded files: "
    f"at most {settings.MAX_DOCUMENTS} together, MAX_DOCUMENTS)."
)


class VerificationIn(StrictIn):
    MISPLACED = {
        **dict.fromkeys(RunSettingsIn.model_fields, "belongs inside settings"),
        "trail": "is checked by POST /api/trails",
    }

    text: str = Field(description=f"The text to verify, at most {settings.MAX_TEXT_CHARS:,} characters.")
    settings: RunSettingsIn = RunSettingsIn()
    sources: list[SourceIn] = Field([], description=SOURCES_HELP)


@api.post(
    "/verifications",
    response={201: VerificationCreated, **BODY_ERRORS, 429: Error, 503: Error},
    tags=["verifications"],
    openapi_extra={
        "responses": {
            201: {
                "headers": {
                    ownership.HEADER: {
                        "description": "The caller's owner token: the one it sent, or a new one to keep and send "
                        "with later requests (it alone may reuse the run's documents)",
                        "schema": {"type": "string"},
                    }
                },
            },
            400: {"description": f"Invalid input, or {ownership.TOKEN_RULE}"},
            413: {"description": "The upload is larger than MAX_DOCUMENTS files of MAX_UPLOAD_BYTES"},
            415: {
                "description": "Neither JSON nor multipart/form-data with the header "
                f"{limits.UPLOAD_HEADER} (which no other site's page can send)"
            },
            429: {
                "description": "Too many runs (RUNS_PER_HOUR) or megabytes uploaded (UPLOAD_MB_PER_HOUR) by the client",
                "headers": {
                    "Retry-After": {"description": "Seconds until it may start a run", "schema": {"type": "integer"}}
                },
            },
        },
        "requestBody": api_uploads.request_body_schema(VerificationIn),
    },
)
def verification_create(request: HttpRequest):
    """Start a verification. It runs in the background: poll the result URL until `status` is
    `done` or `failed`. Send JSON, or, to upload files as evidence, multipart/form-data with the
    JSON in a `payload` part, one `files` part per file (PDF, HTML, Markdown or plain text) and
    the header X-Requested-With (any value). The header X-Client-Token (20–200 URL-safe
    characters; the response gives a new one without it) says who started the run: only that
    caller may retry a run that read its documents."""
    if ownership.header_token(request) == "":
        return Status(400, {"detail": f"{ownership.TOKEN_RULE}, or be left out."})
    payload, uploads = api_uploads.read_request(request, VerificationIn)
    form = VerificationForm(
        data={
            "text": payload.text,
            **payload.settings.dict(exclude_none=True),
            "sources": "\n".join(source.url for source in payload.sources),
        },
        files=MultiValueDict({"files": uploads}),
    )
    if not form.is_valid():
        errors = {field: list(messages) for field, messages in form.errors.items()}
        return Status(400, {"detail": form.refusal(), "errors": errors})
    run_settings = form.run_settings()
    problems = providers.configuration_problems(run_settings["model"], web_search=searches_web(run_settings))
    if problems:
        return Status(503, {"detail": " ".join(problems)})
    client = limits.request_client(request)
    token = ownership.request_token(request) or ownership.new_token()
    started = start.start_run(
        client,
        lambda: services.verification_create(
            text=form.cleaned_data["text"],
            settings=run_settings,
            client=client,
            creator=ownership.creator_key(token),
            documents=form.documents,
            segments=form.segments,
        ),
        files=uploads,
    )
    if isinstance(started, limits.RateLimited):
        return limits.limited_response(request, started)
    verification = started
    created = created_body(request, verification, result_path="/api/verifications")
    response = api.create_response(request, created, status=201)
    response[ownership.HEADER] = token  # the caller's own, or a new one it should keep
    return response


class ResultView(Schema):
    exclude_evidence: str = Field("", description="Comma-separated evidence ids to leave out of the scores.")
    exclude_types: str = Field("", description="Comma-separated source types to leave out of the scores.")
    exclude_kinds: str = Field(
        "",
        description='Comma-separated kinds of evidence to leave out of the scores: "snippet" (search snippets), '
        '"cited" (sources the text itself cites).',
    )
    score_rule: ScoreRule = Field(
        DEFAULT_RULE,
        description="all: supported ÷ all judged evidence (the paper's); decisive: supported ÷ (supported + "
        "not supported), irrelevant evidence left out.",
    )
    model_knowledge: bool = Field(
        False,
        description="Count the claims quick mode answered from the model's own knowledge (label true as supporting, "
        "false as not supporting); left out by default, as nothing was checked against a source for them.",
    )


@api.get(
    "/verifications/{verification_id}",
    response={200: VerificationResult, 400: Error, 404: Error},
    # Only describes the selector's JSON: fields it leaves out (settings of older runs) stay out.
    exclude_unset=True,
    tags=["verifications"],
)
def verification_get(request: HttpRequest, verification_id: uuid.UUID, view: Query[ResultView]):
    """The result JSON: status, progress, problems and everything found so far, with scores
    computed by the score rule over the evidence not excluded."""
    verification = _verification(verification_id)
    state = ViewState(
        excluded_ids=frozenset(parse_ids(view.exclude_evidence)),
        excluded_types=frozenset(t for t in view.exclude_types.split(",") if t.strip()),
        score_rule=view.score_rule,
        model_knowledge=view.model_knowledge,
        excluded_kinds=frozenset(k for k in view.exclude_kinds.split(",") if k.strip()),
    )
    return selectors.verification_result(verification, state)


class RetryOut(Schema):
    id: str = Field(json_schema_extra={"format": "uuid"})
    status: RunStatus
    retried: int = Field(description="How many failed (or stranded) items were queued again.")


@api.post(
    "/verifications/{verification_id}/retry",
    # 400: an id that is not a UUID; 415: a body that is not JSON (no body at all is taken).
    response={202: RetryOut, 400: Error, 403: Error, 404: Error, 409: Error, 415: Error, **SPENDING_ERRORS},
    tags=["verifications"],
)
def verification_retry(request: HttpRequest, verification_id: uuid.UUID):
    """Queue the failed items of a finished run again, in place (same id and permalink): its
    creator only (403 otherwise: anyone else may start a run of their own with its text)."""
    verification = _verification(verification_id)
    if not ownership.is_creator(request, verification):
        return Status(403, {"detail": ownership.RETRY_REFUSED})
    if verification.status not in FINISHED:
        return Status(409, {"detail": "The run is still going: retry it once it has finished."})
    if verification.status == RunState.CANCELLED:
        return Status(409, {"detail": "The run was cancelled: start it again with Edit text instead."})
    retried = resume.retry_failed(verification.pk)
    if not retried:
        return Status(
            409,
            {
                "detail": "Nothing to retry: nothing in this run failed, or only what would fail the same way "
                "again (see each problem reason's `transient`)."
            },
        )
    verification.refresh_from_db()
    return Status(202, {"id": str(verification.pk), "status": verification.status, "retried": retried})


class CheckOut(Schema):
    id: str = Field(json_schema_extra={"format": "uuid"})
    permalink: str
    title: str = Field(description="The text's first words.")
    created_at: datetime
    status: RunStatus
    score: float | None = Field(description="Overall credibility under the default rule (null: no evidence yet).")
    band: Band
    evidence: str = Field(
        description="Where the evidence came from: the web, the caller's documents, both, or the steps that made the "
        "text (a trail run, whose score is the share of its claims fully supported)."
    )
    edited_from: str | None = Field(
        description="The id of the run this one was edited from (Edit text), if it still exists; null otherwise."
    )
    edited_from_created_at: datetime | None = Field(description="When the run it was edited from was started.")


@api.get("/verifications", response={200: list[CheckOut], 400: Error}, tags=["verifications"])
def verification_list(request: HttpRequest):
    """The runs the caller started, newest first (at most 200): the caller is the X-Client-Token
    header, or the browser's owner cookie. Without either, nothing is listed; nobody's runs but
    the caller's ever are."""
    if ownership.header_token(request) == "":
        return Status(400, {"detail": ownership.TOKEN_RULE + "."})
    token = ownership.request_token(request)
    runs = selectors.runs_started_by(ownership.creator_key(token) if token else "")[:200]
    return [
        {**asdict(row), "permalink": request.build_absolute_uri(row.permalink)} for row in selectors.check_rows(runs)
    ]


@api.delete(
    "/verifications/{verification_id}",
    response={204: None, 400: Error, 403: Error, 404: Error},
    tags=["verifications"],
)
def verification_delete(request: HttpRequest, verification_id: uuid.UUID):
    """Delete a run and everything stored for it, its uploaded documents included (its creator
    only). Its permalink then answers 404, saying it was deleted."""
    verification = _verification(verification_id)
    if not ownership.is_creator(request, verification):
        return Status(403, {"detail": ownership.NOT_CREATOR})
    services.verification_delete(verification.pk)
    return Status(204, None)


class CancelOut(Schema):
    id: str = Field(json_schema_extra={"format": "uuid"})
    status: RunStatus


@api.post(
    "/verifications/{verification_id}/cancel",
    response={202: CancelOut, 400: Error, 403: Error, 404: Error, 409: Error, 415: Error},
    tags=["verifications"],
)
def verification_cancel(request: HttpRequest, verification_id: uuid.UUID):
    """Stop a run under way (its creator only): its queued work is dropped, nothing more is
    spent on it, and what it found so far stays, with status `cancelled`."""
    verification = _verification(verification_id)
    if not ownership.is_creator(request, verification):
        return Status(403, {"detail": ownership.NOT_CREATOR})
    if not services.verification_cancel(verification.pk):
        ended = f"The run has already ended ({verification.status}): there is nothing to cancel."
        return Status(409, {"detail": ended})
    return Status(202, {"id": str(verification.pk), "status": RunState.CANCELLED})


def _verification(verification_id) -> Verification:
    verification = selectors.verification_or_404(verification_id)
    return services.verification_expire_if_stale(verification, timeout_s=settings.RUN_TIMEOUT)


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404):
    # Says whether the run was deleted by its creator or never existed.
    return api.create_response(request, {"detail": str(exc) or "Not Found"}, status=404)


api.add_router("/steps", steps)
api.add_router("/trails", trails)
