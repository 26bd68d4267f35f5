"""The REST API (django-ninja): OpenAPI schema at /api/openapi.json, docs at /api/docs.

Create and read verifications, and call every pipeline step on its own (for integrations and
for seeing what each step does). The step endpoints run in the web process on one input."""

import uuid
from typing import Literal

from django.conf import settings
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, NinjaAPI, Query, Router, Schema
from ninja.errors import HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.responses import Status

from verification import providers, selectors, services, tasks
from verification.forms import VerificationForm
from verification.models import FINISHED, Verification
from verification.pipeline import categorize, decompose, extract, judge, passages, search, segment
from verification.pipeline.types import EvidenceToJudge, SegmentedSentence, StepError
from verification.scoring import DEFAULT_RULE, EvidenceRecord, Tally, compute_scores
from verification.viewstate import ViewState, parse_ids

api = NinjaAPI(
    title="factsite API",
    version="1",
    description="Fact verification for AI-generated text: sentences → claims → web evidence → verdicts → scores.",
    urls_namespace="api",
)
steps = Router(tags=["steps"])


class Error(Schema):
    detail: str
    errors: dict[str, list[str]] = {}


@api.exception_handler(NinjaValidationError)
def invalid_request(request: HttpRequest, exc: NinjaValidationError):
    problems = [
        f"{'.'.join(str(p) for p in e.get('loc', ()) if p not in ('body', 'payload'))}: {e.get('msg')}"
        for e in exc.errors
    ]
    return api.create_response(request, {"detail": "Invalid request: " + "; ".join(problems)}, status=400)


@api.exception_handler(StepError)
def step_failed(request: HttpRequest, exc: StepError):
    return api.create_response(request, {"detail": str(exc)}, status=502)


def _llm(model: str | None):
    if not providers.model_names():
        raise HttpError(503, "No language model is configured: set LLM_MODELS (e.g. gpt-4o-mini).")
    if model and model not in providers.model_names():
        raise HttpError(400, f"Unknown model {model!r}; configured: {', '.join(providers.model_names())}")
    return providers.llm_client(model or providers.model_names()[0])


# --- verifications


class RunSettingsIn(Schema):
    # A misspelt setting must be an error, not silently the default.
    model_config = {"extra": "forbid"}

    model: str | None = None
    retrieval_mode: Literal["dense", "sparse"] | None = None
    top_k_results: int | None = None
    top_k_passages: int | None = None
    context_size: int | None = None


class VerificationIn(Schema):
    text: str = Field(description=f"The text to verify, at most {settings.MAX_TEXT_CHARS:,} characters.")
    settings: RunSettingsIn = RunSettingsIn()


class VerificationCreated(Schema):
    id: str
    status: str
    permalink: str
    result_url: str


@api.post("/verifications", response={201: VerificationCreated, 400: Error, 503: Error}, tags=["verifications"])
def verification_create(request: HttpRequest, payload: VerificationIn):
    """Start a verification. It runs in the background: poll the result URL until `status` is
    `done` or `failed`."""
    form = VerificationForm(data={"text": payload.text, **payload.settings.dict(exclude_none=True)})
    if not form.is_valid():
        errors = {field: list(messages) for field, messages in form.errors.items()}
        detail = " ".join(f"{field}: {' '.join(messages)}" for field, messages in errors.items())
        return Status(400, {"detail": detail, "errors": errors})
    run_settings = form.run_settings()
    problems = providers.configuration_problems(run_settings["model"])
    if problems:
        return Status(503, {"detail": " ".join(problems)})
    verification = services.verification_create(text=form.cleaned_data["text"], settings=run_settings)
    tasks.enqueue_verification(verification)
    return Status(
        201,
        {
            "id": str(verification.pk),
            "status": verification.status,
            "permalink": request.build_absolute_uri(selectors.permalink(verification)),
            "result_url": request.build_absolute_uri(f"/api/verifications/{verification.pk}"),
        },
    )


class ResultView(Schema):
    exclude_evidence: str = Field("", description="Comma-separated evidence ids to leave out of the scores.")
    exclude_types: str = Field("", description="Comma-separated source types to leave out of the scores.")
    score_rule: Literal["all", "decisive"] = Field(
        DEFAULT_RULE,
        description="all: supported ÷ all judged evidence (the paper's); decisive: supported ÷ (supported + "
        "not supported), irrelevant evidence left out.",
    )


