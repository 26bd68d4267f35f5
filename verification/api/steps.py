"""The pipeline's steps as API endpoints, one by one (for integrations and for seeing what each
step does). They run in the web process on one input; api.py mounts them under /api/steps."""

from typing import Annotated, Literal

import requests
from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Router, Schema
from ninja.errors import HttpError
from pydantic import AfterValidator, field_validator

from verification import services
from verification.api.schemas import BODY_ERRORS, SPENDING_ERRORS, Band, Error, ScoreRule, SourceTypeValue, VerdictValue
from verification.clients import providers
from verification.pipeline import categorize, cited_segments, decompose, extract, judge, languages, lazy, search
from verification.pipeline.citations import read_citations
from verification.pipeline.types import EvidenceToJudge, SegmentedSentence
from verification.pipeline.urls import UnsafeAddress, parse_web_address
from verification.scoring import DEFAULT_RULE, EvidenceRecord, Tally, compute_scores

steps = Router(tags=["steps"])


def _llm(model: str | None):
    if not providers.model_names():
        raise HttpError(503, "No language model is configured: set LLM_MODELS (e.g. gpt-5-mini).")
    if model and model not in providers.model_names():
        raise HttpError(400, f"Unknown model {model!r}; configured: {', '.join(providers.model_names())}")
    return providers.llm_client(model or providers.model_names()[0])


def _search():
    if problem := providers.search_problem():
        raise HttpError(503, problem)
    return providers.search_provider()


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("is blank: it needs some text")
    return text


# A blank sentence, claim, query or passage gives a step nothing to work on: refused, not sent on.
NonBlank = Annotated[str, AfterValidator(_not_blank), Field(json_schema_extra={"pattern": r"\S"})]


class TextIn(Schema):
    text: str = Field(max_length=100_000)


class SentenceOut(Schema):
    index: int
    text: str
    start: int
    end: int
    paragraph_index: int
    context: list[str]


@steps.post("/segment", response={200: list[SentenceOut], **BODY_ERRORS})
def step_segment(request: HttpRequest, payload: TextIn):
    """Split text into sentences with character offsets, as a run splits it: in the text's language, without
    its own citation markers and reference lists (offsets stay those of the text as sent)."""
    cited = read_citations(payload.text)
    sentences = cited_segments.segment_cited(cited, languages.detect_language(cited.text) or "en")
    return [{**s.__dict__, "context": list(s.context)} for s in sentences]


# A paragraph rarely has more than a few dozen sentences (the pipeline hands the model chunks of
# segment.CONTEXT_BUDGET_CHARS); an unbounded context is an unbounded prompt.
MAX_CONTEXT_SENTENCES = 100


class DecomposeIn(Schema):
    sentence: NonBlank = Field(max_length=5000)
    context: list[NonBlank] = Field(
        [],
        description=f"The paragraph's sentences; the sentence is added if missing. At most {MAX_CONTEXT_SENTENCES} "
        "sentences, and together at most MAX_TEXT_CHARS characters (the longest text a run accepts).",
        json_schema_extra={"maxItems": MAX_CONTEXT_SENTENCES},
    )
    model: str | None = None

    @field_validator("context")
    @classmethod
    def _context_within_limits(cls, context: list[str]) -> list[str]:
        if len(context) > MAX_CONTEXT_SENTENCES:
            raise ValueError(f"{len(context):,} sentences; the limit is {MAX_CONTEXT_SENTENCES}")
        chars = sum(len(sentence) for sentence in context)
        if chars > settings.MAX_TEXT_CHARS:
            raise ValueError(f"{chars:,} characters; the limit is {settings.MAX_TEXT_CHARS:,} (MAX_TEXT_CHARS)")
        return context


class ClaimOut(Schema):
    text: str
    query: str


@steps.post("/decompose", response={200: list[ClaimOut], **BODY_ERRORS, **SPENDING_ERRORS, 502: Error, 503: Error})
def step_decompose(request: HttpRequest, payload: DecomposeIn):
    """Atomic, self-contained claims of one sentence, each with a search query (one LLM call)."""
    context = payload.context if payload.sentence in payload.context else [*payload.context, payload.sentence]
    sentence = SegmentedSentence(
        0, payload.sentence, 0, len(payload.sentence), 0, tuple(context), context.index(payload.sentence)
    )
    return [c.__dict__ for c in decompose.decompose_sentence(_llm(payload.model), sentence)]


class SearchIn(Schema):
    query: NonBlank = Field(max_length=500)
    top_k: int = Field(5, ge=1, le=10)


class SearchHitOut(Schema):
    url: str
    title: str
    snippet: str
    rank: int
    provider: str = Field(description='the search provider that found it ("serper", "wikipedia", …)')


@steps.post("/search", response={200: list[SearchHitOut], **BODY_ERRORS, **SPENDING_ERRORS, 502: Error, 503: Error})
def step_search(request: HttpRequest, payload: SearchIn):
    """Web search results for a query."""
    return [h.__dict__ for h in search.search_claim(_search(), payload.query, payload.top_k)]


def web_address_problem(url: str) -> str:
    """Why `url` is not an address the fetcher can try ("" when it is): input to refuse with
    a 4xx, not a page that failed. Read as the fetcher reads it (urls.parse_web_address)."""
    if "://" not in url:
        return f"not a web address: {url[:100]!r} (give an http:// or https:// URL, e.g. https://example.org/page)"
    try:
        address = parse_web_address(url)
    except UnsafeAddress as error:
        return str(error)
    try:
        requests.Request("GET", address.url).prepare()
    except requests.RequestException as error:
        return f"not a valid URL ({error})"
    return ""


