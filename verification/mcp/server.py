"""The MCP server: four tools and two resources, each a thin call into calls.py (run in a worker
thread: the ORM is synchronous) under the caller's identity (identity.py). Served over stdio by
`manage.py mcp` and over streamable HTTP at /mcp by http.py."""

import functools
import time
from typing import Annotated, Literal

import anyio
import anyio.to_thread
from django.conf import settings
from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from verification.inputs.documents import EVIDENCE_MODES
from verification.inputs.forms import CITATION_MODES
from verification.mcp import answers, calls, identity
from verification.models import SourceType
from verification.pipeline.trail_graph import TRAIL_JSON_SCHEMA
from verification.scoring import DEFAULT_RULE, EVIDENCE_KINDS, SCORE_RULES

# How long a tool waits for a run at most: under the 60 s a gunicorn sync worker gives a request
# (the Docker image's), so a wait over HTTP is never cut. Longer runs: get_result again.
MAX_WAIT_SECONDS = 50
# How often a waiting tool reads the run's progress (and tells the client).
POLL_SECONDS = 1.0

INSTRUCTIONS = (
    "factsite checks a text's factual claims against web pages (or the documents you give) and answers, per "
    "sentence, how well its claims are supported, with the claims that are contradicted or unsupported and the "
    "passage that says so. Check your answer before you send it: call check_text with wait_seconds (a run of a "
    "few sentences takes about a minute), then revise the sentences with flagged claims. A run still going "
    "answers with its id: call get_result with wait_seconds until its status is done."
)

server = MCPServer("factsite", instructions=INSTRUCTIONS)

Evidence = Literal[tuple(mode for mode, _ in EVIDENCE_MODES)]
Citations = Literal[tuple(mode for mode, _ in CITATION_MODES)]
WaitSeconds = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_WAIT_SECONDS,
        description=f"Seconds to wait for the result (0 to {MAX_WAIT_SECONDS}): 0 answers at once with the run's "
        "id and permalink; otherwise the answer is the result when the run ends in time, else what is done so far.",
    ),
]
TRAIL_NODES_SCHEMA = {key: TRAIL_JSON_SCHEMA["properties"]["nodes"][key] for key in ("items", "minItems")}
RunId = Annotated[str, Field(description="The run's id, as check_text or check_trail answered it.")]


class ResultView(BaseModel):
    """The selection a result's permalink takes: what to leave out of the scores, and how to score."""

    exclude_evidence: list[int] = Field([], description="Evidence ids (an evidence's id) to leave out of the scores.")
    exclude_types: list[Literal[tuple(SourceType.values)]] = Field([], description="Source types to leave out.")
    exclude_kinds: list[Literal[tuple(EVIDENCE_KINDS)]] = Field(
        [],
        description='"snippet": leave out what was judged from a search snippet (page not read); "cited": leave out '
        "the sources the text itself cites (to see what the web alone says).",
    )
    score_rule: Literal[tuple(SCORE_RULES)] = Field(
        DEFAULT_RULE,
        description="all: supported ÷ all judged evidence; decisive: supported ÷ (supported + not supported).",
    )
    model_knowledge: bool = Field(False, description="Count the claims quick mode answered from the model's knowledge.")


async def _db(call, *args, **kwargs):
    """A call of the synchronous app in a worker thread; a refusal becomes the tool's error."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(_closing, call, *args, **kwargs))
    except calls.Refused as refusal:
        raise ToolError(str(refusal)) from None


def _closing(call, *args, **kwargs):
    # What Django does around a request: a connection too old or broken is not kept for the next.
    close_old_connections()
    try:
        return call(*args, **kwargs)
    finally:
        close_old_connections()


def _who(ctx: Context) -> identity.Identity:
    return identity.of_request(ctx.request_context.request)


async def _answer(ctx: Context, who: identity.Identity, run_id: str, wait_seconds: int, view=None) -> str:
    """The run's answer, after waiting up to wait_seconds for it to end, its progress reported meanwhile."""
    deadline = time.monotonic() + wait_seconds
    while (remaining := deadline - time.monotonic()) > 0:
        ended, percent, words = await _db(calls.finished, run_id)
        if ended:
            break
        await ctx.report_progress(percent, 100, words)
        await anyio.sleep(min(POLL_SECONDS, remaining))
    return await _db(calls.answer, who, run_id, view)


