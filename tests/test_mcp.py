"""factsite as an MCP server (verification/mcp/), driven by the official SDK's own client over both
transports: stdio (`manage.py mcp` as a subprocess, on this test's database, its runs on the
real Celery worker of this process through Redis; and once as on a desktop, without Redis, on a
database of its own) and streamable HTTP (/mcp on the live server).
The answer's size cap is also held on a 60-claim result by a pure test."""

import contextlib
import json
import os
import sys
import threading
import uuid

import anyio
import httpx2
import pytest
import requests
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import ROOT, world_environment
from verification.access import ownership
from verification.mcp import answers
from verification.selectors.records import NOT_FOUND

CONTRADICTED = "The Eiffel Tower is made of steel."
SUPPORTED = "The Eiffel Tower is in Paris, France."
TRAIL = [
    {"id": "s", "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.", "from": []},
    {"id": "f", "text": "The Eiffel Tower is in Paris.", "from": ["s"]},
]
TOKEN = "mcp-test-token-aaaaaaaaaaaaaaaa"
OTHER_TOKEN = "mcp-test-token-bbbbbbbbbbbbbbbb"
# Held by the fake model until released: a run that stays under way.
HELD = "Zanzibar"
# Control characters (not NUL alone, which Django refuses first), and a text over MAX_TEXT_CHARS.
HOSTILE = ["Paris \x01\x02\x03\x04 is in France.", "Paris is in France. " * 1001]
TOOLS = {"check_text", "check_trail", "get_result", "cancel"}


def run_client(session):
    """A client's coroutine on an event loop of a thread of its own: in a whole test session the
    browser tests' Playwright (its sync API) keeps a loop running in the main thread, where
    anyio.run would refuse to start one."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = anyio.run(session)
        except BaseException as error:  # raised again in the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=target, name="mcp-client")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# --- the two transports, as a client connects to them


@pytest.fixture
def stdio_env(world, celery_worker, shared_database, redis_url, tmp_path):
    """What `manage.py mcp` runs with: this test's database, the fake world, and the broker the
    in-process worker consumes (so the runs it starts are worked on here)."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DATABASE_URL": shared_database,
        "DJANGO_SECRET_KEY": "mcp-test",
        "REDIS_URL": redis_url,
        "CACHE_URL": "locmemcache://",
        "LOG_LEVEL": "WARNING",
        "MCP_SITE_URL": "http://factsite.test",
        **world_environment(world),
    }


def stdio(env: dict, token: str = TOKEN) -> Client:
    command = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp"], cwd=str(ROOT), env={**env, "MCP_CLIENT_TOKEN": token}
    )
    return Client(command, read_timeout_seconds=90)


@pytest.fixture
def http_url(world, celery_worker, live_server, settings):
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    return live_server.url + "/mcp"


@contextlib.asynccontextmanager
async def http(url: str, token: str | None = TOKEN):
    headers = {"X-Client-Token": token} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=90)) as session,
        Client(streamable_http_client(url, http_client=session), read_timeout_seconds=90) as client,
    ):
        yield client


