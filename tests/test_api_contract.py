"""The API keeps its own contract: schemathesis reads /api/openapi.json from the real app (in
process, through WSGI), sends generated requests to every operation — valid and invalid ones —
and checks that none answers 5xx, that every status code and content type it answers is
declared, and that every response body matches its declared schema. Outside services are the
fakes on 127.0.0.1 (tests/fakes.py); nothing else is reached."""

import json
import socket
from urllib.parse import urlsplit, urlunsplit

import jsonschema_rs
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.fakes import FakePage, FakeSite
from tests.test_api import wait_for
from verification import selectors
from verification.models import Verification
from verification.selectors.viewstate import ViewState

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
LOOPBACK = {"127.0.0.1", "localhost", "::1"}

schema = schemathesis.openapi.from_wsgi("/api/openapi.json", get_wsgi_application())


@pytest.fixture
def loopback_only(monkeypatch):
    """Fails the test if anything in this process looks up a host other than loopback (a
    generated URL must never send the server to the internet)."""
    outside = []
    resolve = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host not in LOOPBACK:
            outside.append(host)
            raise socket.gaierror(socket.EAI_NONAME, f"{host} is outside 127.0.0.1 in the tests")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield
    assert not outside, f"the server tried to reach beyond 127.0.0.1: {outside}"


@pytest.fixture
def transaction_kept():
    """Django closes the database connection after each request; inside a test that is the
    connection holding the test's transaction. Django's own test client unhooks the same signal
    handlers while it runs a request; the WSGI app schemathesis calls needs them unhooked too."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


class EveryPath(dict):
    """A site's pages where every path is the same article."""

    def __init__(self, page: FakePage) -> None:
        super().__init__()
        self.page = page

    def get(self, path, default=None):
        return self.page


@pytest.fixture
def web():
    """One web site on 127.0.0.1 that answers every path with a readable page: generated URLs
    are aimed at it, so a 502 would be factsite's fault, not a missing page's."""
    page = FakePage(
        "The Eiffel Tower - Wiki encyclopedia",
        "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.\n\n"
        "It was completed in 1889 for the World's Fair and is 330 metres tall.",
    )
    site = FakeSite(pages=EveryPath(page)).start()
    yield site
    site.stop()


def aimed_at(url, site_url: str):
    """A generated web address sent to the fake site (plain http, its host and port), whatever
    host it named; what is not a URL with a host stays as it was generated."""
    if not isinstance(url, str):
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.netloc:
        return url
    site = urlsplit(site_url)
    return urlunsplit(parts._replace(scheme=site.scheme, netloc=site.netloc))


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_operation_keeps_its_contract(case, world, web, loopback_only, transaction_kept):
    if case.operation.path == "/api/steps/extract" and isinstance(case.body, dict) and "url" in case.body:
        case.body["url"] = aimed_at(case.body["url"], web.url)

    case.call_and_validate(checks=CHECKS)


# --- what the schema declares

BODY = {400, 413, 415}
DECLARED = {
    ("post", "/api/verifications"): {201, *BODY, 429, 503},
    ("get", "/api/verifications"): {200, 400},
    ("get", "/api/verifications/{verification_id}"): {200, 400, 404},
    ("delete", "/api/verifications/{verification_id}"): {204, 400, 403, 404},
    ("post", "/api/verifications/{verification_id}/cancel"): {202, 400, 403, 404, 409, 415},
    ("post", "/api/verifications/{verification_id}/retry"): {202, 400, 403, 404, 409, 415, 429},
    ("post", "/api/steps/segment"): {200, *BODY},
    ("post", "/api/steps/decompose"): {200, *BODY, 429, 502, 503},
    ("post", "/api/steps/search"): {200, *BODY, 429, 502, 503},
    ("post", "/api/steps/extract"): {200, *BODY, 422, 429, 502},
    ("post", "/api/steps/passages"): {200, *BODY, 429},
    ("post", "/api/steps/categorize"): {200, *BODY, 429, 502, 503},
    ("post", "/api/steps/judge"): {200, *BODY, 429, 502, 503},
    ("post", "/api/steps/score"): {200, *BODY},
    ("post", "/api/trails"): {201, *BODY, 429, 503},
    ("get", "/api/trails/{verification_id}"): {200, 400, 404},
}


def test_every_operation_declares_each_status_it_can_answer(client):
    paths = client.get("/api/openapi.json").json()["paths"]

    declared = {
        (method, path): {int(code) for code in op["responses"]}
        for path, ops in paths.items()
        for method, op in ops.items()
    }

    assert declared == DECLARED
    for (method, path), codes in DECLARED.items():
        for code in codes - {204}:  # "No Content": nothing to describe
            response = paths[path][method]["responses"][str(code)]
            assert "schema" in response["content"]["application/json"], (path, code)
    assert "content" not in paths["/api/verifications/{verification_id}"]["delete"]["responses"]["204"]
    for path in ("/api/verifications", "/api/trails"):
        too_many = paths[path]["post"]["responses"]["429"]
        assert too_many["headers"]["Retry-After"]["schema"] == {"type": "integer"}


# --- the result JSON against its declared schema

TEXT = "The Eiffel Tower is in Paris, France. It was completed in 1889.\n\nI hope this helps!"


def strict(node):
    """The schema with every object closed (no properties beyond the described ones), to check
    that the description leaves nothing out."""
    if isinstance(node, dict):
        node = {key: strict(value) for key, value in node.items()}
        if node.get("type") == "object" and "properties" in node:
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [strict(item) for item in node]
    return node


