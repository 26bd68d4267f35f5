"""An API operation that takes its JSON body either as application/json or, with files, as
multipart/form-data: a `payload` part holding the same JSON and one `files` part per file.

django-ninja reads a declared body as the whole request body (in memory, under
DATA_UPLOAD_MAX_MEMORY_SIZE), which would hold every upload in memory and refuse most; so such an
operation declares no body parameter, reads its request here, and documents both forms with
`request_body_schema`. Who may send multipart at all is decided by limits.JsonOnlyApiMiddleware."""

import json
from typing import TypeVar

import pydantic
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest
from django.http.multipartparser import MultiPartParserError
from ninja import Schema
from ninja.errors import HttpError
from ninja.errors import ValidationError as NinjaValidationError

PAYLOAD_PART, FILES_PART = "payload", "files"
T = TypeVar("T", bound=Schema)


def read_request(request: HttpRequest, model: type[T]) -> tuple[T, list]:
    """The validated payload and the uploaded files (none for a JSON request). Raises what
    django-ninja raises for a body it cannot parse or validate, so the answers are the same."""
    if request.content_type == "multipart/form-data":
        raw, files = _multipart(request)
    else:
        raw, files = request.body, []
    try:
        data = json.loads(raw)
    except ValueError as error:  # UnicodeDecodeError included
        raise HttpError(400, "Cannot parse request body") from error
    except RecursionError as error:  # thousands of nested arrays: the decoder gives up, so do we
        raise HttpError(400, "Cannot parse request body: it is nested too deeply") from error
    try:
        return model.model_validate(data), files
    except pydantic.ValidationError as error:
        raise NinjaValidationError(error.errors(include_url=False)) from error


def _multipart(request: HttpRequest) -> tuple[str, list]:
    """The payload part and the files. Django's parser raises for a body it cannot read (no or a
    bad boundary, a part's headers over its size limit, as a long file name makes them): that is
    the client's mistake, answered in JSON like every other one, not with Django's HTML page."""
    try:
        raw = request.POST.get(PAYLOAD_PART)
        files = request.FILES.getlist(FILES_PART)
    except RequestDataTooBig:
        raise  # its own answer, 413 (api.py)
    except (MultiPartParserError, SuspiciousOperation) as error:
        raise HttpError(400, f"Cannot parse the multipart body: {error}") from error
    if raw is None:
        raise NinjaValidationError(
            [{"loc": (PAYLOAD_PART,), "msg": f"Field required: the JSON body, in a part named {PAYLOAD_PART}"}]
        )
    return raw, files


def request_body_schema(model: type[Schema]) -> dict:
    """The OpenAPI requestBody of such an operation: the model's JSON schema (inlined, since
    ninja only lists the models its own parameters use) in both forms."""
    schema = _inlined(model.model_json_schema())
    return {
        "required": True,
        "content": {
            "application/json": {"schema": schema},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        PAYLOAD_PART: {
                            "type": "string",
                            "description": "the same JSON object as an application/json body",
                        },
                        FILES_PART: {"type": "array", "items": {"type": "string", "format": "binary"}},
                    },
                    "required": [PAYLOAD_PART],
                },
                "encoding": {PAYLOAD_PART: {"contentType": "application/json"}},
            },
        },
    }


def _inlined(schema: dict) -> dict:
    definitions = schema.pop("$defs", {})

    def resolve(node):
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(definitions[node["$ref"].rsplit("/", 1)[1]])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return resolve(schema)