def answer_of(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_of(result) -> str:
    assert result.is_error, result.content[0].text
    return result.content[0].text


def flagged(answer: dict) -> list[dict]:
    return [claim for sentence in answer["sentences"] for claim in sentence.get("flagged_claims", [])]


def api_refusal(live_server, body: dict) -> str:
    """What POST /api/verifications answers to the same input: the words a tool error must use."""
    response = requests.post(live_server.url + "/api/verifications", json=body, timeout=30)
    assert response.status_code == 400, response.text
    return response.json()["detail"]


# --- stdio


def test_stdio_lists_the_tools_and_checks_a_text_reading_its_contradicted_claim(stdio_env, world):
    async def session():
        async with stdio(stdio_env) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            progress = []

            async def on_progress(done, total, message):
                progress.append((done, message))

            checked = await client.call_tool(
                "check_text", {"text": CONTRADICTED, "wait_seconds": 40}, progress_callback=on_progress
            )
            answer = answer_of(checked)
            report = await client.read_resource(answer["report"])
            return tools, answer, progress, report

    tools, answer, progress, report = run_client(session)

    assert set(tools) == TOOLS
    assert tools["check_text"].input_schema["required"] == ["text"]
    assert tools["check_trail"].input_schema["properties"]["nodes"]["items"]["required"] == ["id"]
    assert answer["status"] == "done"
    assert answer["permalink"] == f"http://factsite.test/v/{answer['id']}"
    (claim,) = flagged(answer)
    assert claim["outcome"] == "contradicted"
    assert "not made of steel" in claim["evidence"]["passage"]
    assert claim["evidence"]["url"].endswith("/tower-story")
    assert claim["evidence"]["rationale"]
    assert progress, "a waiting tool tells its progress"
    assert "/tower-story" in report.contents[0].text and "contradicted" in report.contents[0].text


def test_stdio_answers_at_once_then_waits_on_get_result_and_checks_a_trail(stdio_env, world):
    async def session():
        async with stdio(stdio_env) as client:
            started = answer_of(await client.call_tool("check_text", {"text": SUPPORTED}))
            waited = answer_of(await client.call_tool("get_result", {"id": started["id"], "wait_seconds": 40}))
            trail = answer_of(await client.call_tool("check_trail", {"nodes": TRAIL, "wait_seconds": 40}))
            return started, waited, trail

    started, waited, trail = run_client(session)

    assert started["status"] in ("pending", "running")
    assert "progress" in started
    assert waited["id"] == started["id"] and waited["status"] == "done"
    assert waited["score"] is not None and waited["sentences"][0]["claims"] == 1
    assert trail["kind"] == "trail" and trail["status"] == "done"
    assert trail["verdicts"] == {"fully_supported": 1}


def test_stdio_cancels_its_own_run_and_another_client_may_not(stdio_env, world):
    world.llm.held_words = (HELD,)

    async def session():
        async with stdio(stdio_env) as client, stdio(stdio_env, OTHER_TOKEN) as other:
            started = answer_of(await client.call_tool("check_text", {"text": f"{HELD} is an island."}))
            refused = error_of(await other.call_tool("cancel", {"id": started["id"]}))
            cancelled = answer_of(await client.call_tool("cancel", {"id": started["id"]}))
            again = error_of(await client.call_tool("cancel", {"id": started["id"]}))
            return refused, cancelled, again

    try:
        refused, cancelled, again = run_client(session)
    finally:
        world.llm.release()

    assert "Only the browser or API caller that started this verification can do that." in refused
    assert cancelled["status"] == "cancelled"
    assert "The run has already ended (cancelled): there is nothing to cancel." in again


def test_stdio_refuses_hostile_texts_and_runs_over_the_limit_in_the_apis_words(stdio_env, client):
    stdio_env["RUNS_PER_HOUR"] = "1"
    said = [
        client.post("/api/verifications", {"text": text}, content_type="application/json").json()["detail"]
        for text in HOSTILE
    ]

    async def session():
        async with stdio(stdio_env) as mcp:
            errors = [error_of(await mcp.call_tool("check_text", {"text": text})) for text in HOSTILE]
            answer_of(await mcp.call_tool("check_text", {"text": SUPPORTED}))
            limited = error_of(await mcp.call_tool("check_text", {"text": SUPPORTED}))
            return errors, limited

    errors, limited = run_client(session)

    for error, words in zip(errors, said, strict=True):
        assert words in error
    assert "Too many verifications from your address: 1 in the last hour (RUNS_PER_HOUR=1)." in limited


def test_stdio_without_redis_works_its_runs_itself_on_a_fresh_database(world, tmp_path):
    """A desktop assistant's default: no Redis, no tables yet; the process's own worker runs the check."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'fresh.sqlite3'}",
        "DJANGO_SECRET_KEY": "mcp-test",
        "CACHE_URL": "locmemcache://",
        "LOG_LEVEL": "WARNING",
        "CPU_PROCESSES": "0",
        **world_environment(world),
    }

    async def session():
        async with stdio(env) as client:
            return answer_of(await client.call_tool("check_text", {"text": CONTRADICTED, "wait_seconds": 50}))

    answer = run_client(session)

    assert answer["status"] == "done"
    assert [claim["outcome"] for claim in flagged(answer)] == ["contradicted"]


# --- streamable HTTP


def test_http_lists_the_tools_and_checks_a_text_reading_its_contradicted_claim(http_url, world):
    async def session():
        async with http(http_url) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            progress = []

            async def on_progress(done, total, message):
                progress.append((done, message))

            checked = await client.call_tool(
                "check_text", {"text": CONTRADICTED, "wait_seconds": 40}, progress_callback=on_progress
            )
            answer = answer_of(checked)
            result = await client.read_resource(f"factsite://v/{answer['id']}")
            without_news = {"id": answer["id"], "view": {"exclude_types": ["news"]}}
            viewed = answer_of(await client.call_tool("get_result", without_news))
            return tools, answer, progress, json.loads(result.contents[0].text), viewed

    tools, answer, progress, result, viewed = run_client(session)

    assert tools == TOOLS
    assert progress, "a waiting tool tells its progress, streamed as it waits"
    assert answer["status"] == "done"
    assert answer["permalink"] == f"{http_url.removesuffix('/mcp')}/v/{answer['id']}"
    (claim,) = flagged(answer)
    assert claim["outcome"] == "contradicted"
    assert "not made of steel" in claim["evidence"]["passage"]
    assert result["id"] == answer["id"] and result["sentences"][0]["claims"][0]["outcome"] == "contradicted"
    # The permalink's selection: without the news page that contradicts it, nothing does.
    assert viewed["permalink"].endswith("?exclude_types=news")
    assert all(claim["outcome"] != "contradicted" for claim in flagged(viewed))


def test_http_checks_a_text_against_the_documents_given(http_url, world):
    news = world.sites[1].url + "/tower-story"
    arguments = {"text": CONTRADICTED, "evidence": "documents", "documents": [news], "wait_seconds": 40}

    async def session():
        async with http(http_url) as client:
            return answer_of(await client.call_tool("check_text", arguments))

    answer = run_client(session)

    (claim,) = flagged(answer)
    assert claim["outcome"] == "contradicted" and claim["evidence"]["url"] == news
    assert world.serper.queries == [], "documents only: nothing searched"


def test_http_checks_only_what_a_text_cites_and_flags_the_citation_that_contradicts_it(http_url, world):
    news = world.sites[1].url + "/tower-story"
    text = f"{CONTRADICTED} [1]\n\nSources:\n[1] Tower story {news}"
    arguments = {"text": text, "citations": "only", "wait_seconds": 40}

    async def session():
        async with http(http_url) as client:
            answer = answer_of(await client.call_tool("check_text", arguments))
            without_cited = {"id": answer["id"], "view": {"exclude_kinds": ["cited"]}}
            return answer, answer_of(await client.call_tool("get_result", without_cited))

    answer, viewed = run_client(session)

    assert answer["status"] == "done"
    assert answer["citations"] == "1 citation: 1 contradicts it"
    # Without the sources the text cites, nothing is left to contradict it.
    assert viewed["permalink"].endswith("?exclude_kinds=cited")
    assert all(claim["outcome"] != "contradicted" for claim in flagged(viewed))
    (sentence,) = answer["sentences"]
    assert sentence["text"] == CONTRADICTED, "the marker is not part of the sentence"
    assert sentence["flagged_citations"] == [{"marker": "[1]", "url": news, "outcome": "contradicts its sentence"}]
    # What the source says instead is the claim's evidence, as for any page.
    (claim,) = sentence["flagged_claims"]
    assert claim["outcome"] == "contradicted" and claim["evidence"]["url"] == news
    assert "flagged_citations" in answer["how_to_read"]
    assert world.serper.queries == [], "cited sources only: nothing searched"


def test_http_answers_at_once_then_waits_and_checks_a_trail_whose_texts_stay_its_creators(http_url, world):
    async def session():
        async with http(http_url) as client, http(http_url, OTHER_TOKEN) as other:
            started = answer_of(await client.call_tool("check_text", {"text": SUPPORTED}))
            waited = answer_of(await client.call_tool("get_result", {"id": started["id"], "wait_seconds": 40}))
            trail = answer_of(await client.call_tool("check_trail", {"nodes": TRAIL, "wait_seconds": 40}))
            uri = f"factsite://v/{trail['id']}"
            own = json.loads((await client.read_resource(uri)).contents[0].text)
            seen = json.loads((await other.read_resource(uri)).contents[0].text)
            return started, waited, trail, own, seen

    started, waited, trail, own, seen = run_client(session)

    assert started["status"] in ("pending", "running")
    assert waited["status"] == "done" and waited["score"] is not None
    assert trail["status"] == "done" and trail["verdicts"] == {"fully_supported": 1}
    # As GET /api/trails/{id}: the source's text is its creator's; the final text is anyone's.
    assert [node["text"] for node in own["nodes"]] == [node["text"] for node in TRAIL]
    assert [node["text"] for node in seen["nodes"]] == [None, TRAIL[1]["text"]]


def test_http_cancels_the_callers_run_and_refuses_another_clients(http_url, world):
    world.llm.held_words = (HELD,)

    async def session():
        async with http(http_url) as client, http(http_url, OTHER_TOKEN) as other:
            started = answer_of(await client.call_tool("check_text", {"text": f"{HELD} is an island."}))
            refused = error_of(await other.call_tool("cancel", {"id": started["id"]}))
            cancelled = answer_of(await client.call_tool("cancel", {"id": started["id"]}))
            return refused, cancelled

    try:
        refused, cancelled = run_client(session)
    finally:
        world.llm.release()

    assert "Only the browser or API caller that started this verification can do that." in refused
    assert cancelled["status"] == "cancelled"


def test_http_refuses_hostile_texts_and_runs_over_the_limit_in_the_apis_words(http_url, live_server, settings):
    settings.RUNS_PER_HOUR = 1
    said = [api_refusal(live_server, {"text": text}) for text in HOSTILE]
    cyclic = [{"id": "a", "text": "Paris is in France.", "from": ["b"]}, {"id": "b", "text": "Lyon.", "from": ["a"]}]
    trail_said = requests.post(live_server.url + "/api/trails", json={"trail": {"nodes": cyclic}}, timeout=30)
    assert trail_said.status_code == 400

    async def session():
        async with http(http_url) as client:
            errors = [error_of(await client.call_tool("check_text", {"text": text})) for text in HOSTILE]
            errors.append(error_of(await client.call_tool("check_trail", {"nodes": cyclic})))
            answer_of(await client.call_tool("check_text", {"text": SUPPORTED}))
            limited = error_of(await client.call_tool("check_text", {"text": SUPPORTED}))
            unknown = error_of(await client.call_tool("get_result", {"id": str(uuid.uuid4())}))
            not_an_id = error_of(await client.call_tool("cancel", {"id": "../../etc"}))
            return errors, limited, unknown, not_an_id

    errors, limited, unknown, not_an_id = run_client(session)

    for error, words in zip(errors, [*said, trail_said.json()["detail"]], strict=True):
        assert words in error
    assert "Too many verifications from your address: 1 in the last hour (RUNS_PER_HOUR=1)." in limited
    assert NOT_FOUND in unknown
    assert "is not a run's id" in not_an_id


def test_http_refuses_a_malformed_client_token_another_sites_page_and_a_stream_request(http_url):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}

    bad_token = requests.post(http_url, json=message, headers={**accept, "X-Client-Token": "short"}, timeout=30)
    elsewhere = requests.post(http_url, json=message, headers={**accept, "Origin": "https://evil.example"}, timeout=30)
    form = requests.post(http_url, data="x=1", headers=accept, timeout=30)
    stream = requests.get(http_url, headers={"Accept": "text/event-stream"}, timeout=30)
    tokenless = requests.post(http_url, json=message, headers=accept, timeout=30)

    assert bad_token.status_code == 400 and "X-Client-Token must be" in bad_token.json()["detail"]
    assert elsewhere.status_code == 403
    assert form.status_code == 415 and "application/json" in form.json()["detail"]
    assert stream.status_code == 405 and stream.headers["Allow"] == "POST", "no stream held open for nothing"
    # As the API's 201: a caller that sent no token is given one to keep.
    assert tokenless.status_code == 200 and ownership.TOKEN_PATTERN.fullmatch(tokenless.headers["X-Client-Token"])


# --- the answer's size cap


def test_http_answers_a_sixty_claim_text_within_its_cap_flagged_sentences_first(http_url, world):
    text = " ".join(f"The Eiffel Tower is made of steel in year {1900 + n}." for n in range(60))

    async def session():
        async with http(http_url) as client:
            started = answer_of(await client.call_tool("check_text", {"text": text}))
            for _ in range(6):
                result = await client.call_tool("get_result", {"id": started["id"], "wait_seconds": 50})
                if answer_of(result)["status"] == "done":
                    return result.content[0].text
            pytest.fail("the run did not end in 5 minutes")

    text_answer = run_client(session)
    answer = json.loads(text_answer)

    assert len(text_answer) <= answers.MAX_ANSWER_CHARS
    assert sum(sentence["claims"] for sentence in answer["sentences"]) + answer["sentences_left_out"] >= 60
    assert all(sentence.get("flagged_claims") for sentence in answer["sentences"])
    assert answer["permalink"] in answer["rest"]


def test_the_answer_for_a_sixty_claim_text_stays_under_its_cap_and_points_to_the_rest():
    evidence = {
        "id": 7,
        "url": "https://example.org/page",
        "title": "A page " * 30,
        "verdict": "not_supported",
        "passage": "A long passage that says otherwise. " * 60,
        "rationale": "The passage says the opposite. " * 30,
        "included": True,
    }
    claim = {"text": "A claim of some length " * 8, "outcome": "contradicted", "note": "1 page contradicts it"}
    sentences = [
        {
            "index": index,
            "text": "A sentence of some length that says a thing. " * 10,
            "outcome": "contradicted",
            "band": "red",
            "score": 0.0,
            "claims": [{**claim, "error": "", "evidence": [evidence] * 5}],
        }
        for index in range(60)
    ]
    result = {"id": "x", "status": "done", "error": "", "score": 0.0, "band": "red", "sentences": sentences}

    text = answers.text_answer(result, permalink="https://factsite.test/v/x")

    assert len(text) <= answers.MAX_ANSWER_CHARS
    answer = json.loads(text)
    assert 0 < len(answer["sentences"]) < 60
    assert answer["sentences_left_out"] == 60 - len(answer["sentences"])
    assert "https://factsite.test/v/x" in answer["rest"]
