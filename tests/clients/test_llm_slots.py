"""LLM_CONCURRENCY: how many requests reach a model's server at once, across threads (and, with
Redis, across processes), and the order waiting ones go in: against FakeLLM on 127.0.0.1, which
counts the requests it holds at once and records the order they arrive in."""

import threading
import time

import pytest

from tests.fakes import FakeLLM
from tests.processes import wait_until
from verification.clients import llm_slots
from verification.clients.llm import LLMClient

SYSTEM = "You classify websites by their host name for a fact-checking tool."
SCHEMA = {
    "type": "object",
    "properties": {"source_type": {"type": "string"}},
    "required": ["source_type"],
    "additionalProperties": False,
}


@pytest.fixture
def llm():
    # Every answer takes a moment, so requests sent together overlap at the server.
    server = FakeLLM(first_token_s=0.05).start()
    yield server
    server.release()
    server.stop()


@pytest.fixture(autouse=True)
def fresh_slots():
    llm_slots._shared.clear()
    yield
    llm_slots._shared.clear()


def client(llm: FakeLLM, *, concurrency: int = 0, redis_url: str = "", priority: int = 0) -> LLMClient:
    return LLMClient(
        model="test-model",
        base_url=llm.url + "/v1",
        api_key="k",
        timeout=30,
        max_retries=0,
        concurrency=concurrency,
        redis_url=redis_url,
        priority=priority,
    )


def ask(llm_client: LLMClient, host: str) -> str:
    return llm_client.complete(
        system=SYSTEM, user=f"Host: {host}", schema_name="source_type", schema=SCHEMA, parse=lambda a: a
    )


def in_threads(calls) -> list[threading.Thread]:
    threads = [threading.Thread(target=call) for call in calls]
    for thread in threads:
        thread.start()
    return threads


def test_it_sends_one_request_at_a_time_across_threads_with_concurrency_1(llm):
    threads = in_threads(lambda n=n: ask(client(llm, concurrency=1), f"site{n}.example") for n in range(6))
    for thread in threads:
        thread.join(30)

    assert len(llm.requests) == 6
    assert llm.most_at_once == 1


def test_it_sends_requests_together_without_a_limit(llm):
    threads = in_threads(lambda n=n: ask(client(llm), f"site{n}.example") for n in range(6))
    for thread in threads:
        thread.join(30)

    assert llm.most_at_once > 1


def test_processes_sharing_redis_send_one_request_at_a_time(llm, redis_url):
    # Each process has its own slots object; two here stand for two worker processes.
    first = llm_slots.RedisSlots(1, redis_url, "test-shared-" + llm.url)
    second = llm_slots.RedisSlots(1, redis_url, "test-shared-" + llm.url)
    clients = []
    for n in range(6):
        c = client(llm)
        c._slots = first if n % 2 else second
        clients.append(c)
    threads = in_threads(lambda c=c, n=n: ask(c, f"site{n}.example") for n, c in enumerate(clients))
    for thread in threads:
        thread.join(30)

    assert len(llm.requests) == 6
    assert llm.most_at_once == 1


@pytest.mark.parametrize("shared", ["process", "redis"])
def test_waiting_requests_go_by_priority_then_arrival(shared, request):
    llm = FakeLLM(held_words=("held.example",)).start()
    redis_url = request.getfixturevalue("redis_url") if shared == "redis" else ""
    try:
        holder = in_threads([lambda: ask(client(llm, concurrency=1, redis_url=redis_url), "held.example")])
        wait_until(lambda: llm.held == 1, 10, "the first request held at the server")
        order = [(3, "third"), (1, "first-a"), (2, "second"), (1, "first-b")]
        slots = llm_slots.slots_for(llm.url + "/v1", 1, redis_url)
        threads = []
        for waiting, (priority, name) in enumerate(order, start=1):
            threads += in_threads(
                [lambda p=priority, n=name: ask(client(llm, concurrency=1, redis_url=redis_url, priority=p), n)]
            )
            wait_until(lambda w=waiting: slots.waiting() == w, 10, "the request waiting its turn")
        llm.release()
        for thread in holder + threads:
            thread.join(30)

        hosts = [r["messages"][-1]["content"].removeprefix("Host: ") for r in llm.requests]
        assert hosts == ["held.example", "first-a", "first-b", "second", "third"]
    finally:
        llm.release()
        llm.stop()


