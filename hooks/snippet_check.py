"""Fail a page early, with one line, when a snippet include is broken.

pymdownx.snippets (``check_paths: true``) raises ``SnippetMissingError`` from deep inside
Markdown conversion, which MkDocs reports as a traceback without the page's name. This
runs the same preprocessor, with the same configuration, on the page's Markdown first
and turns that error into a RenderError naming the missing file or section, nested
includes included.
"""

from __future__ import annotations

from typing import Any

import markdown
from pymdownx.snippets import SnippetMissingError

from .errors import RenderError


def check_snippets(page_markdown: str, snippets_config: dict[str, Any]) -> None:
    """Raise RenderError if any ``--8<--`` include of ``page_markdown`` cannot be resolved."""
    if "--8<--" not in page_markdown:
        return
    md = markdown.Markdown(extensions=["pymdownx.snippets"],
                           extension_configs={"pymdownx.snippets": {**snippets_config, "check_paths": True}})
    try:
        md.preprocessors["snippet"].run(page_markdown.split("\n"))
    except SnippetMissingError as exc:
        raise RenderError(f"broken snippet include: {exc}") from None
