"""A page present in one language only is an error (../shared/cases/site.md, case 1)."""

from __future__ import annotations

import pytest

from hooks.checks.language_parity import check_language_parity
from hooks.errors import RenderError


def write(docs, *names):
    for name in names:
        path = docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# x\n", encoding="utf-8")


def test_complete_pair_passes(tmp_path):
    write(tmp_path, "index.it.md", "index.fr.md", "sub/page.it.md", "sub/page.fr.md", "assets/x.css")
    check_language_parity(tmp_path)


def test_page_in_italian_only(tmp_path):
    write(tmp_path, "index.it.md", "index.fr.md", "sub/page.it.md")
    with pytest.raises(
        RenderError,
        match=r"docs/sub/page\.fr\.md: missing; every page needs every language \(docs/sub/page\.it\.md has no translation\)",
    ):
        check_language_parity(tmp_path)


def test_notebook_in_french_only(tmp_path):
    write(tmp_path, "nb.fr.ipynb")
    with pytest.raises(
        RenderError,
        match=r"docs/nb\.it\.ipynb: missing; every page needs every language \(docs/nb\.fr\.ipynb has no translation\)",
    ):
        check_language_parity(tmp_path)


def test_page_without_suffix(tmp_path):
    write(tmp_path, "about.md")
    with pytest.raises(RenderError, match=r"docs/about\.md: page without a language suffix"):
        check_language_parity(tmp_path)
