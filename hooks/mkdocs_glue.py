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

# Import the calculator and the render layer of this checkout, not modules another
# checkout left in this process; `reload_render_layer` repeats this whenever they change.
RENDER_LAYER = ("vram", "hooks")
KEEP_LOADED = {__name__, "hooks.deferred_imports"}  # a plugin's module: MkDocs holds it
for _name in [n for n in sys.modules if n.split(".")[0] in RENDER_LAYER and n not in KEEP_LOADED]:
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
from hooks.verification import insert_after_block, render_note  # noqa: E402
from verify.extract import code_lines, titled_code  # noqa: E402
from verify.record import DEFAULT_RECORD, SNIPPET, RecordError, check_record, load_record, snippet_sha256  # noqa: E402

_VERIFIED: dict = {"record": None, "snippet": None}


def _snippet_path(config) -> Path:
    base = config.mdx_configs.get("pymdownx.snippets", {}).get("base_path") or ["snippets"]
    base = base[0] if isinstance(base, (list, tuple)) else base
    return Path(config.config_file_path).parent / base / SNIPPET


def publish_gate(config):
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
    lang, record = build_language(config), _VERIFIED["record"]
    if record is not None and (code := titled_code(output, SNIPPET)) is not None:
        same = (snippet_sha256(code.encode("utf-8")) == record["snippet_sha256"] if lang == DEFAULT_LANGUAGE
                else code_lines(code, SNIPPET) == code_lines(_VERIFIED["snippet"], SNIPPET))
        if not same:
            raise PluginError(f"publish build refused: docs/{page.file.src_uri} ({lang}): the {SNIPPET} block is not the code the record verified")
    try:
        return insert_after_block(output, SNIPPET, render_note(record, lang))
    except RenderError as exc:
        raise PluginError(f"docs/{page.file.src_uri}: {exc}") from None


# --- "Find the GPU" and the executed notebooks (issue 5) ------------------------------
# MkDocs loads a hook file once per process (its Hooks option caches the module), so
# under `mkdocs serve` the purge at the top of this file runs only at the first build.
# `reload_render_layer` repeats it at the start of a build (on_config, before any other
# event of ours) when a .py file of vram/ or hooks/ changed since the last import: the
# calculator and the render layer are imported afresh and this module's names rebound, so
# an edit shows on the next rebuild without a restart (data files are checked by their
# modification time on every call). `assets/finder.json` is generated from the calculator;
# notebooks run through hooks/notebooks.py (cached under .cache/notebooks, keyed by their
# content, what they read and the tool versions; also shared between checkouts through
# the machine store) and mkdocs-jupyter renders the executed copy.

import importlib  # noqa: E402
import types  # noqa: E402

from mkdocs.plugins import CombinedEvent, event_priority  # noqa: E402
from mkdocs.structure.files import File  # noqa: E402

from hooks.data import file_stamp, tree_stamp  # noqa: E402
from hooks.finder import JSON_URI, finder_json  # noqa: E402
from hooks.languages import LANGUAGES  # noqa: E402
from hooks.notebooks import NotebookError, executed_notebooks, machine_store  # noqa: E402
from hooks.template_cache import InMemoryBytecodeCache  # noqa: E402


_LOADED: dict = {"stamp": None, "hook_files": {}}


def render_layer_stamp() -> tuple:
    """Modification stamps of the .py files of vram/ and hooks/ in this checkout."""
    return tree_stamp(*(REPO_ROOT / package for package in RENDER_LAYER), pattern="*.py")


def _in_render_layer(module_name: str) -> bool:
    return module_name.split(".")[0] in RENDER_LAYER and module_name not in KEEP_LOADED


def reload_render_layer() -> bool:
    """Re-import vram/ and hooks/ of this checkout if a .py file there changed, and rebind
    every name this module took from them. Returns whether it reloaded.

    An import error (a syntax error being typed) propagates and leaves the stamp as it
    was, so the next build tries again; names are rebound by where they come from, not by
    what ``sys.modules`` holds, so a failed attempt leaves nothing stale behind.

    MkDocs restores ``sys.path`` after loading a hook, dropping the checkout added at the
    top of this file; without it here, ``import hooks`` could find another checkout (an
    editable install) instead of this one.
    """
    stamp = render_layer_stamp()
    if stamp == _LOADED["stamp"]:
        return False
    if sys.path[:1] != [str(REPO_ROOT)]:
        sys.path.insert(0, str(REPO_ROOT))
    for name in [n for n in sys.modules if _in_render_layer(n)]:
        del sys.modules[name]
    namespace = globals()
    for attr, value in list(namespace.items()):
        if isinstance(value, types.ModuleType) and _in_render_layer(value.__name__):
            namespace[attr] = importlib.import_module(value.__name__)
        elif (isinstance(getattr(value, "__module__", None), str) and _in_render_layer(value.__module__)
              and getattr(value, "__name__", None) == attr):
            namespace[attr] = getattr(importlib.import_module(value.__module__), attr)
    _LOADED["stamp"] = stamp
    return True


