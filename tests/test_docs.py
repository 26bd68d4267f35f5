"""The docs, kept true by reading them: every environment variable the code reads has one entry in
docs/configuration.md, every relative link between README.md, docs/ and bench/results/ resolves
(to a file, and to a heading where it names one), and README.md stays a front door."""

import ast
import re
from collections import Counter
from pathlib import Path

from tests.conftest import ROOT

CONFIGURATION = ROOT / "docs" / "configuration.md"
README = ROOT / "README.md"
# The two commands of README's Quick start, exactly as people copy them.
QUICK_START = (
    "bash scripts/run.sh     # sets up .venv, migrates SQLite, starts the app at http://127.0.0.1:8000",
    "bash scripts/test.sh    # sets up what the tests need (redis-server, PostgreSQL via apt when root)"
    " and runs them all",
)
README_MAX_LINES = 250

NAME = re.compile(r"[A-Z][A-Z0-9_]*")


# --- what the code reads


def _is_os_environ(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def _reads_environment(call: ast.Call) -> bool:
    """env("X"), env.<type>("X") (django-environ), os.environ.get/setdefault("X"), os.getenv("X")."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "env"
    if not isinstance(func, ast.Attribute):
        return False
    if isinstance(func.value, ast.Name) and func.value.id == "env":
        return True
    if isinstance(func.value, ast.Name) and func.value.id == "os":
        return func.attr == "getenv"
    return _is_os_environ(func.value) and func.attr in ("get", "setdefault", "pop")


def python_reads(path: Path) -> set[str]:
    """The variables a module reads by name, directly or through a helper of its own that hands its
    parameter on to one of the reads above (settings' `_domain_list("BLOCKED_DOMAINS")`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    helpers: dict[str, int] = {}  # function name -> index of the parameter it reads
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        parameters = [argument.arg for argument in function.args.args]
        for call in ast.walk(function):
            if isinstance(call, ast.Call) and _reads_environment(call) and call.args:
                first = call.args[0]
                if isinstance(first, ast.Name) and first.id in parameters:
                    helpers[function.name] = parameters.index(first.id)
    for node in ast.walk(tree):
        argument = None
        if isinstance(node, ast.Call) and node.args:
            if _reads_environment(node):
                argument = node.args[0]
            elif isinstance(node.func, ast.Name) and node.func.id in helpers:
                index = helpers[node.func.id]
                argument = node.args[index] if index < len(node.args) else None
        elif isinstance(node, ast.Subscript) and _is_os_environ(node.value):
            argument = node.slice  # os.environ["X"]
        elif isinstance(node, ast.Compare) and any(_is_os_environ(c) for c in node.comparators):
            argument = node.left  # "X" in os.environ
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str) and NAME.fullmatch(argument.value):
            names.add(argument.value)
    return names


# The shell's and the system's own variables, which no script of ours offers as a setting.
SHELL_OWN = {"PATH", "HOME", "PWD", "OLDPWD", "IFS", "UID", "EUID", "PPID", "USER", "SHELL", "TMPDIR", "LINENO"}


def shell_reads(path: Path) -> set[str]:
    """Upper-case variables a script reads (`$NAME`, `${NAME:-default}`): our scripts name their
    own variables in lower case, so these come from the environment, unless the script assigns one
    itself from something else first (`NAME=value`, not `NAME=${NAME:-default}`)."""
    text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
    read = set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", text))
    local = {
        name
        for name, value in re.findall(r"^\s*(?:export\s+|local\s+)?([A-Z][A-Z0-9_]*)=(\S*)", text, re.MULTILINE)
        if f"${{{name}" not in value and f"${name}" not in value
    }
    return read - local - SHELL_OWN


def code_reads() -> dict[str, set[str]]:
    """Each variable the code reads, with where."""
    sources = [*sorted((ROOT / "factsite").rglob("*.py")), *sorted((ROOT / "verification").rglob("*.py"))]
    sources.append(ROOT / "manage.py")
    found: dict[str, set[str]] = {}
    for path in sources:
        for name in python_reads(path):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    for path in sorted((ROOT / "scripts").glob("*.sh")):
        for name in shell_reads(path):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    compose = (ROOT / "docker-compose.yml").read_text()
    for name in re.findall(r"\$\{([A-Z][A-Z0-9_]*)", compose):
        found.setdefault(name, set()).add("docker-compose.yml")
    for name in re.findall(r"^ARG\s+([A-Z][A-Z0-9_]*)", (ROOT / "Dockerfile").read_text(), re.MULTILINE):
        found.setdefault(name, set()).add("Dockerfile")
    return found


def env_example() -> set[str]:
    # Set lines and commented-out ones (`# PORT=8000`) alike; not prose that mentions `NAME=1 and …`.
    return set(re.findall(r"^#? ?([A-Z][A-Z0-9_]*)=\S*$", (ROOT / ".env.example").read_text(), re.MULTILINE))


# --- what the configuration doc documents


def documented_entries() -> list[tuple[str, str]]:
    """(variable, default) for each entry of docs/configuration.md: a table row whose first cell is
    one `NAME`, or a heading that is one `NAME` (its default then unknown here: "")."""
    entries = []
    for line in prose_lines(CONFIGURATION.read_text()):
        row = re.match(r"^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|([^|]*)\|", line)
        heading = re.match(r"^#{2,6}\s+`([A-Z][A-Z0-9_]*)`\s*$", line)
        if row:
            entries.append((row.group(1), row.group(2).strip()))
        elif heading:
            entries.append((heading.group(1), ""))
    return entries


def test_it_finds_the_variables_the_code_reads_however_it_reads_them():
    found = code_reads()
    # One of each way: env.<type>, a helper of settings, os.environ.get, setdefault, a script's ${…}, compose.
    for name in ("DJANGO_DEBUG", "BLOCKED_DOMAINS", "DJANGO_HTTPS", "EMBEDDING_BACKEND", "WEB_THREADS"):
        assert name in found, name
    for name in ("CELERY_SKIP_CHECKS", "PORT", "CELERY_CONCURRENCY", "PYTHON", "POSTGRES_PASSWORD"):
        assert name in found, name
    assert len(found) > 60


def test_it_documents_every_variable_the_code_reads_in_the_configuration_doc():
    documented = {name for name, _ in documented_entries()}
    missing = {name: sorted(where) for name, where in code_reads().items() if name not in documented}

    assert not missing, f"not in docs/configuration.md: {missing}"


def test_it_documents_every_variable_of_env_example():
    documented = {name for name, _ in documented_entries()}

    assert env_example() - documented == set()


def test_it_gives_each_setting_one_entry_with_its_default():
    entries = documented_entries()
    twice = [name for name, count in Counter(name for name, _ in entries).items() if count > 1]
    without_default = [name for name, default in entries if not default]

    assert entries
    assert not twice, f"more than one entry: {twice}"
    assert not without_default, f"no default given: {without_default}"


def test_it_documents_no_setting_that_nothing_reads():
    read = set(code_reads()) | env_example()
    stale = [name for name, _ in documented_entries() if name not in read]

    assert not stale, f"documented, but nothing reads them: {stale}"


# --- links between the docs


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a `# comment` in a shell block is not a heading)."""
    lines, fence = [], None
    for line in text.splitlines():
        marker = re.match(r"^\s*(`{3,}|~{3,})", line)
        if marker and fence is None:
            fence = marker.group(1)
        elif marker and marker.group(1).startswith(fence):
            fence = None
        elif fence is None:
            lines.append(line)
    return lines


def _blank_code_spans(line: str) -> str:
    """A `[x](y)` in inline code is not a link."""
    return re.sub(r"(`+)(.+?)\1", lambda m: m.group(1) + "x" * len(m.group(2)) + m.group(1), line)


def github_anchor(heading: str) -> str:
    """GitHub's id for a heading: its text (link targets and markup dropped), lowercased,
    punctuation removed, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The ids of a Markdown file's headings; a repeated heading gets -1, -2, … as on GitHub."""
    seen: Counter = Counter()
    found = set()
    for line in prose_lines(path.read_text()):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            anchor = github_anchor(heading.group(1))
            found.add(f"{anchor}-{seen[anchor]}" if seen[anchor] else anchor)
            seen[anchor] += 1
    return found


