"""The inline scripts the theme itself writes into pages, and the page's Content-Security-Policy.

A page may run an inline script only if it is one the theme's own files produce: Material's
``partials/javascripts/*.html`` (rendered with Jinja for the page's ``base_url``: the first
one names it) and mkdocs-jupyter's notebook template (its copy-button script, written
inline by nbconvert's ``include_js``, and the listener written in the template). The hashes
are computed from those installed files, never from a page, so a script a page adds is not
in them; both the policy each page carries (``overrides/main.html``, through ``guide_csp``,
registered by ``hooks/mkdocs_glue.py``) and the artifact check (``verify.artifact``) use
this one list.

Our own scripts are files of the site (``assets/*.js``), allowed by ``'self'``.

Pure: Jinja2 and the installed theme packages; no MkDocs import.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from importlib import resources

import jinja2

MATERIAL_SCRIPTS = ("partials", "javascripts")  # under material/templates
JUPYTER_TEMPLATE = ("templates", "mkdocs_html")  # under mkdocs_jupyter
JUPYTER_INCLUDED_JS = ("clipboard.umd.js",)  # what its template inlines with include_js
FEATURES = ("content.tabs.link", "content.code.copy")  # only decides which of Material's scripts render
INLINE_SCRIPT_RE = re.compile(r"<script>(.*?)</script>", re.DOTALL)

# The policy of every page (issue 19). 'self': the site's own files (worker-src: Material's
# search worker); data: images: the notebook's plots and Material's icons in its stylesheet.
# Inline styles: the notebook template's Pygments styles (nbconvert writes them); page content
# may hold none (hooks/checks/active_content.py, verify.artifact).
POLICY = (
    ("default-src", ["'self'"]),
    ("script-src", ["'self'"]),  # + the theme's hashes
    ("style-src", ["'self'", "'unsafe-inline'"]),
    ("img-src", ["'self'", "data:"]),
    ("font-src", ["'self'"]),
    ("connect-src", ["'self'"]),
    ("worker-src", ["'self'"]),
    ("object-src", ["'none'"]),
    ("frame-src", ["'none'"]),
    ("base-uri", ["'none'"]),
    ("form-action", ["'none'"]),
)
# What the page hosting the finder adds (issue 33). Its worker starts from a blob: wrapper that
# imports assets/finder-worker.js, so that the worker inherits this policy (a worker started
# from a script's URL takes the policy of that script's HTTP response, and GitHub Pages sends
# none): worker-src blob:. In it Pyodide compiles the calculator's WebAssembly:
# 'wasm-unsafe-eval' (WebAssembly.instantiate; no eval of JavaScript), which no other page needs.
FINDER_SOURCES = {"script-src": ["'wasm-unsafe-eval'"], "worker-src": ["blob:"]}
FINDER_SCRIPT_RE = re.compile(r'<script\b[^>]*\ssrc="[^"]*assets/finder\.js"')


def hosts_finder(html: str) -> bool:
    """Whether the page ``html`` (its content, or the whole page) loads the finder's script."""
    return FINDER_SCRIPT_RE.search(html) is not None


def script_hash(body: str) -> str:
    """The CSP source of an inline script: ``'sha256-<base64 of SHA-256 of its UTF-8 text>'``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii") + "'"


@functools.cache
def _material_env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources.files("material") / "templates")))


def use_bytecode_cache(cache: jinja2.BytecodeCache | None) -> None:
    """Load the theme's script templates through ``cache`` (a build passes its compiled templates:
    hooks/cache.py); the scripts rendered, and so their hashes, are the same."""
    _material_env().bytecode_cache = cache


@functools.cache
def _jupyter_scripts() -> tuple[str, ...]:
    folder = resources.files("mkdocs_jupyter").joinpath(*JUPYTER_TEMPLATE)
    template = folder.joinpath("notebook.html.j2").read_text(encoding="utf-8")
    written = [body for body in INLINE_SCRIPT_RE.findall(template) if "{{" not in body and "{%" not in body]
    included = ["\n" + folder.joinpath("assets", name).read_text(encoding="utf-8") for name in JUPYTER_INCLUDED_JS]
    return tuple(written + included)  # nbconvert's include_js: '<script >\n{file}</script>'


@functools.cache
def theme_scripts(base_url: str) -> tuple[str, ...]:
    """The text of every inline script the theme may write on a page whose ``base_url`` (as
    MkDocs gives it to the template: ``.``, ``..``, ``/REPO/`` on a 404 page) is given."""
    env = _material_env()
    folder = resources.files("material") / "templates" / "partials" / "javascripts"
    bodies = []
    for name in sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".html")):
        rendered = env.get_template(f"partials/javascripts/{name}").render(
            config={"extra": {}}, base_url=base_url, features=list(FEATURES)
        )
        bodies += INLINE_SCRIPT_RE.findall(rendered)
    return tuple(bodies) + _jupyter_scripts()


def theme_hashes(base_url: str) -> frozenset[str]:
    """``script_hash`` of every ``theme_scripts(base_url)``."""
    return frozenset(script_hash(body) for body in theme_scripts(base_url))


def policy(base_url: str, serving: bool = False, finder: bool = False) -> str:
    """The Content-Security-Policy of a page with this ``base_url``; ``finder``: the page hosts
    the finder (``FINDER_SOURCES``). ``serving``: the page is for ``mkdocs serve``, whose live
    reload injects an inline script that changes with every build, so scripts are
    ``'unsafe-inline'`` there instead of the theme's hashes (never in a built site:
    verify.artifact accepts only the hashed policy)."""
    parts = []
    for directive, listed in POLICY:
        sources = [*listed, *(FINDER_SOURCES.get(directive, []) if finder else [])]
        if directive == "script-src":
            sources = [*sources, "'unsafe-inline'"] if serving else [*sources, *sorted(theme_hashes(base_url))]
        parts.append(" ".join([directive, *sources]))
    return "; ".join(parts)