def test_the_calls_made_in_a_turn_keep_its_slot_so_no_other_request_comes_between_them(llm):
    holder, other = client(llm, concurrency=1), client(llm, concurrency=1)
    slots = llm_slots.slots_for(llm.url + "/v1", 1)
    with holder.turn():
        waiting = in_threads([lambda: ask(other, "other.example")])
        wait_until(lambda: slots.waiting() == 1, 10, "the other request waiting for the slot")
        ask(holder, "first.example")
        ask(holder, "second.example")  # the other request is still waiting: the turn holds the slot
        assert slots.waiting() == 1
    waiting[0].join(30)

    hosts = [r["messages"][-1]["content"].removeprefix("Host: ") for r in llm.requests]
    assert hosts == ["first.example", "second.example", "other.example"]


def test_a_turn_without_a_limit_holds_nothing(llm):
    free = client(llm)
    with free.turn():
        threads = in_threads(lambda n=n: ask(client(llm), f"site{n}.example") for n in range(2))
        for thread in threads:
            thread.join(30)

    assert not free.limited and len(llm.requests) == 2


def test_a_stream_holds_its_slot_until_its_last_token():
    # decompose streams its answer: the server is busy until it has written it all.
    server = FakeLLM(first_token_s=0.05, tokens_per_s=400).start()
    user = "S1: The Eiffel Tower is in Paris.\nTarget sentence: S1"

    def streamed():
        client(server, concurrency=1).complete(
            system="Split each target sentence into atomic claims.",
            user=user,
            schema_name="claims",
            schema=None,
            parse=lambda answer: answer,
            on_text=lambda *_: None,
        )

    try:
        threads = in_threads([streamed, streamed, lambda: ask(client(server, concurrency=1), "site.example")])
        for thread in threads:
            thread.join(30)
        assert [bool(r.get("stream")) for r in server.requests].count(True) == 2
        assert server.most_at_once == 1
    finally:
        server.stop()


def test_fake_llm_with_a_prefix_cache_reads_only_what_follows_the_shared_prefix():
    server = FakeLLM(prefix_cache=True).start()
    try:
        first, second = client(server), client(server)
        ask(first, "first.example")
        ask(second, "second.example")
        prompts = [" ".join(m["content"] for m in r["messages"]) for r in server.requests]
        read = [server.read[id(r)] for r in server.requests]
    finally:
        server.stop()

    shared = len(SYSTEM + " Host: ")
    assert prompts[1][:shared] == prompts[0][:shared]
    assert read == [len(prompts[0]) // 4, (len(prompts[1]) - shared) // 4]


def test_fake_llm_without_a_prefix_cache_reads_every_prompt_whole():
    server = FakeLLM().start()
    try:
        ask(client(server), "first.example")
        ask(client(server), "second.example")
        prompts = [" ".join(m["content"] for m in r["messages"]) for r in server.requests]
        assert [server.read[id(r)] for r in server.requests] == [len(p) // 4 for p in prompts]
    finally:
        server.stop()


def test_fake_llm_with_one_slot_answers_one_request_at_a_time():
    server = FakeLLM(first_token_s=0.05, slots=1).start()
    try:
        threads = in_threads(lambda n=n: ask(client(server), f"site{n}.example") for n in range(4))
        for thread in threads:
            thread.join(30)
        # All four arrived together; the model worked on one at a time.
        assert server.most_at_once > 1
        assert server.most_working == 1
        # The server notes an answer as finished after its last byte is sent: the client may
        # have read it a moment before.
        deadline = time.monotonic() + 5
        while len(server.finished) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(server.finished) == 4
    finally:
        server.stop()
