"""Response schemas the API's modules share: errors, and the result JSON
(selectors.verification_result, which the API, the CLI's --json and the download button share)
described field by field for the OpenAPI schema. The result schemas only describe: the endpoint
serves them with exclude_unset, so the JSON is exactly what the selector returns. Fields appear in
the selector's order (a schema with the tally fields inherited would move them)."""

from typing import Annotated, Literal

from ninja import Field, Schema

from verification.inputs.documents import EVIDENCE_MODES
from verification.inputs.forms import CITATION_MODES
from verification.models import ClaimStatus, Origin, SourceType, Status, Verdict
from verification.pipeline.citation_markers import Points
from verification.scoring import NO_CLAIM, NOT_CHECKED, OUTCOMES, PENDING, SCORE_RULES
from verification.scoring.citations import CITATION_OUTCOMES
from verification.selectors import PROBLEM_STEPS
from verification.selectors.records import permalink


class Error(Schema):
    detail: str
    errors: dict[str, list[str]] = {}


# What every operation with a JSON body can answer besides its own codes: 400 for a body that is
# not valid input, 413 over Django's DATA_UPLOAD_MAX_MEMORY_SIZE, 415 (limits.JsonOnlyApiMiddleware)
# for a request that does not say it is JSON.
BODY_ERRORS = {400: Error, 413: Error, 415: Error}
# Operations that spend (limits.SPENDING_OPERATIONS): over the client's hourly limit, 429 with Retry-After.
SPENDING_ERRORS = {429: Error}


ScoreRule = Literal[tuple(SCORE_RULES)]
EvidenceMode = Literal[tuple(mode for mode, _ in EVIDENCE_MODES)]
CitationMode = Literal[tuple(mode for mode, _ in CITATION_MODES)]
# What a run's result says its evidence was: a mode a run can be asked for, or "trail" (a run
# started by POST /api/trails, the trail form or `verify --trail`, checked down its trail).
RunEvidence = Literal[(*(mode for mode, _ in EVIDENCE_MODES), "trail")]
Band = Literal["green", "orange", "red", "none"]
RunStatus = Literal[tuple(Status.values)]
ClaimStatusValue = Literal[tuple(ClaimStatus.values)]
VerdictValue = Literal[tuple(Verdict.values)]
# "" until the source's type is decided.
SourceTypeValue = Literal[(*SourceType.values, "")]
CitationOutcome = Literal[tuple(CITATION_OUTCOMES)]
ClaimOutcome = Literal[(*OUTCOMES, PENDING, NOT_CHECKED)]
SentenceOutcome = Literal[(*OUTCOMES, PENDING, NO_CLAIM, NOT_CHECKED)]
Score = Annotated[
    float | None,
    Field(ge=0, le=1, description="supported ÷ counted evidence under the score rule; null when none counts"),
]
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
Count = Annotated[int, Field(ge=0)]
PublishedDate = Annotated[
    str | None,
    Field(
        json_schema_extra={"format": "date"},
        description="when the page or PDF says it was first published (ISO date); null when it does not say",
    ),
]
Stale = Annotated[bool, Field(description="published more than STALE_AFTER_YEARS years ago")]


# A language as its ISO 639-1 code (pipeline/languages.py); null when not told.
LanguageCode = Annotated[str | None, Field(json_schema_extra={"examples": ["de", "zh", "ar"]})]


class Counts(Schema):
    supported: Count
    not_supported: Count
    irrelevant: Count
    failed: Count = Field(description="evidence the judge failed on: counted under neither rule")
    pending: Count = Field(description="evidence not judged yet")
    excluded: Count = Field(description="evidence this view leaves out")
    silent_documents: Count = Field(
        0,
        description="the user's own documents judged irrelevant to the claim: counted under neither rule "
        "(every claim cites every document, so one that does not address it is no evidence against it)",
    )
    snippets: Count = Field(
        0, description="of the judged evidence counted, the items judged from a search snippet (page not read)"
    )


