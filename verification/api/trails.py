"""Trails in the API (issue 26): start a trail run, read its result. A trail's JSON Schema is the
request body's `trail` in /api/openapi.json (pipeline/trail_graph.TRAIL_JSON_SCHEMA)."""

import uuid
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, JsonResponse
from ninja import Field, Router
from ninja.responses import Status

from verification import selectors, services
from verification.access import limits, ownership
from verification.api.schemas import BODY_ERRORS, Error, VerificationCreated, created_body
from verification.api.strict import StrictIn
from verification.clients import providers
from verification.inputs.trails import MAX_Q, TrailRefused, trail_submission
from verification.pipeline.trail_graph import TRAIL_JSON_SCHEMA
from verification.selectors.trail_result import is_trail, trail_result
from verification.worker import start

trails = Router(tags=["trails"])

QUICK_REFUSED_FOR_TRAILS = (
    "Quick mode is not offered for trails: a trail is checked against the texts that made it, never against the "
    "model's own knowledge. Leave quick out."
)


class TrailIn(StrictIn):
    MISPLACED = {
        "nodes": "belongs inside trail",
        "settings": "is not taken by a trail run: give model and q at the top level, beside trail",
    }

    trail: dict[str, Any] = Field(
        description="The texts that made the final text: sources, intermediate outputs and the final text, each "
        "naming the texts it was made from (docs/trails.md).",
        json_schema_extra=TRAIL_JSON_SCHEMA,
    )
    model: str | None = Field(None, description="one of the server's models (LLM_MODELS); the first by default")
    q: int | None = Field(
        None,
        ge=1,
        le=MAX_Q,
        description="Not Fully Supported verdicts in a row after which a claim stops (TRAIL_Q by default)",
    )
    quick: bool | None = Field(
        None,
        description="Not offered for trails (true is refused with 400): a trail is checked against the texts that "
        "made it, never against the model's own knowledge.",
    )


@trails.post(
    "",
    response={201: VerificationCreated, **BODY_ERRORS, 429: Error, 503: Error},
    url_name="trail_create",
    openapi_extra={
        "responses": {
            429: {
                "description": "Too many runs (RUNS_PER_HOUR) by the client",
                "headers": {
                    "Retry-After": {"description": "Seconds until it may start a run", "schema": {"type": "integer"}}
                },
            }
        }
    },
)
def trail_create(request: HttpRequest, payload: TrailIn):
    """Check a text through the steps that made it: each claim of the final text is followed down
    the trail to the sources, and an unsupported one is traced to the step where it entered. It
    runs in the background: poll `result_url` until `status` is `done` or `failed`."""
    if ownership.header_token(request) == "":
        return Status(400, {"detail": f"{ownership.TOKEN_RULE}, or be left out."})
    if payload.quick:
        return Status(400, {"detail": QUICK_REFUSED_FOR_TRAILS})
    try:
        submission = trail_submission(payload.trail, model=payload.model, q=payload.q)
    except TrailRefused as refusal:
        return Status(400, {"detail": str(refusal)})
    problems = providers.configuration_problems(submission.settings["model"], web_search=False)
    if problems:
        return Status(503, {"detail": " ".join(problems)})
    client = limits.request_client(request)
    token = ownership.request_token(request) or ownership.new_token()
    started = start.start_trail_run(client, submission, creator=ownership.creator_key(token))
    if isinstance(started, limits.RateLimited):
        return limits.limited_response(request, started)
    verification = started
    response = JsonResponse(created_body(request, verification, result_path="/api/trails"), status=201)
    response[ownership.HEADER] = token  # the caller's own, or a new one it should keep
    return response


@trails.get("/{verification_id}", response={200: dict[str, Any], 400: Error, 404: Error})
def trail_get(request: HttpRequest, verification_id: uuid.UUID):
    """A trail run's result: its nodes, its sentences coloured by the share of their claims fully
    supported, each claim's verdict, rounds and evidence per node, the path of a supported claim,
    the step where an unsupported one entered, and how many entered at each step. The trail's
    texts (but the final one) are its creator's: anyone else gets each `text` null
    (`text_withheld`) and of each selection only the sentences selected."""
    verification = services.verification_expire_if_stale(
        selectors.verification_or_404(verification_id), timeout_s=settings.RUN_TIMEOUT
    )
    if not is_trail(verification):
        raise Http404("This run is not a trail: read it at /api/verifications/{id}.")
    return trail_result(verification, with_texts=ownership.may_read_trail_texts(request, verification))
