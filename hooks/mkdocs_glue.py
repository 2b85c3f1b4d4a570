"""MkDocs hook file: the thin glue between MkDocs and the rooms of ``hooks/``.

One function per MkDocs event, in the order MkDocs calls them; each calls plain functions
of the rooms (``render/``, ``finder/``, ``data/``, ``checks/``, ``notebooks/``,
``workarounds/``; the map is ``hooks/__init__.py``) and of ``vram`` and ``verify``.
``reported`` is the one error boundary: every exception of the rooms or the data becomes
one ``PluginError`` naming the file, so ``mkdocs build --strict`` prints one line and
publishes nothing (``--verbose`` adds the traceback of an exception that is not a
RenderError: a bug, not bad input). Serving: ``hooks/serve.py``; publishing:
``hooks/checks/publish_gate.py``; notebooks: ``hooks/notebooks/pages.py``.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from contextlib import contextmanager
from pathlib import Path

# MkDocs puts only hooks/ on sys.path while it loads this file: import this checkout's
# packages, not those of an editable install or another checkout built in this process.
REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
for _name, _module in list(sys.modules.items()):
    if _name.partition(".")[0] in {"hooks", "vram", "verify"} and not (
        getattr(_module, "__file__", None) or ""
    ).startswith(f"{REPO_ROOT}{os.sep}"):
        del sys.modules[_name]

from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.plugins import event_priority  # noqa: E402
from mkdocs.structure.files import File  # noqa: E402
from mkdocs.utils import get_relative_url  # noqa: E402

from hooks.cache import TEMPLATE_CACHE, committed_caches  # noqa: E402
from hooks.checks.active_content import (  # noqa: E402
    check_article_content,
    check_code_shows_what_runs,
    check_notebook_cells,
    check_page_content,
)
from hooks.checks.conventions import check_page_conventions  # noqa: E402
from hooks.checks.external_loads import (  # noqa: E402
    check_no_external_loads,
    check_stylesheet,
    check_stylesheet_files,
    origin,
    strip_inert_mathjax,
    strip_inert_mermaid,
)
from hooks.checks.images import check_image_sizes  # noqa: E402
from hooks.checks.language_parity import check_language_parity  # noqa: E402
from hooks.checks.publish_gate import check_verified_block, insert_note, open_gate  # noqa: E402
from hooks.checks.same_code import STORE_DIR as BLOCK_NAMES_STORE, TitledBlocks  # noqa: E402
from hooks.checks.snippet_includes import check_plain_files, check_snippets, own_content  # noqa: E402
from hooks.checks.theme_files import check_theme_files_kept  # noqa: E402
from hooks.checks.unchecked_by_mkdocs import check_front_matter, check_nav_translations, check_notebook_links  # noqa: E402
from hooks.data.load import STORE_DIR as DATA_CHECKED_STORE, check_data_files  # noqa: E402
from hooks.errors import RenderError  # noqa: E402
from hooks.finder.compute import JSON_URI, STORE_DIR as FINDER_STORE, finder_assets, model_config_files  # noqa: E402
from hooks.finder.pyodide_assets import (  # noqa: E402
    BUNDLE_URI,
    LOCK_URI,
    PACK_STORE,
    STDLIB_URI,
    WASM_URI,
    fzstd_files,
    lock_file,
    packed_runtime,
    pyodide_files,
    vram_packed,
)
from hooks.notebooks.html import notebook_content, translate_copy_buttons  # noqa: E402
from hooks.notebooks.pages import use_executed_notebooks  # noqa: E402
from hooks.notebooks.styles import checked_stylesheets, drop_list_repr_style, stylesheet_files  # noqa: E402
from hooks.notebooks.translated import check_notebook_language  # noqa: E402
from hooks.notebooks.weight import CACHE_DIR as NOTEBOOK_CSS_CACHE, own_stylesheet, plots_as_files  # noqa: E402
from hooks.render.calibration_plot import STORE_DIR as PLOT_STORE, plot_png, plot_uri  # noqa: E402
from hooks.render.comments import check_catalogue_used, translate_comments  # noqa: E402
from hooks.render.inline_code import keep_code_words  # noqa: E402
from hooks.render.interface import interface_strings, translate_interface  # noqa: E402
from hooks.render.links_out import link_definitions  # noqa: E402
from hooks.render.markdown import STORE_DIR as PAGE_STORE, render_markdown  # noqa: E402
from hooks.render.markdown_table import label_cells  # noqa: E402
from hooks.render.search_entries import STORE_DIR as SEARCH_STORE, use_stored_entries  # noqa: E402
from hooks.render.typography import STORE_DIR as TYPESET_STORE, rules as typography_rules, typeset_html  # noqa: E402
from hooks.serve import check_code_unchanged, forget_logged_errors, serving, set_serving  # noqa: E402
from hooks.workarounds.i18n_outputs import (  # noqa: E402
    alternate_homes_for_404,
    rebase_config,
    write_language_404,
    write_search_indexes,
)
from hooks.workarounds.ipynb_pages import make_notebooks_pages  # noqa: E402
from hooks.workarounds.theme_walk import use_pruned_theme_walk  # noqa: E402
from verify.languages import DEFAULT_LANGUAGE  # noqa: E402
from verify.theme_scripts import (  # noqa: E402
    hosts_finder,
    policy as content_security_policy,
    use_bytecode_cache as use_theme_scripts_cache,
)

log = logging.getLogger("mkdocs.hooks.guide")
TEMPLATE_STORE = REPO_ROOT / ".cache" / "templates"  # hooks/cache.py: TemplateCache
make_notebooks_pages()
# the publish gate's record; every language's titled blocks; the comments a language pass translated
_build: dict = {"verified": None, "blocks": TitledBlocks(), "comments": set()}


def line_of(written: str | None, source: str | None) -> str:
    """``:N``, the line of ``source`` (a page as its file holds it) where ``written`` first occurs, or ``""``."""
    if not written or not source or written not in source:
        return ""
    return f":{source.count(chr(10), 0, source.index(written)) + 1}"


@contextmanager
def reported(where: str, source: str | None = None):
    """The error boundary: any exception inside becomes one PluginError prefixed by ``where``
    (and the line of ``source``, the page's file, when the error says what the page wrote)."""
    try:
        yield
    except PluginError:
        raise
    except RenderError as exc:
        where = f"{where}{line_of(exc.written, source)}" if where else where
        raise PluginError(f"{where}: {exc}" if where else str(exc)) from None
    except Exception as exc:  # the boundary: a bug still ends in one line
        if serving():  # the server's log is all a contributor sees
            log.exception("unexpected error in the render layer (%s):", where or "build")
            raise PluginError(f"{where or 'build'}: unexpected {type(exc).__name__}: {exc} (traceback above)") from None
        log.debug("unexpected error in the render layer", exc_info=True)
        raise PluginError(
            f"{where or 'build'}: unexpected {type(exc).__name__}: {exc} (`mkdocs build --verbose` shows the traceback)"
        ) from None


def page_file(page) -> str:
    return f"docs/{page.file.src_uri}"


def build_language(config) -> str:
    """The language being built (not the page's source language: they differ on fallbacks)."""
    i18n = config.plugins.get("i18n")
    return getattr(i18n, "current_language", None) or config.theme["language"]


def config_root(config) -> Path:
    """The folder of ``mkdocs.yml``, absolute: ``config_file_path`` is as given on the command
    line (``mkdocs build -f ../mkdocs.yml`` from ``docs/``), relative to the working directory."""
    return Path(os.path.abspath(os.path.dirname(config.config_file_path)))


def snippets_dir(config) -> Path:
    """pymdownx.snippets' first ``base_path``, absolute. It reads a relative one against the
    working directory, as ``!relative $config_dir/snippets`` writes it (``../snippets`` from
    ``docs/``); without one, the ``snippets`` folder beside ``mkdocs.yml``."""
    base = config.mdx_configs.get("pymdownx.snippets", {}).get("base_path")
    if not base:
        return config_root(config) / "snippets"
    return Path(os.path.abspath(base[0] if isinstance(base, (list, tuple)) else base))


def language_pass(config) -> bool:
    """Whether this build is one of the passes static-i18n runs for the other languages."""
    return bool(getattr(config.plugins.get("i18n"), "building", False))


def on_startup(command, **kwargs):
    # hooks.serve keeps it for the process: MkDocs loads this file again for every rebuild
    set_serving(command == "serve")  # tracebacks in the server's log; live reload's script (CSP)


def on_config(config, **kwargs):
    forget_logged_errors()
    with reported(""):
        if not language_pass(config):
            check_code_unchanged()
        _build["verified"] = open_gate(config_root(config), snippets_dir(config), config.site_url, os.environ)
        if _build["verified"] is None and not language_pass(config) and (committed := committed_caches(REPO_ROOT)):
            raise RenderError(
                f"{committed[0]}: a build cache is committed to the repository, and a development build "
                "would take it as its own work; remove it (git rm -r --cached .cache)"
            )
    use_pruned_theme_walk(
        config.theme
    )  # the theme's file list skips Material's .icons (hooks/workarounds/theme_walk.py)
    return config


def nav_translations(config) -> dict:
    """Language -> its ``nav_translations``, for every language of the i18n plugin but the default."""
    i18n = config.plugins.get("i18n")
    languages = i18n.config.languages if i18n is not None else []
    return {lang.locale: lang.nav_translations for lang in languages if not lang.default}


def on_pre_build(config, **kwargs):
    with reported(""):
        check_language_parity(Path(config.docs_dir))
        check_page_conventions(Path(config.docs_dir))
        check_data_files(store=unless_publication(DATA_CHECKED_STORE))
        interface_strings()  # hooks/render/interface.yaml and hooks/render/typography.yaml, before any page uses them
        typography_rules()
        check_nav_translations(config.nav, nav_translations(config))
    _build["blocks"].start(build_language(config), unless_publication(BLOCK_NAMES_STORE))
    _build["comments"] = set()
    search = config.plugins.get("material/search") or config.plugins.get("search")
    # each page's search entries, kept by a development build (hooks/render/search_entries.py)
    use_stored_entries(getattr(search, "search_index", None), unless_publication(SEARCH_STORE))


@event_priority(-150)  # after the i18n plugin (-100), which rebuilds the file list per language
def on_files(files, config, **kwargs):
    with reported(""):
        root = config_root(config)
        folders = [snippets_dir(config), *([config.theme.custom_dir] if config.theme.custom_dir else [])]
        own = own_content(
            [
                *(file.abs_src_path for file in files if file.abs_src_path),  # templates and data too
                *(path for folder in folders for path in Path(folder).rglob("*")),
            ],
            root,
            [config.docs_dir, *folders],
        )
        check_plain_files(own, root)
        check_image_sizes(own, root)
        # docs/ and overrides/ add to the theme, never replace its files
        theme_dirs = [Path(folder) for folder in config.theme.dirs if folder != config.theme.custom_dir]
        check_theme_files_kept([Path(config.docs_dir), *map(Path, folders[1:])], theme_dirs, root)
        check_stylesheet_files(own, root, origin(config.site_url))
    with reported(JSON_URI):
        for uri, content in finder_assets(store=unless_publication(FINDER_STORE)).items():
            if not_generated(files, uri):
                files.append(File.generated(config, uri, content=content))
    with reported(plot_uri(build_language(config))):  # the formulas page's plot of the published runs
        uri = plot_uri(build_language(config))
        if not_generated(files, uri):
            files.append(
                File.generated(
                    config, uri, content=plot_png(build_language(config), store=unless_publication(PLOT_STORE))
                )
            )
    with reported(BUNDLE_URI):  # the finder's worker: Pyodide, fzstd and the calculator's own sources
        store = unless_publication(PACK_STORE)
        made = {
            BUNDLE_URI: lambda: vram_packed(model_config_files(), store=store),
            WASM_URI: lambda: packed_runtime(store=store)[WASM_URI],
            STDLIB_URI: lambda: packed_runtime(store=store)[STDLIB_URI],
            LOCK_URI: lock_file,
        }
        for uri, make in made.items():
            if not_generated(files, uri):
                files.append(File.generated(config, uri, content=make()))
        for uri, path in {**pyodide_files(), **fzstd_files()}.items():
            if not_generated(files, uri):
                files.append(File.generated(config, uri, abs_src_path=str(path)))
    with reported(""):
        checked_stylesheets(
            origin(config.site_url)
        )  # notebook pages link the rules they use (hooks/notebooks/weight.py)
    with reported(""):
        return use_executed_notebooks(files, config, build_language(config), publication=_build["verified"] is not None)


def unless_publication(store: Path) -> Path | None:
    """``store`` (a folder of ``.cache/``) for a development build; None for a publication
    build, which uses nothing of ``.cache/`` (anyone who writes the checkout writes there: PUBLISHING.md)."""
    return None if _build["verified"] is not None else store


def not_generated(files, uri: str) -> bool:
    """Whether ``uri`` is still to be generated; raises RenderError when a file of ``docs/`` or of
    the theme (``overrides/``) is there: the build writes the finder's data, the calculator's
    sources and Pyodide's files itself, and a copy would replace what the reader's browser runs."""
    found = files.get_file_from_path(uri)
    if found is not None and found.generated_by is None:
        where = Path(found.abs_src_path or found.src_uri)
        where = where.relative_to(REPO_ROOT) if where.is_relative_to(REPO_ROOT) else where
        raise RenderError(
            f"{where}: the build writes {uri} itself (from vram/, snippets/data/ and "
            "node_modules/pyodide); remove this file"
        )
    return found is None


def on_page_read_source(page, config, **kwargs):
    """A notebook page has no Markdown: mkdocs-jupyter renders it from the executed file."""
    return "" if page.file.src_uri.endswith(".ipynb") else None


def on_page_markdown(markdown, page, config, files, **kwargs):
    with reported(page_file(page), page.file.content_string):
        check_front_matter(page.file.content_string)
        rendered = render_markdown(markdown, build_language(config), store=unless_publication(PAGE_STORE))
        rendered += "\n" + link_definitions(config.extra, rendered)
        check_snippets(rendered, config.mdx_configs.get("pymdownx.snippets", {}))  # includes in data text too
        return rendered


def on_page_content(html, page, config, files, **kwargs):
    with reported(page_file(page)):
        if page.file.src_uri.endswith(".ipynb"):
            check_notebook_cells(
                Path(page.file.abs_src_path), Path(config.docs_dir) / page.file.src_uri
            )  # executed, source
            check_notebook_language(Path(config.docs_dir) / page.file.src_uri, build_language(config))
            check_notebook_links(html, page.url, {file.url for file in files})
            html = notebook_content(strip_inert_mermaid(strip_inert_mathjax(html)), page.toc)
            relative = functools.partial(_relative_url, page_url=page.url)
            html = plots_as_files(
                drop_list_repr_style(html), functools.partial(write_site_file, config.site_dir), relative
            )
            html = own_stylesheet(
                html,
                stylesheet_files(),
                functools.partial(write_site_file, config.site_dir),
                relative,
                functools.partial(check_stylesheet, site_origin=origin(config.site_url)),
                cache_dir=unless_publication(NOTEBOOK_CSS_CACHE),
            )
        else:
            check_page_content(html)
            html = label_cells(keep_code_words(html))  # pipe tables too: a card per row on a phone
        return translate_comments(html, build_language(config), used=_build["comments"])


def _relative_url(uri: str, page_url: str) -> str:
    return get_relative_url(uri, page_url)


def write_site_file(site_dir: str, uri: str, data: bytes) -> None:
    """A file the pages link to, written into the built site (a notebook's plot, its stylesheet)."""
    path = Path(site_dir) / uri
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_bytes() != data:
        path.write_bytes(data)


def on_env(env, config, files, **kwargs):
    TEMPLATE_CACHE.use_folder(unless_publication(TEMPLATE_STORE))  # compiled templates, kept by content
    env.bytecode_cache = TEMPLATE_CACHE
    use_theme_scripts_cache(TEMPLATE_CACHE)  # the theme's inline scripts, rendered for the pages' policy
    # overrides/main.html; the finder's page adds what its worker needs (verify/theme_scripts.py)
    env.globals["guide_csp"] = lambda base_url, page=None: content_security_policy(
        base_url, serving(), finder=hosts_finder(str(getattr(page, "content", "") or ""))
    )
    return env


def on_post_page(output, page, config, **kwargs):
    lang = build_language(config)
    with reported(page_file(page)):
        html = insert_note(output, lang, _build["verified"])
        html = typeset_html(
            translate_interface(translate_copy_buttons(html), lang), lang, store=unless_publication(TYPESET_STORE)
        )
        if lang != DEFAULT_LANGUAGE:  # its search and links resolve against its own root
            html = rebase_config(html, lang)
        # every rewrite is above: the checks below see the page as published
        if not page.file.src_uri.endswith(
            ".ipynb"
        ):  # a notebook's cells: check_notebook_cells, outputs in verify.artifact
            check_article_content(html)
        check_verified_block(html, lang, _build["verified"])
        check_code_shows_what_runs(html)
        check_no_external_loads(html, origin(config.site_url))
        _build["blocks"].add_page(html, lang, page_file(page))
        return html


def on_template_context(context, template_name, config, **kwargs):
    if template_name == "404.html":
        with reported(template_name):
            alternate_homes_for_404(config)
    return context


def on_post_template(output, template_name, config, **kwargs):
    lang = build_language(config)
    if template_name != "404.html" or lang == DEFAULT_LANGUAGE:
        return output
    with reported(f"{lang}/404.html"):
        return write_language_404(output, lang, Path(config.site_dir))


@event_priority(-200)  # after static-i18n (-100), which builds every other language and merges the search index
def on_post_build(config, **kwargs):
    with reported(""):
        _build["blocks"].finish(build_language(config))
        check_catalogue_used(_build["comments"], build_language(config), Path(config.docs_dir))
    with reported("search/search_index.json"):
        write_search_indexes(config)