class RunSettings(Schema):
    """As chosen when the run was created (every key is there for runs made by the API, the
    web form or the CLI)."""

    model: str = None
    retrieval_mode: Literal["dense", "sparse"] = None
    top_k_results: int = None
    top_k_passages: int = None
    context_size: int = None
    evidence: RunEvidence = None
    quick: bool = Field(
        None,
        description="quick mode: claims the model labelled true or false from its own knowledge with at least "
        "quick_min_probability were not searched (web evidence only)",
    )
    evidence_switched_from: EvidenceMode = Field(
        None, description="the mode asked for when documents came with “web”: the run read them too (“both”)"
    )
    citations: CitationMode = Field(
        None,
        description="what the run did besides reading what the text's own citations cite: also_search, the web "
        "searched as well; only, no web search (absent for runs from before citations were read)",
    )
    blocked_domains: list[str] = Field(None, description="this run's own block list (subdomains included)")
    server_blocked_domains: list[str] = Field(None, description="BLOCKED_DOMAINS when the run was created")
    server_allowed_domains: list[str] = Field(
        None, description="ALLOWED_DOMAINS when the run was created; empty: every domain not blocked"
    )
    second_search_below: int = Field(
        None,
        description="SECOND_SEARCH_BELOW when the run was created: a claim with fewer of its web results read as "
        "pages is searched once more (0: never)",
    )
    quick_min_probability: float = Field(None, description="QUICK_MIN_PROBABILITY when the quick run was created")
    write_search_queries: bool = Field(
        None,
        description="WRITE_SEARCH_QUERIES when the run was created: false, each claim was searched by its own words "
        "instead of a query the model wrote",
    )
    trail_q: int = Field(
        None,
        description="a trail run's q: the Not Fully Supported verdicts in a row after which a claim stopped "
        "(its whole result is at /api/trails/{id})",
    )


class LeftOut(Schema):
    blocked: Count = Field(description="search results on a blocked domain (the run's or the server's list)")
    not_allowed: Count = Field(description="search results outside the server's allowed domains")


class ProblemReason(Schema):
    reason: str
    count: Count
    transient: bool = Field(
        True,
        description="whether a retry may end it otherwise (a timeout, HTTP 429 or 5xx, a connection error); "
        "false for failures a retry would meet again (HTTP 403 or 404, not a web page, an unreadable PDF …)",
    )
    read_from_snippet: bool = Field(
        False,
        description="pages that could not be read but whose search snippet was judged in their place: listed "
        "with the failures, yet no failed item (not in the step's count)",
    )


class Problem(Schema):
    step: Literal[tuple(PROBLEM_STEPS)]
    label: str
    count: Count = Field(description="failed items; a page read from its snippet is not one")
    read_from_snippet: Count = Field(
        0, description="pages that could not be read whose search snippet was judged in their place"
    )
    reasons: list[ProblemReason]


class SentenceProgress(Schema):
    total: Count
    decomposed: Count


class ClaimProgress(Schema):
    total: Count
    searched: Count


class PageProgress(Schema):
    total: Count
    fetched: Count
    failed: Count = Field(description="pages that could not be read and had no search snippet judged instead")
    read_from_snippet: Count = Field(
        0, description="pages that could not be read whose search snippet was judged in their place (not failed)"
    )


class JudgementProgress(Schema):
    total: Count
    made: Count


class TrailProgress(Schema):
    """A trail run's progress in its own terms (selectors/trail_progress.py)."""

    kind: Literal["trail"]
    percent: int = Field(ge=0, le=100)
    sentences: dict[str, int] = Field(description="`total`, and `split` into claims")
    claims: dict[str, int] = Field(description="`total`, and `ended`: traced to the end of their trail")
    rounds: dict[str, int] = Field(description="`total` opened, and `judged`")
    texts: dict[str, int] = Field(description="`total` texts to read (one per claim, text and round), and `read`")
    documents: dict[str, int] = Field(description="texts given as web addresses: `total`, and `read`")


class Progress(Schema):
    percent: int = Field(ge=0, le=100, description="never goes back while the run goes on; 100 once finished")
    starting: bool = Field(
        description="the process running it is still loading its model (the first run after a start): "
        "its pages wait for that, the rest goes on"
    )
    sentences: SentenceProgress
    claims: ClaimProgress
    pages: PageProgress
    judgements: JudgementProgress
    trail: TrailProgress | None = Field(
        None, description="a trail run's progress in rounds and texts read; its `percent` is the run's"
    )


class Usage(Schema):
    llm_calls: Count
    prompt_tokens: Count
    completion_tokens: Count
    reasoning_tokens: Count = Field(0, description="of the completion tokens, those the model spent thinking")
    searches: Count
    llm_cached: Count = Field(0, description="model answers reused from earlier runs (the cache) instead of asked")
    searches_cached: Count = Field(0, description="web searches reused from earlier runs (the cache) instead of sent")
    claims_searched_again: Count = Field(
        0, description="claims too few of whose pages could be read, searched a second time (counted in searches)"
    )