def doc_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "bench" / "results").glob("*.md"))]


LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(path: Path) -> list[str]:
    return [target for line in prose_lines(path.read_text()) for target in LINK.findall(_blank_code_spans(line))]


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        destination = (path.parent / file).resolve() if file else path
        if not destination.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target} (no such heading)")
    return broken


def test_it_reads_links_and_anchors_as_github_does(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Starting, stopping and who runs a run\n## Tokens (`bench/tokens.py`)\n## Notes\n## Notes\n"
        "```sh\n# not a heading\necho '[no](link.md)'\n```\n"
        "See [a](#starting-stopping-and-who-runs-a-run), [b](#tokens-benchtokenspy), [c](#notes-1), "
        "`[code](missing.md)`, [d](https://example.org/x), ![e](missing.png) and [f](#not-a-heading).\n"
    )

    assert "notes-1" in anchors(page) and "not-a-heading" not in anchors(page)
    assert broken_links(page) == ["missing.png (no such file)", "#not-a-heading (no such heading)"]


def test_it_resolves_every_link_between_the_docs():
    broken = {str(path.relative_to(ROOT)): found for path in doc_files() if (found := broken_links(path))}

    assert not broken, broken


# --- README, the front door


def test_it_keeps_readme_a_front_door_with_the_quick_start_commands():
    text = README.read_text()
    lines = text.splitlines()

    assert len(lines) < README_MAX_LINES
    assert "## Quick start" in lines
    for command in QUICK_START:
        assert command in lines, command
        assert (ROOT / command.split()[1]).is_file()


def test_it_leads_from_readme_to_every_doc():
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in links(README)}
    unlinked = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "docs").glob("*.md")) if path not in linked]

    assert not unlinked, unlinked


VERIFY_READS = re.compile(r"(?:--file|--trail|--source)\s+(\S+)|<\s*(\S+)")


def test_every_verify_command_in_the_docs_reads_a_file_the_repository_has():
    """A newcomer pastes them as written: `verify … < answer.txt` failed in a fresh clone."""
    read = [
        (path.name, name)
        for path in doc_files()
        for line in path.read_text().splitlines()
        if "manage.py verify" in line
        for match in VERIFY_READS.finditer(line.split("manage.py verify", 1)[1])
        for name in (found.strip("`),;.") for found in match.groups() if found)
        if name != "-" and not name.startswith(("http://", "https://"))
    ]
    assert ("using.md", "sample.txt") in read
    assert [(doc, name) for doc, name in read if not (ROOT / name).is_file()] == []


def test_readme_says_the_first_start_takes_minutes_and_gigabytes():
    quick_start = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]

    assert "first start takes a few minutes" in quick_start and "2.4 GB" in quick_start
