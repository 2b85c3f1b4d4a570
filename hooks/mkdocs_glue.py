"""MkDocs hooks: thin glue between MkDocs and the render functions of ``hooks/``.

Every bad input ends as one ``PluginError`` line naming the file and the problem.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# `mkdocs serve` re-executes this file on each rebuild: drop the cached modules of
# the calculator and the render layer so edits to them show without a restart.
for _name in [n for n in sys.modules if n.split(".")[0] in {"vram", "hooks"} and n != __name__]:
    del sys.modules[_name]

from hooks.comments import translate_comments  # noqa: E402
from hooks.errors import RenderError  # noqa: E402
from hooks.parity import check_language_parity  # noqa: E402
from hooks.render import render_markdown  # noqa: E402
from hooks.snippet_check import check_snippets  # noqa: E402


def build_language(config) -> str:
    """The language being built (not the page's source language: they differ on fallbacks)."""
    i18n = config.plugins.get("i18n")
    return getattr(i18n, "current_language", None) or config.theme["language"]


def on_pre_build(config, **kwargs):
    try:
        check_language_parity(Path(config.docs_dir))
    except RenderError as exc:
        raise PluginError(str(exc)) from None


def on_page_markdown(markdown, page, config, files, **kwargs):
    try:
        check_snippets(markdown, config.mdx_configs.get("pymdownx.snippets", {}))
        return render_markdown(markdown, build_language(config))
    except RenderError as exc:
        raise PluginError(f"docs/{page.file.src_uri}: {exc}") from None


def on_page_content(html, page, config, files, **kwargs):
    try:
        return translate_comments(html, build_language(config))
    except RenderError as exc:
        raise PluginError(f"docs/{page.file.src_uri}: {exc}") from None