class EvidenceResult(Schema):
    id: int
    url: str
    title: str
    host: str
    source_type: SourceTypeValue
    language: LanguageCode = Field(None, description="the language of its page's text; null when not told")
    provider: str = Field(
        description='the search provider that found the page for this claim ("serper", "wikipedia", …); "" for '
        "your own documents"
    )
    published: PublishedDate
    stale: Stale
    passage: str = Field(description='the page\'s excerpts in page order, joined by " … "')
    highlights: list[tuple[int, int]] = Field(description="[start, end) of the best-matching sentences in the passage")
    relevance: float
    verdict: VerdictValue | None = Field(description="null until judged, and when judging failed")
    rationale: str
    status: RunStatus
    error: str
    snippet_only: bool = Field(
        False,
        description="judged from the search result's title and snippet (passage): its page could not be read",
    )
    unread_reason: str = Field(
        "", description='why the page was not read ("HTTP 403", "a bot challenge", "timed out" …); "" when it was'
    )
    included: bool = Field(description="counted in this view's scores")
    duplicate_of: int | None = Field(
        description="the id of the item whose text this one repeats (found at another URL): it is not judged nor "
        "counted on its own, and takes that item's verdict; null for an item that counts"
    )


class ClaimResult(Schema):
    id: int
    index: int
    text: str
    query: str
    second_query: str = Field(
        "", description="the query of the claim's second search, when too few of its pages could be read; '' when none"
    )
    english_query: str = Field(
        "",
        description="the English query it was also searched with, its text being in a language whose web is thin; "
        "'' when none",
    )
    model_label: Literal["", "true", "false", "unsure"] = Field(
        "", description="quick mode: what the model said of the claim from its own knowledge; '' when not asked"
    )
    model_label_probability: float | None = Field(
        None, description="the label's probability, from its token's logprob; null when the server gave none"
    )
    from_model_knowledge: bool = Field(
        False,
        description="quick mode: answered from the model's own knowledge, not checked against any source and not "
        "searched; it has no evidence, and counts in the scores (label true as supporting, false as not) only with "
        "model_knowledge=1",
    )
    status: ClaimStatusValue
    error: str
    outcome: ClaimOutcome
    note: str
    score: Score
    band: Band
    supported: Count
    total: Count
    counts: Counts
    evidence: list[EvidenceResult]


class SentenceResult(Schema):
    index: int
    text: str
    start: int
    end: int
    paragraph: int
    status: RunStatus
    error: str
    outcome: SentenceOutcome
    note: str
    score: Score
    band: Band
    supported: Count
    total: Count
    counts: Counts
    claims: list[ClaimResult]


class SourceResult(Schema):
    id: int
    url: str
    host: str
    title: str
    origin: Literal[tuple(Origin.values)] = Field(
        description="web: found by the web search; document: one of the documents given; cited: an address the "
        "text itself cites (a page both cited and found is cited)"
    )
    source_type: SourceTypeValue
    language: LanguageCode = Field(None, description="the language of its text, told when it was read; null until then")
    providers: list[str] = Field(description="the search providers that found the page, in the order they did")
    published: PublishedDate
    stale: Stale
    type_decided_by: str = Field(
        description='how its type was decided ("rules", "llm", "fallback: <reason>" …); "" until then'
    )
    status: RunStatus
    error: str


class DocumentResult(Schema):
    id: int = Field(description="its source's id (see sources)")
    kind: Literal["file", "url"]
    name: str = Field(description="a file's name; a URL's page title once read")
    url: str = Field(description='the web address of a URL document; "" for a file (its bytes are never served)')
    content_type: str = Field(description='a file\'s type, sniffed from its content; "" for a URL')
    status: RunStatus
    error: str


class QuickSummary(Schema):
    min_probability: float | None = Field(description="the probability from which a label true or false was trusted")
    labelled_claims: Count = Field(description="claims the model gave a label")
    skipped_claims: Count = Field(description="claims answered from the model's own knowledge, not searched")
    searches_saved: Count = Field(description="web searches not sent (one per skipped claim)")
    pages_saved: Count = Field(description="pages not fetched, at most: the results per claim for each skipped one")
    logprobs: bool | None = Field(
        description="whether the model server gave the labels' probabilities (logprobs); without them no claim is "
        "skipped; null before any label came"
    )
    note: str = Field(description="the above in words, as the result page says it")