def result_validators(client):
    """Validators of GET /api/verifications/{id}'s 200 body, as /api/openapi.json declares it:
    as declared, and with every object closed."""
    document = client.get("/api/openapi.json").json()
    declared = document["paths"]["/api/verifications/{verification_id}"]["get"]["responses"]["200"]
    root = {**declared["content"]["application/json"]["schema"], "components": document["components"]}
    return jsonschema_rs.validator_for(root), jsonschema_rs.validator_for(strict(root))


def errors_of(validator, instance) -> list[str]:
    return [f"{'/'.join(map(str, e.instance_path))}: {e.message}" for e in validator.iter_errors(instance)]


@pytest.mark.django_db(transaction=True)
def test_a_finished_run_is_exactly_what_the_schema_declares(client, world, celery_worker, loopback_only):
    created = client.post("/api/verifications", {"text": TEXT}, content_type="application/json")
    assert created.status_code == 201, created.content
    run_id = created.json()["id"]
    first = wait_for(client, run_id)
    assert first["status"] == "done", first
    evidence = [e for s in first["sentences"] for c in s["claims"] for e in c["evidence"]]
    # The run has every part the schema describes, so every part is checked.
    assert {e["verdict"] for e in evidence} >= {"supported", "not_supported", "irrelevant"}
    assert {s["outcome"] for s in first["sentences"]} >= {"no_claim"}
    assert first["problems"] and any(s["status"] == "failed" for s in first["sources"])
    declared, closed = result_validators(client)
    verification = Verification.objects.get(pk=run_id)

    for query, state in [
        ("", ViewState()),
        ("?score_rule=decisive", ViewState(score_rule="decisive")),
        ("?exclude_types=blog,wiki", ViewState(excluded_types=frozenset({"blog", "wiki"}))),
        (f"?exclude_evidence={evidence[0]['id']},x", ViewState(excluded_ids=frozenset({evidence[0]["id"]}))),
    ]:
        response = client.get(f"/api/verifications/{run_id}{query}")

        assert response.status_code == 200, response.content
        result = response.json()
        assert errors_of(declared, result) == [], query
        assert errors_of(closed, result) == [], query
        # The schema only describes: the JSON is the selector's, key for key and in its order.
        assert json.dumps(result) == json.dumps(selectors.verification_result(verification, state)), query


@pytest.mark.django_db(transaction=True)
def test_a_quick_run_is_exactly_what_the_schema_declares(client, world, celery_worker, loopback_only):
    world.llm.knows = {"1889": ("true", 0.999)}
    created = client.post(
        "/api/verifications", {"text": TEXT, "settings": {"quick": True}}, content_type="application/json"
    )
    assert created.status_code == 201, created.content
    run_id = created.json()["id"]
    first = wait_for(client, run_id)
    assert first["status"] == "done", first
    claims = [c for s in first["sentences"] for c in s["claims"]]
    # Every part quick mode adds is there to be checked: a claim from the model, labels, probabilities.
    assert first["quick"]["skipped_claims"] and any(c["from_model_knowledge"] for c in claims)
    assert {c["model_label"] for c in claims} >= {"true", "unsure"} and first["settings"]["quick"] is True
    declared, closed = result_validators(client)
    verification = Verification.objects.get(pk=run_id)

    for query, state in [("", ViewState()), ("?model_knowledge=true", ViewState(model_knowledge=True))]:
        response = client.get(f"/api/verifications/{run_id}{query}")

        assert response.status_code == 200, response.content
        result = response.json()
        assert errors_of(declared, result) == [], query
        assert errors_of(closed, result) == [], query
        assert json.dumps(result) == json.dumps(selectors.verification_result(verification, state)), query


@pytest.mark.django_db
def test_the_declared_result_schema_refuses_what_the_result_never_is(client):
    declared, closed = result_validators(client)
    result = {
        "id": "4b6f3a0e-8d1c-4f3e-9a57-2f1b8c0d9e21",
        "permalink": "/v/4b6f3a0e-8d1c-4f3e-9a57-2f1b8c0d9e21",
        "text": "",
        "status": "done",
        "error": "",
        "created_at": "2025-01-01T10:00:00+00:00",
        "finished_at": None,
        "settings": {},
        "left_out": {"blocked": 0, "not_allowed": 0},
        "evidence": "web",
        "score_rule": "all",
        "score": None,
        "band": "none",
        "supported": 0,
        "total": 0,
        "counts": dict.fromkeys(("supported", "not_supported", "irrelevant", "failed", "pending", "excluded"), 0),
        "source_types": {},
        "excluded_evidence": [],
        "excluded_types": [],
        "problems": [],
        "retries": 0,
        "resumes": 0,
        "progress": {
            "percent": 100,
            "starting": False,
            "sentences": {"total": 0, "decomposed": 0},
            "claims": {"total": 0, "searched": 0},
            "pages": {"total": 0, "fetched": 0, "failed": 0},
            "judgements": {"total": 0, "made": 0},
        },
        "usage": {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "searches": 0},
        "sentences": [],
        "documents": [],
        "sources": [],
    }
    assert errors_of(closed, result) == []

    for broken in [
        {**result, "score": "high"},
        {**result, "score": 1.5},
        {**result, "band": "blue"},
        {**result, "status": "finished"},
        {**result, "finished_at": 0},
        {key: value for key, value in result.items() if key != "usage"},
        {key: value for key, value in result.items() if key != "text"},
        {**result, "sentences": [{"index": 0, "text": "x"}]},
        {**result, "left_out": {"blocked": -1, "not_allowed": 0}},
    ]:
        assert errors_of(declared, broken), broken
    assert errors_of(closed, {**result, "undeclared": 1})