class ExtractIn(Schema):
    url: str = Field(
        max_length=2000, description="An http:// or https:// address.", json_schema_extra={"pattern": "^https?://"}
    )

    @field_validator("url")
    @classmethod
    def _a_web_address(cls, url: str) -> str:
        problem = web_address_problem(url)
        if problem:
            raise ValueError(problem)
        return url


class PageOut(Schema):
    url: str
    final_url: str
    title: str
    text: str
    sentences: list[str]


@steps.post(
    "/extract",
    response={200: PageOut, **BODY_ERRORS, **SPENDING_ERRORS, 422: Error, 502: Error},
    openapi_extra={
        "responses": {
            422: {"description": "The address is refused: it leads to a non-public address (or redirects to one)"},
            502: {"description": "The page could not be fetched or read"},
        }
    },
)
def step_extract(request: HttpRequest, payload: ExtractIn):
    """Fetch a page (SSRF-safe) and extract its title and main text."""
    passages = lazy.load("verification.pipeline.passages")  # nltk: seconds to import, not at the start

    page = extract.fetch_page(providers.page_fetcher(), payload.url)
    return {**page.__dict__, "sentences": passages.page_sentences(page.text)}


class PassagesIn(Schema):
    claim: NonBlank = Field(max_length=2000)
    text: str = Field(max_length=500_000, description="The page's text, one block per line.")
    top_k: int = Field(3, ge=1, le=10)
    context: int = Field(1, ge=0, le=5)
    mode: Literal["dense", "sparse"] = "sparse"


class PassageOut(Schema):
    text: str
    highlights: list[tuple[int, int]]
    score: float


@steps.post("/passages", response={200: list[PassageOut], **BODY_ERRORS, **SPENDING_ERRORS})
def step_passages(request: HttpRequest, payload: PassagesIn):
    """The passages of a page that best match a claim."""
    passages = lazy.load("verification.pipeline.passages")  # nltk: seconds to import, not at the start

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
    source_type: SourceTypeValue | None = Field(description="null: unknown (the rules do not know it, no LLM asked)")
    decided_by: Literal["rules", "cache", "llm", "unknown"]


@steps.post("/categorize", response={200: CategoryOut, **BODY_ERRORS, **SPENDING_ERRORS, 502: Error, 503: Error})
def step_categorize(request: HttpRequest, payload: CategorizeIn):
    """A host's source type: rule table, the per-host cache, then the LLM."""
    try:
        address = parse_web_address(payload.host if "//" in payload.host else f"http://{payload.host}")
    except UnsafeAddress:
        host = ""
    else:
        host = providers.host_of(address.url)
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
    claim: NonBlank = Field(max_length=2000)
    context: str = Field("", max_length=10_000)
    passages: list[NonBlank] = Field(
        min_length=1,
        max_length=judge.BATCH_SIZE,
        description=f"Each is cut to its first {judge.MAX_PASSAGE_CHARS:,} characters for the model.",
    )
    model: str | None = None


class JudgementOut(Schema):
    passage: int
    verdict: VerdictValue | None = Field(description="null when the model gave none for this passage (see error)")
    rationale: str
    error: str


@steps.post("/judge", response={200: list[JudgementOut], **BODY_ERRORS, **SPENDING_ERRORS, 502: Error, 503: Error})
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
    kind: str = Field(
        "",
        description='"" for a passage of a page read; "snippet" for a search snippet; "cited" for a source the '
        "text cites",
    )


class ScoreIn(Schema):
    evidence: list[EvidenceIn] = Field(max_length=100_000)
    excluded_ids: list[int] = []
    excluded_types: list[str] = []
    excluded_kinds: list[str] = Field([], description='kinds of evidence to leave out: "snippet", "cited"')
    score_rule: Literal["all", "decisive"] = DEFAULT_RULE


class TallyOut(Schema):
    supported: int
    not_supported: int
    irrelevant: int
    silent_documents: int = Field(
        0, description="evidence of type your_document judged irrelevant: counted under neither rule"
    )
    total: int = Field(description="the denominator under the score rule")
    score: float | None = Field(ge=0, le=1, description="null when no evidence counts")
    band: Band


class ScoresOut(Schema):
    score_rule: ScoreRule
    overall: TallyOut
    sentences: dict[str, TallyOut] = Field(description="by sentence index")
    claims: dict[str, TallyOut] = Field(description="by claim id")
    source_types: dict[str, float] = Field(description="share of the included judged evidence per source type, in %")


@steps.post("/score", response={200: ScoresOut, **BODY_ERRORS})
def step_score(request: HttpRequest, payload: ScoreIn):
    """Credibility scores for a set of judged evidence: supported ÷ all judged evidence (rule
    `all`, the default) or supported ÷ (supported + not supported) (rule `decisive`)."""
    scores = compute_scores(
        [EvidenceRecord(**e.dict()) for e in payload.evidence],
        rule=payload.score_rule,
        excluded_ids=payload.excluded_ids,
        excluded_types=payload.excluded_types,
        excluded_kinds=payload.excluded_kinds,
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
        "silent_documents": tally.silent_documents,
        "total": tally.total,
        "score": tally.score,
        "band": tally.band,
    }