class CitationResult(Schema):
    index: Count = Field(description="its place among the text's citations, in the order of the text")
    sentence: int | None = Field(description="the index of the sentence it cites for; null when the text has none")
    marker: str = Field(description='as written: "[1]", "[^2]", "([nytimes.com](https://…))", a DOI, a bare URL …')
    start: Count = Field(description="where the marker starts in the text (`text`, as given)")
    end: Count
    points_to: Literal[tuple(Points)] = Field(
        description="an address, a DOI, an entry of a reference list, a GraphRAG record, or a source named only"
    )
    label: str = Field(description="the reference entry's label, or the GraphRAG record's id")
    url: str | None = Field(description="the address read for it; null when it gives none")
    title: str
    source: int | None = Field(description="the id of the source read for it (see sources); null until one is")
    outcome: CitationOutcome
    outcome_label: str = Field(description="the outcome in words")
    reason: str = Field(description="why, where the outcome alone does not say: a fetch failure, a marker's problem")


class RunLanguage(Schema):
    code: str = Field(description='its ISO 639-1 code: "de", "zh", "ar" …')
    name: str = Field(description='its name in English: "German"')
    own_name: str = Field(description='its name in itself: "Deutsch"')
    support: Literal["tested", "less tested"] = Field(
        description="tested: factsite's end-to-end tests run a text in it (en, de, es, fr, zh, ja, ar, hi); less "
        "tested: checked the same way, untested"
    )
    dir: Literal["ltr", "rtl", "auto"] = Field(description="the direction its script is written in")
    label: str = Field(description='the above in words: "checked in German", "checked in Thai: less tested"')


class VerificationResult(Schema):
    id: str = Field(json_schema_extra={"format": "uuid"})
    permalink: str
    text: str = Field(description="the text as it was given, whole (sentences[].start/end index into it)")
    status: RunStatus
    error: str
    created_at: Timestamp
    finished_at: Timestamp | None
    settings: RunSettings
    language: RunLanguage | None = Field(
        None,
        description="the language the text was checked in (its claims and queries written in it, its search asked "
        "in it); null when the text was too short to tell or the detector unsure: then no language was asked for",
    )
    left_out: LeftOut = Field(description="search results the run's domain lists left out: never read nor counted")
    evidence: RunEvidence = Field(
        description="where evidence came from: web search, the documents given, both, or the texts of a trail "
        "(a trail run: its claims' verdicts down the trail are at /api/trails/{id})"
    )
    score_rule: ScoreRule
    score: Score
    band: Band
    supported: Count
    total: Count
    counts: Counts
    source_types: dict[str, float] = Field(description="share of the included judged evidence per source type, in %")
    excluded_evidence: list[int]
    excluded_types: list[str]
    model_knowledge_counted: bool = Field(
        False, description="whether this view counts the claims answered from the model's own knowledge (quick mode)"
    )
    quick: QuickSummary | None = Field(None, description="quick mode's account of the run; null without quick mode")
    excluded_kinds: list[str] = Field(
        [],
        description='kinds of evidence this view leaves out: "snippet" (judged from a search snippet), "cited" '
        "(from a source the text itself cites)",
    )
    problems: list[Problem]
    retries: Count = Field(description="times its failed parts were queued again on request")
    retried_at: Timestamp | None = Field(None, description="when its failed parts were last queued again")
    retryable: Count = Field(
        0, description="failed (or stranded) items a retry would queue again now: only transient failures count"
    )
    working_seconds: float | None = Field(
        None, description="time the run was working: its first pass and each retry, not the time between them"
    )
    resumes: Count = Field(description="times its stalled work was queued again by the sweeper")
    progress: Progress
    usage: Usage
    sentences: list[SentenceResult]
    documents: list[DocumentResult] = Field(description="the documents given with the run, in that order")
    sources: list[SourceResult]
    citations: list[CitationResult] = Field(
        [],
        description="the text's own citations (markers, links, footnotes, DOIs) and whether what each cites says what "
        "its sentence says: supports, contradicts, does_not_say, could_not_be_read, does_not_exist (no such host, "
        "404/410), unresolved (points nowhere), not_checked (over MAX_CITED_SOURCES, no address, …), pending",
    )
    citation_counts: dict[CitationOutcome, Count] = Field(
        {}, description="how many citations have each outcome (every outcome named)"
    )


class VerificationCreated(Schema):
    id: str = Field(json_schema_extra={"format": "uuid"})
    status: RunStatus
    permalink: str
    result_url: str


def created_body(request, verification, *, result_path: str) -> dict:
    """What POST /api/verifications and POST /api/trails answer with 201 (VerificationCreated)."""
    return {
        "id": str(verification.pk),
        "status": verification.status,
        "permalink": request.build_absolute_uri(permalink(verification)),
        "result_url": request.build_absolute_uri(f"{result_path}/{verification.pk}"),
    }