@api.get("/verifications/{verification_id}", response={200: dict, 404: Error}, tags=["verifications"])
def verification_get(request: HttpRequest, verification_id: uuid.UUID, view: Query[ResultView]):
    """The result JSON: status, progress, problems and everything found so far, with scores
    computed by the score rule over the evidence not excluded."""
    verification = _verification(verification_id)
    state = ViewState(
        excluded_ids=frozenset(parse_ids(view.exclude_evidence)),
        excluded_types=frozenset(t for t in view.exclude_types.split(",") if t.strip()),
        score_rule=view.score_rule,
    )
    return selectors.verification_result(verification, state)


class RetryOut(Schema):
    id: str
    status: str
    retried: int = Field(description="How many failed (or stranded) items were queued again.")


@api.post(
    "/verifications/{verification_id}/retry", response={202: RetryOut, 404: Error, 409: Error}, tags=["verifications"]
)
def verification_retry(request: HttpRequest, verification_id: uuid.UUID):
    """Queue the failed items of a finished run again, in place (same id and permalink)."""
    verification = _verification(verification_id)
    if verification.status not in FINISHED:
        return Status(409, {"detail": "The run is still going: retry it once it has finished."})
    retried = tasks.retry_failed(verification.pk)
    if not retried:
        return Status(409, {"detail": "Nothing in this run failed: there is nothing to retry."})
    verification.refresh_from_db()
    return Status(202, {"id": str(verification.pk), "status": verification.status, "retried": retried})


def _verification(verification_id) -> Verification:
    verification = get_object_or_404(Verification, pk=verification_id)
    return services.verification_expire_if_stale(verification, timeout_s=settings.RUN_TIMEOUT)


# --- the steps, one by one


class TextIn(Schema):
    text: str = Field(max_length=100_000)


class SentenceOut(Schema):
    index: int
    text: str
    start: int
    end: int
    paragraph_index: int
    context: list[str]


@steps.post("/segment", response=list[SentenceOut])
def step_segment(request: HttpRequest, payload: TextIn):
    """Split text into sentences with character offsets."""
    return [{**s.__dict__, "context": list(s.context)} for s in segment.segment(payload.text)]


class DecomposeIn(Schema):
    sentence: str = Field(max_length=5000)
    context: list[str] = Field([], description="The paragraph's sentences; the sentence is added if missing.")
    model: str | None = None


class ClaimOut(Schema):
    text: str
    query: str


@steps.post("/decompose", response={200: list[ClaimOut], 502: Error})
def step_decompose(request: HttpRequest, payload: DecomposeIn):
    """Atomic, self-contained claims of one sentence, each with a search query (one LLM call)."""
    context = payload.context if payload.sentence in payload.context else [*payload.context, payload.sentence]
    sentence = SegmentedSentence(
        0, payload.sentence, 0, len(payload.sentence), 0, tuple(context), context.index(payload.sentence)
    )
    return [c.__dict__ for c in decompose.decompose_sentence(_llm(payload.model), sentence)]


class SearchIn(Schema):
    query: str = Field(min_length=1, max_length=500)
    top_k: int = Field(5, ge=1, le=10)


class SearchHitOut(Schema):
    url: str
    title: str
    snippet: str
    rank: int


@steps.post("/search", response={200: list[SearchHitOut], 502: Error})
def step_search(request: HttpRequest, payload: SearchIn):
    """Web search results for a query."""
    return [h.__dict__ for h in search.search_claim(providers.search_provider(), payload.query, payload.top_k)]


class ExtractIn(Schema):
    url: str = Field(max_length=2000)


class PageOut(Schema):
    url: str
    final_url: str
    title: str
    text: str
    sentences: list[str]


@steps.post("/extract", response={200: PageOut, 502: Error})
def step_extract(request: HttpRequest, payload: ExtractIn):
    """Fetch a page (SSRF-safe) and extract its title and main text."""
    page = extract.fetch_page(providers.page_fetcher(), payload.url)
    return {**page.__dict__, "sentences": passages.page_sentences(page.text)}


class PassagesIn(Schema):
    claim: str = Field(max_length=2000)
    text: str = Field(max_length=500_000, description="The page's text, one block per line.")
    top_k: int = Field(3, ge=1, le=10)
    context: int = Field(1, ge=0, le=5)
    mode: Literal["dense", "sparse"] = "sparse"


class PassageOut(Schema):
    text: str
    highlights: list[tuple[int, int]]
    score: float


