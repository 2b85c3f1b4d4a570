"""The project's documents: the README for readers and operators, CONTRIBUTING.md for whoever
changes the guide, PUBLISHING.md for the publication's security. Each is linked from the
README, and every file they name exists (a renamed module leaves no stale pointer)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO_ROOT

DOCUMENTS = ("README.md", "CONTRIBUTING.md", "PUBLISHING.md")
NAMED_PATH_RE = re.compile(r"`((?:hooks|vram|verify|tests|snippets|docs|bench|overrides|\.github)/[\w./-]+)`")
PLACEHOLDER_RE = re.compile(r"\b[A-Z]{3,}\b")  # docs/NAME.it.md: a pattern, not a file


def test_the_readme_links_the_other_documents():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    for name in DOCUMENTS[1:]:
        assert f"]({name})" in readme, f"README.md does not link {name}"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_file_a_document_names_exists(name):
    text = (REPO_ROOT / name).read_text(encoding="utf-8")
    named = {match.group(1) for match in NAMED_PATH_RE.finditer(text) if not PLACEHOLDER_RE.search(match.group(1))}
    assert named, f"{name} names no file of the repository"
    assert sorted(path for path in named if not (REPO_ROOT / path).exists()) == []
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)  # relative Markdown links
    assert sorted(link for link in links if not (REPO_ROOT / link).exists()) == []


def test_contributing_says_which_tests_to_run_for_each_change():
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    sections = re.split(r"^### ", text, flags=re.M)[1:]
    titles = [section.splitlines()[0] for section in sections]
    for change in ("A page", "A snippet", "A card", "A model", "A translation"):
        assert change in titles, f"CONTRIBUTING.md has no section '### {change}'"
        body = sections[titles.index(change)]
        assert re.search(r"Tests?: .*`tests/", body, re.S), f"'{change}' names no test to run"