def check_hook_files(config) -> None:
    """Stop a build whose hook files (``hooks:`` in mkdocs.yml) changed since MkDocs loaded
    them: MkDocs loads a hook file once per process, so under `mkdocs serve` an edit to
    one would silently not apply. Raises PluginError naming the file."""
    for module in config.hooks.values():
        path = Path(getattr(module, "__file__", "") or "")
        if not path.is_file():
            continue
        stamp = file_stamp(path)
        if _LOADED["hook_files"].setdefault(str(path), stamp) != stamp:
            raise PluginError(f"{path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}: "
                              "edited after `mkdocs serve` started, and MkDocs loads hook files once "
                              "per process: restart `make serve` to use it")


_LOADED["stamp"] = render_layer_stamp()  # what the imports above loaded
_LOADED["hook_files"][__file__] = file_stamp(Path(__file__))


def _notebooks_are_pages() -> None:
    """Make ``.ipynb`` files documentation pages for MkDocs itself, not only for mkdocs-jupyter.

    The i18n plugin rebuilds every File in its on_files (after mkdocs-jupyter's wrapper),
    so without this a notebook is copied as a raw JSON asset (ultrabug/mkdocs-static-i18n#198).
    """
    original = getattr(File.is_documentation_page, "__wrapped_original__", File.is_documentation_page)

    def is_documentation_page(self) -> bool:
        return original(self) or self.src_uri.endswith(".ipynb")

    is_documentation_page.__wrapped_original__ = original
    File.is_documentation_page = is_documentation_page


_notebooks_are_pages()


def jupyter_kernel(config) -> str:
    """The kernel configured for mkdocs-jupyter (``kernel_name``), python3 if unset."""
    plugin = config.plugins.get("mkdocs-jupyter")
    return (plugin.config.get("kernel_name") if plugin else "") or "python3"


def add_finder_json(files, config):
    """Add ``assets/finder.json`` (both languages read this one file)."""
    try:
        content = finder_json()
    except RenderError as exc:
        raise PluginError(f"{JSON_URI}: {exc}") from None
    if files.get_file_from_path(JSON_URI) is None:
        files.append(File.generated(config, JSON_URI, content=content))
    return files


def use_executed_notebooks(files, config):
    """Point every notebook page at its executed copy (all languages run at once, in parallel)."""
    notebooks = [f for f in files if f.src_uri.endswith(".ipynb") and f.abs_src_path]
    if not notebooks:
        return files
    docs = Path(config.docs_dir)
    root = Path(config.config_file_path).parent
    store = machine_store()
    try:
        executed = executed_notebooks(docs, root, LANGUAGES, jupyter_kernel(config), store=store)
    except NotebookError as exc:
        raise PluginError(str(exc)) from None
    for file in notebooks:
        file.abs_src_path = str(executed[Path(file.abs_src_path).resolve()])
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is not None:
        # mkdocs-jupyter caches the HTML it renders (keyed by the executed notebook's bytes)
        # and, after each language pass, evicts what that pass did not use: one folder per
        # language keeps the other language's pages, and one per checkout keeps checkouts
        # with other notebooks from evicting each other's (its writes are not atomic either).
        jupyter.config["cache_dir"] = str(root / ".cache" / "mkdocs-jupyter" / build_language(config))
    return files


@event_priority(-150)  # after the i18n plugin (-100), which rebuilds the file list per language
def _generated_on_files(files, config, **kwargs):
    return use_executed_notebooks(add_finder_json(files, config), config)


# Both language passes and every `mkdocs serve` rebuild reuse the compiled theme templates.
# Created once per process: reload_render_layer must not replace it, so it lives here.
TEMPLATE_CACHE = InMemoryBytecodeCache()


def on_env(env, config, files, **kwargs):
    env.bytecode_cache = TEMPLATE_CACHE
    return env


def on_page_read_source(page, config, **kwargs):
    """A notebook page has no Markdown: mkdocs-jupyter renders it from the executed file."""
    return "" if page.file.src_uri.endswith(".ipynb") else None


on_files = _generated_on_files


@event_priority(200)  # before every other on_config, so this build runs the current code
def _reload_on_config(config, **kwargs):
    check_hook_files(config)
    reload_render_layer()
    return config


@event_priority(0)
def _publish_gate_on_config(config, **kwargs):
    return publish_gate(config)


on_config = CombinedEvent(_reload_on_config, _publish_gate_on_config)
