"""The production image and docker-compose.yml, read as Docker reads them (no engine here): the
compose file through Docker Compose's own parser (`docker compose config`), the build context
through the Docker SDK's .dockerignore rules. tests/test_image.py runs the processes they start."""

import re

import pytest

from tests.deployment import (
    build_context,
    clean_checkout,
    compose_config,
    compose_services,
    dockerfile,
    image_environment,
)
from tests.processes import ROOT

# Made up here: they must reach the services from the environment, and nothing else may.
SECRETS = {
    "POSTGRES_PASSWORD": "pg-e5a1f0c9d2",
    "DJANGO_SECRET_KEY": "key-7c1b9e0d4f3a2b8c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0",
}
APP = ("migrate", "web", "worker", "beat")
LONG_RUNNING = ("web", "worker", "beat", "redis", "cache", "postgres")


@pytest.fixture(scope="module")
def services():
    return compose_services(ROOT, **SECRETS)


def test_docker_compose_refuses_to_start_without_the_database_password_or_the_secret_key():
    for missing in SECRETS:
        given = {name: value for name, value in SECRETS.items() if name != missing}

        result = compose_config(ROOT, **given)

        assert result.returncode != 0
        assert f"required variable {missing} is missing a value" in result.stderr


def test_a_copied_env_example_with_a_secret_key_still_needs_a_database_password(tmp_path):
    checkout = clean_checkout(tmp_path / "checkout")
    example = (checkout / ".env.example").read_text()
    key = SECRETS["DJANGO_SECRET_KEY"]
    (checkout / ".env").write_text(re.sub(r"^DJANGO_SECRET_KEY=$", f"DJANGO_SECRET_KEY={key}", example, flags=re.M))

    result = compose_config(checkout)

    assert result.returncode != 0
    assert "required variable POSTGRES_PASSWORD is missing a value" in result.stderr


def test_passwords_and_keys_come_only_from_the_environment(services):
    secret_names = re.compile(r"PASSWORD|SECRET|_KEY$|TOKEN")
    for name, service in services.items():
        for variable, value in (service.get("environment") or {}).items():
            if secret_names.search(variable):
                assert value in SECRETS.values(), f"{name}: {variable} is written in the compose file"
    database = services["web"]["environment"]["DATABASE_URL"]
    assert re.fullmatch(rf"postgres://factsite:{SECRETS['POSTGRES_PASSWORD']}@postgres:5432/factsite", database)
    text = (ROOT / "docker-compose.yml").read_text() + (ROOT / "Dockerfile").read_text()
    assert "factsite@postgres" not in text  # no password in the database URL itself


def test_only_the_web_port_is_published_and_on_loopback(services):
    published = {name: service["ports"] for name, service in services.items() if service.get("ports")}

    assert list(published) == ["web"]
    assert [(port["host_ip"], port["published"], port["target"]) for port in published["web"]] == [
        ("127.0.0.1", "8000", 8000)
    ]


def test_every_long_running_service_restarts_unless_stopped_and_has_a_healthcheck(services):
    for name in LONG_RUNNING:
        assert services[name]["restart"] == "unless-stopped", name
        assert services[name]["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name
    for name in ("web", "worker", "beat"):
        assert services[name]["healthcheck"]["test"][1:4] == ["python", "-m", "verification.worker.health"], name


def test_migrations_run_once_before_web_worker_and_beat_start(services):
    migrating = [name for name, service in services.items() if "migrate" in (service.get("command") or [])]

    assert migrating == ["migrate"]
    assert services["migrate"]["restart"] == "no"  # a one-shot: done, it stays done
    assert services["migrate"]["healthcheck"] == {"disable": True}  # the image's is the web server's
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--no-input"]
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully", name


def test_the_app_services_run_the_one_image(services):
    for name in APP:
        assert services[name]["image"] == "factsite", name
        assert services[name]["build"]["context"] == str(ROOT), name


def test_the_cache_is_a_capped_evicting_redis_server_of_its_own_and_the_broker_never_evicts(services):
    environment = services["web"]["environment"]
    assert environment["REDIS_URL"] == "redis://redis:6379/0"
    assert environment["CACHE_URL"] == "redis://cache:6379/0"

    def option(service: str, name: str) -> str:
        command = services[service]["command"]
        return command[command.index(f"--{name}") + 1]

    assert option("cache", "maxmemory-policy") == "allkeys-lru"
    assert option("cache", "maxmemory") == "256mb"
    assert option("redis", "maxmemory-policy") == "noeviction"


def test_every_variable_the_compose_file_reads_is_in_env_example():
    variables = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", (ROOT / "docker-compose.yml").read_text()))
    listed = set(re.findall(r"^#? ?([A-Z_][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(), re.MULTILINE))

    assert variables and variables <= listed, variables - listed


# --- the image


def test_the_image_runs_as_an_unprivileged_user_after_building_the_model_export_as_root():
    instructions = dockerfile()
    users = [index for index, (word, _) in enumerate(instructions) if word == "USER"]
    assert users, "the image runs as root"
    user = instructions[users[-1]][1]
    assert user.split(":")[0] not in ("root", "0")
    runs = [(index, args) for index, (word, args) in enumerate(instructions) if word == "RUN"]
    export = [index for index, args in runs if "python -m verification.clients.embeddings" in args]
    assert export and export[0] < users[-1]  # built by root into /app, where the user cannot write
    assert all("embeddings ||" not in args for _, args in runs)  # a failed export fails the build
    assert image_environment()["EMBEDDING_CACHE_DIR"] == "/app/var/models"


def test_the_image_reads_no_env_file():
    assert image_environment()["DJANGO_READ_DOT_ENV_FILE"] == "0"


def test_the_build_context_holds_the_app_and_nothing_of_the_build_machine(tmp_path):
    checkout = clean_checkout(tmp_path / "checkout")
    tracked = {str(path.relative_to(checkout)) for path in checkout.rglob("*") if path.is_file()}
    # What a developer's working copy has besides the tracked files.
    for name in (
        ".env",
        "factsite/.env",
        ".env.production",
        ".venv/bin/python",
        "var/secret_key",
        "var/factsite.sqlite3",
        "var/models/model.onnx",
        ".git/config",
        "verification/__pycache__/models.cpython-311.pyc",
        ".pytest_cache/v/cache/lastfailed",
        ".ruff_cache/CACHEDIR.TAG",
        "test-results/trace.zip",
        "out.json",
        "factsite.egg-info/PKG-INFO",
    ):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text("not for the image")

    context = build_context(checkout)

    top_level = {name for name in context if "/" not in name}
    # The SDK always sends the Dockerfile and .dockerignore (the engine reads them); they hold nothing secret.
    assert top_level == {"manage.py", "pyproject.toml", "README.md", "Dockerfile", ".dockerignore"}
    assert {name.split("/")[0] for name in context if "/" in name} == {
        "factsite",
        "verification",
        "templates",
        "static",
    }
    needed = {name for name in tracked if name.startswith(("factsite/", "verification/", "templates/", "static/"))}
    assert needed and needed <= context
    assert context <= tracked
