"""`manage.py check_llm`: a table of what each configured model's server takes, against the fake
model on 127.0.0.1; what it learns is what the runs then use."""

import io

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import free_port
from tests.fakes import FakeLLM
from tests.llm_servers import PROFILES
from verification.clients import providers


@pytest.fixture
def fake_model(settings):
    server = FakeLLM().start()
    settings.OPENAI_API_KEY = "test-openai-key"
    settings.OPENAI_BASE_URL = server.url + "/v1"
    settings.LLM_MODELS = "fake-model"
    yield server
    server.stop()


def check(**options) -> str:
    out = io.StringIO()
    call_command("check_llm", stdout=out, **options)
    return out.getvalue()


def rows(table: str) -> dict[str, str]:
    return {line.split("  ", 2)[1].strip(): line.split("  ", 2)[2].strip() for line in table.splitlines()[1:-1]}


def test_it_tells_what_a_server_that_takes_everything_takes(fake_model):
    table = rows(check())

    assert table["reachable"] == "yes" and table["model known"] == "yes"
    assert table["temperature 0"] == "sent" and table["output format"] == "json schema"
    assert table["streaming usage"] == "yes" and table["logprobs"] == "yes"
    assert table["thinking"] == "does not think aloud" and table["learned"] == "nothing refused"
    assert table["speed"].endswith("tokens/s")
    assert {"check"} == set(fake_model.calls)


def test_what_it_learns_from_a_refusal_is_kept_for_the_runs(fake_model):
    fake_model.structured = False  # 400 to any response_format, as servers without it answer

    table = rows(check())

    assert table["output format"] == "text" and "json_schema output refused" in table["learned"]
    assert providers.llm_client("fake-model").capabilities.output_format == "text"
    refused = sum(1 for r in fake_model.requests if r.get("response_format"))
    assert refused == 1


def test_a_model_the_server_does_not_list_is_named(fake_model, settings):
    settings.LLM_MODELS = "gpt-5-mini"

    with pytest.raises(CommandError, match="Not usable: gpt-5-mini"):
        check()


def test_a_server_that_cannot_be_reached_is_named(settings):
    settings.OPENAI_BASE_URL = f"http://127.0.0.1:{free_port()}/v1"
    settings.LLM_MODELS = "fake-model"
    out = io.StringIO()

    with pytest.raises(CommandError):
        call_command("check_llm", stdout=out)

    assert "cannot reach the server" in out.getvalue() and "OPENAI_BASE_URL" in out.getvalue()


def test_the_command_lines_start_names_a_model_the_server_does_not_list(fake_model, settings):
    settings.LLM_MODELS = "gpt-5-mini"

    problem = providers.llm_server_problem(None)

    assert "does not list the model gpt-5-mini (it lists fake-model)" in problem and "LLM_MODELS" in problem
    assert not fake_model.requests  # nothing asked of the model itself


def test_the_command_lines_start_takes_a_listed_model(fake_model):
    assert providers.llm_server_problem(None) == ""


def test_readyz_says_a_model_check_llm_found_unusable_is_down(fake_model, settings, client):
    settings.LLM_MODELS = "gpt-5-mini"
    assert "models" not in client.get("/readyz").json()["checks"]  # nothing checked yet

    with pytest.raises(CommandError):
        check()
    down = client.get("/readyz")

    assert down.status_code == 503 and down.json()["checks"]["models"] == "down"
    settings.LLM_MODELS = "fake-model"
    check()
    assert client.get("/readyz").json()["checks"]["models"] == "ok"


# What check_llm must find at each server (../shared/PROVIDERS.md): temperature 0 sent, output
# format, logprobs, the reasoning effort sent, and where the thinking goes.
FOUND = {
    "openai-gpt-4o-mini": (True, "json schema", True, "not sent", "does not think"),
    "openai-gpt-5-mini": (False, "json schema", False, "minimal", "hidden"),
    "openai-o4-mini": (False, "json schema", False, "low", "hidden"),
    "openai-gpt-5.1": (True, "json schema", True, "none", "hidden"),
    "azure-v1": (False, "json schema", False, "minimal", "hidden"),
    "deepseek-chat": (True, "json object", True, "not sent", "does not think"),
    "deepseek-reasoner": (True, "json object", False, "not sent", "a field of its own"),
    "gemini": (True, "json schema", False, "low", "hidden"),
    "anthropic": (True, "text", False, "not sent", "does not think"),
    "groq-qwen3": (True, "json object", False, "none", "inside the answer (<think>"),
    "openrouter": (True, "json schema", True, "none", "a field of its own"),
    "mistral": (True, "json schema", False, "not sent", "does not think"),
    "ollama-qwen3": (True, "json schema", False, "none", "a field of its own"),
    "ollama-qwen3-old": (True, "json schema", False, "none", "inside the answer (<think>"),
    "ollama-deepseek-r1": (True, "json schema", False, "none", "its opening tag in the prompt"),
    "llamacpp": (True, "json schema", True, "none", "a field of its own"),
    "llamacpp-raw": (True, "json schema", True, "none", "inside the answer (<think>"),
    "llamacpp-runaway": (True, "json schema", True, "none", "does not think"),
    "vllm": (True, "json schema", True, "none", "a field of its own"),
    "vllm-raw": (True, "json schema", True, "none", "inside the answer (<think>"),
    "lmstudio": (True, "json schema", False, "none", "inside the answer (<think>"),
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_it_tells_what_each_real_server_takes(settings, name):
    profile = PROFILES[name]
    server = FakeLLM(profile=profile).start()
    try:
        settings.OPENAI_API_KEY = "test-openai-key"
        route = "/openai/v1" if profile.path_prefix == "/openai/v1/" else "/v1"
        settings.OPENAI_BASE_URL = server.url + route
        settings.LLM_MODELS = profile.model

        table = rows(check())
    finally:
        server.stop()

    temperature, output, logprobs, effort, thinking = FOUND[name]
    assert table["model known"] == "yes"
    assert table["temperature 0"] == ("sent" if temperature else "refused: the model's default")
    assert table["output format"] == output and table["reasoning effort"] == effort
    assert table["logprobs"].startswith("yes" if logprobs else "no")
    assert thinking in table["thinking"]
    assert all(count <= 1 for count in server.refused.values()), server.refusals
    if profile.context_tokens and profile.over_context != "cut":  # reported by llama.cpp and vLLM
        assert table["context"] == f"{profile.context_tokens:,} tokens"
    assert providers.llm_client(profile.model).capabilities.output_format.replace("_", " ") == output