@steps.post("/passages", response=list[PassageOut])
def step_passages(request: HttpRequest, payload: PassagesIn):
    """The passages of a page that best match a claim."""
    chosen = passages.select_passages(
        payload.claim,
        passages.page_sentences(payload.text),
        top_k=payload.top_k,
        context=payload.context,
        embedder=providers.embedder() if payload.mode == "dense" else None,
    )
    return [p.__dict__ for p in chosen]


class CategorizeIn(Schema):
    host: str = Field(max_length=255)
    use_llm: bool = Field(True, description="Ask the LLM when the rule table does not know the host.")
    model: str | None = None


class CategoryOut(Schema):
    host: str
    source_type: str | None
    decided_by: str


@steps.post("/categorize", response={200: CategoryOut, 502: Error})
def step_categorize(request: HttpRequest, payload: CategorizeIn):
    """A host's source type: rule table, the per-host cache, then the LLM."""
    try:
        host = providers.host_of(payload.host if "//" in payload.host else f"http://{payload.host}")
    except ValueError:
        host = ""
    if not host:
        raise HttpError(400, f"Not a host name or URL: {payload.host!r}")
    rule = categorize.categorize_by_rules(host)
    if rule:
        return {"host": host, "source_type": rule.value, "decided_by": "rules"}
    cached = services.host_category_get(host)
    if cached:
        return {"host": host, "source_type": cached, "decided_by": "cache"}
    if not payload.use_llm:
        return {"host": host, "source_type": None, "decided_by": "unknown"}
    source_type = categorize.categorize_with_llm(_llm(payload.model), host)
    services.host_category_save(host=host, source_type=source_type.value)
    return {"host": host, "source_type": source_type.value, "decided_by": "llm"}


class JudgeIn(Schema):
    claim: str = Field(max_length=2000)
    context: str = Field("", max_length=10_000)
    passages: list[str] = Field(min_length=1, max_length=judge.BATCH_SIZE)
    model: str | None = None


class JudgementOut(Schema):
    passage: int
    verdict: str | None
    rationale: str
    error: str


@steps.post("/judge", response={200: list[JudgementOut], 502: Error})
def step_judge(request: HttpRequest, payload: JudgeIn):
    """Verdict (supported / not_supported / irrelevant) and rationale for each passage."""
    items = [EvidenceToJudge(key=str(i), source_title="", passage=p) for i, p in enumerate(payload.passages)]
    judgements = judge.judge_claim(_llm(payload.model), claim=payload.claim, context=payload.context, items=items)
    return [
        {
            "passage": int(j.key),
            "verdict": j.verdict.value if j.verdict else None,
            "rationale": j.rationale,
            "error": j.error,
        }
        for j in judgements
    ]


class EvidenceIn(Schema):
    id: int
    sentence_index: int
    claim_id: int = Field(0, description="Evidence of one claim shares an id; claims are scored too.")
    source_type: str
    verdict: Literal["supported", "not_supported", "irrelevant", ""] = Field(description='"" when not judged')
    failed: bool = False


class ScoreIn(Schema):
    evidence: list[EvidenceIn] = Field(max_length=100_000)
    excluded_ids: list[int] = []
    excluded_types: list[str] = []
    score_rule: Literal["all", "decisive"] = DEFAULT_RULE


@steps.post("/score")
def step_score(request: HttpRequest, payload: ScoreIn):
    """Credibility scores for a set of judged evidence: supported ÷ all judged evidence (rule
    `all`, the default) or supported ÷ (supported + not supported) (rule `decisive`)."""
    scores = compute_scores(
        [EvidenceRecord(**e.dict()) for e in payload.evidence],
        rule=payload.score_rule,
        excluded_ids=payload.excluded_ids,
        excluded_types=payload.excluded_types,
    )
    return {
        "score_rule": scores.rule,
        "overall": _tally_json(scores.overall),
        "sentences": {str(i): _tally_json(t) for i, t in sorted(scores.sentences.items())},
        "claims": {str(i): _tally_json(t) for i, t in sorted(scores.claims.items())},
        "source_types": scores.distribution,
    }


def _tally_json(tally: Tally) -> dict:
    return {
        "supported": tally.supported,
        "not_supported": tally.not_supported,
        "irrelevant": tally.irrelevant,
        "total": tally.total,
        "score": tally.score,
        "band": tally.band,
    }


api.add_router("/steps", steps)
