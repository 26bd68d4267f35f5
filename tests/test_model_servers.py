"""The model servers people use (issue 37), each imitated by a profile of the fake model
(tests/llm_servers.py, from ../shared/PROVIDERS.md): a web check, a trail and quick mode on the
real worker end with every item judged and the same verdicts as on a server that takes
everything, with no thinking in what the reader sees, and at most one refused request per
lesson (the client learns what the server takes once, kept per server and model)."""

import json

import pytest

from tests.fakes import FakeLLM
from tests.llm_servers import PROFILES
from tests.test_engine import KNOWS, run, wait_for
from tests.test_trails import start, trail
from tests.test_trails import wait_for as wait_for_trail

pytestmark = pytest.mark.django_db(transaction=True)

PLAIN = "openai-gpt-4o-mini"
# The legacy Azure route cannot be used with the plain client: its own test below.
SERVERS = sorted(name for name in PROFILES if name != "azure-legacy")
TEXT = (
    "The Eiffel Tower is in Paris, France. It was completed in 1889. It is made of steel. "
    "It is 330 metres tall.\n\nI hope this helps!"
)
# What the profiles' thinking writes (tests/llm_servers.py: thinking, draft): never shown.
THOUGHT = ("Probably", "let me re-check", "Let me work through", "<think", "</think", "not sure yet")
_reference: dict[str, object] = {}


def use(world, settings, name: str) -> FakeLLM:
    """The world's model server replaced by one with `name`'s profile."""
    world.llm.stop()
    profile = PROFILES[name]
    world.llm = FakeLLM(profile=profile, knows=KNOWS).start()
    route = "/openai/v1" if profile.path_prefix == "/openai/v1/" else "/v1"
    settings.OPENAI_BASE_URL = world.llm.url + route
    settings.LLM_MODELS = profile.model
    # A local server's context is said where it is small (docs/configuration.md): Ollama cuts
    # a longer prompt without a word.
    if profile.over_context == "cut":
        settings.LLM_MODELS = f"{profile.model};context={profile.context_tokens}"
    return world.llm


def web_verdicts(result: dict) -> list:
    return [
        (
            s["text"],
            [
                (c["text"], sorted((e["title"], e["source_type"], e["verdict"]) for e in c["evidence"]))
                for c in s["claims"]
            ],
        )
        for s in result["sentences"]
    ]


def trail_verdicts(result: dict) -> list:
    return sorted((c["text"], c["verdict"], json.dumps(c.get("entered"), sort_keys=True)) for c in result["claims"])


def reference(kind: str, client, world, settings) -> object:
    """The plain server's verdicts for `kind`, run once per test session."""
    if kind not in _reference:
        use(world, settings, PLAIN)
        _reference[kind] = RUNS[kind](client)
    return _reference[kind]


def web_check(client) -> list:
    result = wait_for(client, run(client, text=TEXT, retrieval_mode="sparse"), timeout=120)
    assert result["status"] == "done", result["error"]
    return web_verdicts(result), result


def quick_check(client) -> list:
    result = wait_for(client, run(client, text=TEXT, retrieval_mode="sparse", quick=True), timeout=120)
    assert result["status"] == "done", result["error"]
    return web_verdicts(result), result


def trail_check(client) -> list:
    result = wait_for_trail(client, start(client, {"trail": trail()}), timeout=120)
    assert result["status"] == "done", result["error"]
    return trail_verdicts(result), result


RUNS = {"web": web_check, "quick": quick_check, "trail": trail_check}


def assert_no_thinking_shown(result: dict) -> None:
    shown = json.dumps(result)
    assert not [word for word in THOUGHT if word in shown], [word for word in THOUGHT if word in shown]


def assert_each_lesson_paid_once(server: FakeLLM) -> None:
    assert all(count <= 1 for count in server.refused.values()), server.refusals


@pytest.mark.parametrize("name", SERVERS)
def test_a_web_check_gives_the_plain_servers_verdicts(client, world, celery_worker, settings, name):
    expected, _ = reference("web", client, world, settings)
    server = use(world, settings, name)

    verdicts, result = web_check(client)

    assert verdicts == expected
    judged = [e for s in result["sentences"] for c in s["claims"] for e in c["evidence"]]
    assert judged and all(e["verdict"] for e in judged), [e for e in judged if not e["verdict"]]
    assert_no_thinking_shown(result)
    assert_each_lesson_paid_once(server)
    if server.reasoning_tokens:
        assert result["usage"]["reasoning_tokens"] > 0


@pytest.mark.parametrize("name", SERVERS)
def test_a_trail_gives_the_plain_servers_verdicts(client, world, celery_worker, settings, name):
    expected, _ = reference("trail", client, world, settings)
    server = use(world, settings, name)

    verdicts, result = trail_check(client)

    assert verdicts == expected
    assert_no_thinking_shown(result)
    assert_each_lesson_paid_once(server)


@pytest.mark.parametrize("name", SERVERS)
def test_quick_mode_saves_searches_only_where_the_server_gives_logprobs(client, world, celery_worker, settings, name):
    expected_quick, _ = reference("quick", client, world, settings)
    expected_web, _ = reference("web", client, world, settings)
    server = use(world, settings, name)

    verdicts, result = quick_check(client)

    assert_no_thinking_shown(result)
    assert_each_lesson_paid_once(server)
    if result["quick"]["logprobs"]:
        assert verdicts == expected_quick and result["quick"]["skipped_claims"] >= 1
    else:
        assert verdicts == expected_web and result["quick"]["skipped_claims"] == 0
        assert "gave no token probabilities (logprobs)" in result["quick"]["note"]


def test_azures_legacy_route_fails_the_run_with_what_to_set(client, world, celery_worker, settings):
    use(world, settings, "azure-legacy")
    settings.OPENAI_BASE_URL = world.llm.url + "/openai/deployments/my-deployment"

    result = wait_for(client, run(client, text=TEXT, retrieval_mode="sparse"), timeout=120)

    reasons = json.dumps(result)
    assert "does not know the model gpt-4o-mini (HTTP 404)" in reasons and "OPENAI_BASE_URL" in reasons


def test_a_prompt_ollama_cuts_fails_its_items_naming_the_servers_context(client, world, celery_worker, settings):
    server = use(world, settings, "ollama-qwen3")
    settings.LLM_MODELS = server.profile.model  # no context said: factsite cannot size its prompts
    server.profile = type(server.profile)(**{**server.profile.__dict__, "context_tokens": 300})

    long_text = " ".join([TEXT.split("\n")[0]] * 4)
    result = wait_for(client, run(client, text=long_text, retrieval_mode="sparse"), timeout=120)

    reasons = json.dumps(result)
    assert "cut the prompt without an error" in reasons and "LLM_CONTEXT_TOKENS" in reasons
    assert server.prompt_tokens_cut > 0


def test_a_model_that_never_stops_is_capped_and_read_only_to_its_answers_end(client, world, celery_worker, settings):
    server = use(world, settings, "llamacpp-runaway")  # never stops on its own

    _, result = web_check(client)

    assert all(request.get("max_completion_tokens") or request.get("max_tokens") for request in server.sent)
    # One call a step, as from the plain server: no answer asked again for the filler after it.
    assert set(server.calls.values()) == {1}, server.calls
    # It wrote no more than its caps allowed (4,096 tokens a call without them).
    caps = sum(request.get("max_completion_tokens") or request.get("max_tokens") for request in server.sent)
    assert 0 < result["usage"]["completion_tokens"] <= caps < 4096
