"""The project's documents: the README for readers and operators, CONTRIBUTING.md for whoever
changes the guide, PUBLISHING.md for the publication's security. Each is linked from the
README, and every file they name exists (a renamed module leaves no stale pointer)."""

from __future__ import annotations

import ast
import re

import pytest

from tests.conftest import REPO_ROOT

DOCUMENTS = ("README.md", "CONTRIBUTING.md", "PUBLISHING.md")
ROOM_READMES = ("vram/README.md", "hooks/README.md", "bench/README.md")  # each room's, linked from the README
NAMED_PATH_RE = re.compile(r"`((?:hooks|vram|verify|tests|snippets|docs|bench|overrides|\.github)/[\w./-]+)`")
PLACEHOLDER_RE = re.compile(r"\b[A-Z]{3,}\b")  # docs/NAME.it.md: a pattern, not a file


def test_the_readme_links_the_other_documents():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    for name in DOCUMENTS[1:]:
        assert f"]({name})" in readme, f"README.md does not link {name}"


def test_the_readme_links_each_rooms_readme_and_stays_a_front_door():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    for name in ROOM_READMES:
        assert f"]({name})" in readme, f"README.md does not link {name}"
    assert len(readme.encode("utf-8")) <= 12 * 1024, (
        "README.md is a front door (12 KB): move the details to a room's README"
    )


@pytest.mark.parametrize("name", DOCUMENTS + ROOM_READMES)
def test_every_file_a_document_names_exists(name):
    text = (REPO_ROOT / name).read_text(encoding="utf-8")
    named = {match.group(1) for match in NAMED_PATH_RE.finditer(text) if not PLACEHOLDER_RE.search(match.group(1))}
    assert named, f"{name} names no file of the repository"
    assert sorted(path for path in named if not (REPO_ROOT / path).exists()) == []
    prose = re.sub(r"`[^`\n]*`", "", text)  # a link written in a code span is an example, not a link
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", prose)  # relative Markdown links, from the document's folder
    assert sorted(link for link in links if not ((REPO_ROOT / name).parent / link).exists()) == []


# ------------------------------------------------------------------ the environment variables
CODE_DIRS = ("hooks", "verify", "vram", "bench", "snippets", "tests")
OURS = re.compile(r"\b(?:GUIDE|REQUIRE|NCCL_CHECK)_[A-Z0-9_]+\b")  # the project's own variables
SHIPPED = (
    "Makefile",
    "verify/make.mk",
    ".ci/run",
    ".github/workflows/publish.yml",
    "docs/memory-notebook.it.ipynb",
    "docs/memory-notebook.fr.ipynb",
    "snippets/nccl_check.py",
)


def _environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def python_reads(tree: ast.AST) -> set[str]:
    """Names read from the environment in a module: ``os.environ[...]``, ``os.environ.get/pop``,
    ``os.getenv``, ``"X" in os.environ``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr in ("get", "pop") and _environ(func.value)) or (
                isinstance(func, (ast.Attribute, ast.Name))
                and getattr(func, "attr", getattr(func, "id", "")) == "getenv"
            ):
                names.add(str(node.args[0].value))
        elif (
            isinstance(node, ast.Subscript)
            and _environ(node.value)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.ctx, ast.Load)
        ):
            names.add(str(node.slice.value))
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and any(_environ(c) for c in node.comparators)
        ):
            names.add(str(node.left.value))
    return names


def variables_read() -> dict[str, str]:
    """Every environment variable the code reads (name -> a file that reads it): Python's reads
    in every module of ``CODE_DIRS``; every ``GUIDE_*``, ``REQUIRE_*`` and ``NCCL_CHECK_*`` name in
    that code's strings, the Makefiles, CI, the workflow and the notebooks (a name held in a
    constant and read later counts); the Makefile's ``NAME ?=`` (a value the caller's
    environment gives). The GPU runner's own scripts (``.github/gpu-runner/``) are PUBLISHING.md's."""
    found: dict[str, str] = {}
    for folder in CODE_DIRS:
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            strings = " ".join(
                node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            )
            for name in python_reads(tree) | set(OURS.findall(strings)):
                found.setdefault(name, str(path.relative_to(REPO_ROOT)))
    for name in SHIPPED:
        for variable in OURS.findall((REPO_ROOT / name).read_text(encoding="utf-8")):
            found.setdefault(variable, name)
    for variable in re.findall(r"(?m)^([A-Z][A-Z0-9_]*) \?=", (REPO_ROOT / "Makefile").read_text(encoding="utf-8")):
        found.setdefault(variable, "Makefile")
    return found


def documented_variables() -> set[str]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## Environment variables") :]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split(" | ")[0])}


def test_every_environment_variable_the_code_reads_is_in_the_readmes_table():
    found, documented = variables_read(), documented_variables()
    assert {"GUIDE_PUBLISH", "REQUIRE_GPU", "NCCL_CHECK_MIB", "PORT"} <= set(found)  # the scan sees each kind of read
    missing = {name: where for name, where in found.items() if name not in documented}
    assert missing == {}, "add each to README.md's table of environment variables (default, who sets it)"


# ------------------------------------------------------------------ what to run for a change
def test_each_kind_of_change_selects_tests_and_a_command_runs_them():
    from tests.conftest import CHANGE_KINDS

    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    kinds = re.search(r"(?m)^TEST_KINDS := (.+)$", makefile).group(1).split()
    assert sorted(kinds) == sorted(CHANGE_KINDS), "Makefile's TEST_KINDS are tests/conftest.py's CHANGE_KINDS"
    for kind, paths in CHANGE_KINDS.items():
        assert f'"{kind}: ' in pyproject, f"pyproject.toml does not register the marker {kind}"
        for where in paths:
            path = REPO_ROOT / where
            tests = [path] if path.is_file() else sorted(path.rglob("test_*.py"))
            assert tests and all(t.name.startswith("test_") for t in tests), f"{kind}: {where} holds no test file"


def test_a_module_of_todays_catalogue_is_run_for_a_card():
    from tests.conftest import CHANGE_KINDS

    reading = sorted(
        str(path.relative_to(REPO_ROOT))
        for path in (REPO_ROOT / "tests").rglob("test_*.py")
        if re.search(r"(?m)^TODAYS_CATALOGUE = True", path.read_text(encoding="utf-8"))
    )
    assert reading and set(reading) <= set(CHANGE_KINDS["card"])


def test_contributing_names_the_command_for_each_change():
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    sections = re.split(r"^### ", text, flags=re.MULTILINE)[1:]
    titles = [section.splitlines()[0] for section in sections]
    for change, kind in (
        ("A page", "page"),
        ("A snippet", "snippet"),
        ("A card", "card"),
        ("A model", "model"),
        ("A translation", "translation"),
        ("A table or a number", "number"),
    ):
        assert change in titles, f"CONTRIBUTING.md has no section '### {change}'"
        assert f"`make test-{kind}`" in sections[titles.index(change)], f"'{change}' does not name make test-{kind}"
