"""The theme's own files are published as the installed theme ships them.

The attack: a pull request commits ``overrides/assets/javascripts/bundle.<hash>.min.js`` (or
the same path under ``docs/``), the name of Material's JavaScript bundle, with a line of its own
at the end. MkDocs copies the theme's custom folder and the docs folder over the theme, so every page of both languages loaded it; the strict
build passed and the check of the site as uploaded accepted it (a script file of the site).
Now the build stops with one line naming the file (hooks/checks/theme_files.py), and the
artifact check compares every ``assets/`` file that has the path of a file of the installed
mkdocs-material with that file's bytes (the oracle: the installed package, read here).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from hooks.checks.theme_files import check_theme_files_kept
from hooks.errors import RenderError
from tests.conftest import build_site
from verify.artifact import ArtifactError, check_theme_files

THEME = Path(str(resources.files("material") / "templates"))
BUNDLE = next(path for path in (THEME / "assets" / "javascripts").glob("bundle.*.min.js"))
PLANTED = BUNDLE.read_bytes() + b';document.title="planted";\n'


def theme_assets() -> dict[str, bytes]:
    return {
        path.relative_to(THEME).as_posix(): path.read_bytes()
        for path in (THEME / "assets").rglob("*")
        if path.is_file()
    }


def test_the_installed_themes_files_pass_and_our_own_files_beside_them_too():
    check_theme_files({**theme_assets(), "assets/javascripts/lang-404.js": b"/* ours */", "index.html": b"<p>page</p>"})


@pytest.mark.parametrize(
    "pattern",
    [
        "assets/javascripts/bundle.*.min.js",
        "assets/stylesheets/main.*.min.css",
        "assets/javascripts/workers/search.*.min.js",
        "assets/images/favicon.png",
    ],
)
def test_a_theme_file_with_other_bytes_is_refused(pattern):
    (name,) = [path.relative_to(THEME).as_posix() for path in THEME.glob(pattern)]
    files = theme_assets()
    files[name] = PLANTED
    with pytest.raises(ArtifactError, match=f"^{name}: not the file of the installed mkdocs-material"):
        check_theme_files(files)


def test_overrides_may_not_hold_a_theme_file(tmp_path):
    custom = tmp_path / "overrides"
    (custom / "assets" / "javascripts").mkdir(parents=True)
    (custom / "assets" / "javascripts" / "lang-404.js").write_text("/* ours */")
    (custom / "main.html").write_text("{% extends 'base.html' %}")  # templates are overridden by design
    check_theme_files_kept([custom], [THEME], tmp_path)
    (custom / "assets" / "javascripts" / BUNDLE.name).write_bytes(PLANTED)
    with pytest.raises(RenderError, match=f"^overrides/assets/javascripts/{BUNDLE.name}: replaces the theme's own"):
        check_theme_files_kept([custom], [THEME], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["overrides", "docs"])
def test_the_build_refuses_the_planted_bundle_naming_it(folder, repo_copy, tmp_path):
    planted = repo_copy / folder / "assets" / "javascripts" / BUNDLE.name
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_bytes(PLANTED)
    result = build_site(tmp_path / "site", config=repo_copy / "mkdocs.yml")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and f"{folder}/assets/javascripts/{BUNDLE.name}: replaces the theme's own" in errors[0], (
        result.stderr[-2000:]
    )
    assert "Traceback" not in result.stderr