# The tools answer JSON as text (answers.py), which is what a model reads, within MAX_ANSWER_CHARS: no
# structured copy of it beside (structured_output=False), which would be that text again, quoted.
@server.tool(
    structured_output=False,
    annotations=ToolAnnotations(title="Check a text's facts", read_only_hint=False, open_world_hint=True),
)
async def check_text(
    ctx: Context,
    text: Annotated[
        str, Field(description=f"The text to check (at most {settings.MAX_TEXT_CHARS:,} characters), as written.")
    ],
    evidence: Annotated[
        Evidence,
        Field(description="web: search the web (the default); documents: only the documents given; both."),
    ] = "web",
    documents: Annotated[
        list[str] | None,
        Field(description="Addresses (http or https) of pages or files to read as evidence, with documents or both."),
    ] = None,
    citations: Annotated[
        Citations,
        Field(
            description="What to do with the text's own citations ([1], links, a Sources list), which are always "
            "read and judged against their sentence: also_search (the default) searches the web as well; only: "
            "the cited sources alone."
        ),
    ] = "also_search",
    wait_seconds: WaitSeconds = 0,
) -> str:
    """Check the factual claims of a text: each sentence is split into claims, each claim searched and judged
    against what the pages say. The answer gives per sentence its band (green, orange, red) and score, and each
    claim that is contradicted or unsupported with its best evidence (URL, passage, rationale); for a text with
    citations, whether each cited source says what its sentence says. At most 12,000 characters; the permalink
    has the rest."""
    who = _who(ctx)
    verification = await _db(
        calls.text_start, who, text=text, evidence=evidence, documents=documents or [], citations=citations
    )
    return await _answer(ctx, who, str(verification.pk), wait_seconds)


@server.tool(
    structured_output=False, annotations=ToolAnnotations(title="Check a text through its trail", read_only_hint=False)
)
async def check_trail(
    ctx: Context,
    nodes: Annotated[
        list[dict],
        Field(
            description="The texts that made the final text: each {id, text, from: [ids of the texts it was made "
            "from]} (sources have from: []); the one no other text is made from is the final text, whose claims "
            "are checked down the trail to the sources (docs/trails.md).",
            # The API's schema of a node (POST /api/trails), for the model; the trail's own checks refuse in words.
            json_schema_extra=TRAIL_NODES_SCHEMA,
        ),
    ],
    wait_seconds: WaitSeconds = 0,
) -> str:
    """Check a text through the steps that made it (sources, intermediate outputs, the final text): each claim
    of the final text is followed down the trail to the sources, and one not fully supported is traced to the
    step where it entered."""
    who = _who(ctx)
    verification = await _db(calls.trail_start, who, nodes=nodes)
    return await _answer(ctx, who, str(verification.pk), wait_seconds)


@server.tool(structured_output=False, annotations=ToolAnnotations(title="A run's result", read_only_hint=True))
async def get_result(ctx: Context, id: RunId, view: ResultView | None = None, wait_seconds: WaitSeconds = 0) -> str:
    """A run's result for a model: while it runs, its progress and what is done so far; then per sentence its
    band and score, and the contradicted or unsupported claims with their best evidence. The view applies to a
    text's run (a trail's is scored by its verdicts)."""
    return await _answer(ctx, _who(ctx), id, wait_seconds, view.model_dump() if view else None)


@server.tool(
    structured_output=False,
    annotations=ToolAnnotations(title="Cancel a run", destructive_hint=True, idempotent_hint=True),
)
async def cancel(ctx: Context, id: RunId) -> str:
    """Stop a run under way (only the client that started it may): nothing more is spent on it, and what it
    found so far stays, with status cancelled."""
    who = _who(ctx)
    verification = await _db(calls.cancel, who, id)
    return answers.to_json({"id": str(verification.pk), "status": verification.status})


@server.resource(
    answers.RESULT_URI,
    name="result",
    description="A run's whole result JSON, as GET /api/verifications/{id} (or /api/trails/{id}) serves it.",
    mime_type="application/json",
)
async def result_resource(id: str, ctx: Context) -> str:
    try:
        return answers.to_json(await _db(calls.result_json, _who(ctx), id))
    except ToolError as refused:
        raise ResourceError(str(refused)) from None


@server.resource(
    answers.REPORT_URI,
    name="report",
    description="A run's report in Markdown, as its page's download: every sentence, claim and source.",
    mime_type="text/markdown",
)
async def report_resource(id: str, ctx: Context) -> str:
    try:
        return await _db(calls.report_markdown, _who(ctx), id)
    except ToolError as refused:
        raise ResourceError(str(refused)) from None
