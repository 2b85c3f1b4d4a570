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


# --- Publish only what ran (issue 4) --------------------------------------------------
# GUIDE_PUBLISH=1: the build refuses to run unless the verification record (default
# verification/nccl_check.json, or GUIDE_VERIFICATION_RECORD) is a passing GPU run of the
# exact snippets/nccl_check.py the pages include (sha256 of its bytes); the page then
# shows where, when and what it measured. Otherwise the page says "not verified in this
# build". GUIDE_ALLOW_FIXTURE_RECORD=1 (tests only) accepts a record marked as a fixture,
# which the page then labels as test data.

import os  # noqa: E402

from hooks.languages import DEFAULT_LANGUAGE  # noqa: E402
from hooks.verification import block_code, insert_after_block, render_note  # noqa: E402
from verify.extract import code_lines  # noqa: E402
from verify.record import DEFAULT_RECORD, SNIPPET, RecordError, check_record, load_record, snippet_sha256  # noqa: E402

_VERIFIED: dict = {"record": None, "snippet": None}


def _snippet_path(config) -> Path:
    base = config.mdx_configs.get("pymdownx.snippets", {}).get("base_path") or ["snippets"]
    base = base[0] if isinstance(base, (list, tuple)) else base
    return Path(config.config_file_path).parent / base / SNIPPET


def on_config(config, **kwargs):
    _VERIFIED.update(record=None, snippet=None)
    if os.environ.get("GUIDE_PUBLISH") != "1":
        return config
    root = Path(config.config_file_path).parent
    record_path = root / os.environ.get("GUIDE_VERIFICATION_RECORD", str(DEFAULT_RECORD))
    try:
        snippet = _snippet_path(config).read_bytes()
        record = check_record(load_record(record_path), snippet_sha256(snippet), str(record_path),
                              allow_fixture=os.environ.get("GUIDE_ALLOW_FIXTURE_RECORD") == "1")
    except (OSError, RecordError) as exc:
        raise PluginError(f"publish build refused: {exc}") from None
    _VERIFIED.update(record=record, snippet=snippet.decode("utf-8"))
    return config


def on_post_page(output, page, config, **kwargs):
    code = block_code(output, SNIPPET)
    if code is None:
        return output
    lang, record = build_language(config), _VERIFIED["record"]
    if record is not None:
        same = (snippet_sha256(code.encode("utf-8")) == record["snippet_sha256"] if lang == DEFAULT_LANGUAGE
                else code_lines(code, SNIPPET) == code_lines(_VERIFIED["snippet"], SNIPPET))
        if not same:
            raise PluginError(f"publish build refused: docs/{page.file.src_uri} ({lang}): the {SNIPPET} block is not the code the record verified")
    try:
        return insert_after_block(output, SNIPPET, render_note(record, lang))
    except RenderError as exc:
        raise PluginError(f"docs/{page.file.src_uri}: {exc}") from None
