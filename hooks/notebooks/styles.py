"""mkdocs-jupyter's stylesheets served as files of the site, not copied into every notebook page.

mkdocs-jupyter (0.26) writes JupyterLab's stylesheet (``index.css``, 574 KB) and its theme
(``theme-light.css``) into each notebook page, through nbconvert's ``include_css``:
``<style type="text/css">\\n{the file}</style>``. Inlined, they are half of each notebook
page's HTML, fetched again for every notebook and language, and parsed again by every
step of the build that reads the page (search, checks). ``stylesheet_files`` gives the site
the package's files (``assets/notebook/<name>``) and ``link_stylesheets`` replaces each
exact inline copy with a ``<link>`` to its file. A page whose inline style differs from the
package's file in one byte keeps it inline: nothing is served that the page did not hold.

Pure: no MkDocs import.
"""

from __future__ import annotations

import functools
import html as html_lib
import re
from importlib import resources

from hooks.checks.external_loads import check_stylesheet
from hooks.errors import RenderError

PACKAGE_ASSETS = ("templates", "mkdocs_html", "assets")  # in the mkdocs_jupyter package
STYLESHEETS = ("index.css", "theme-light.css", "theme-dark.css")
SITE_FOLDER = "assets/notebook"


@functools.cache  # the installed package does not change while a process builds
def stylesheet_files() -> dict[str, str]:
    """``{uri in the site: text}`` of every mkdocs-jupyter stylesheet a notebook page may inline.
    Raises RenderError if mkdocs-jupyter no longer ships one."""
    folder = resources.files("mkdocs_jupyter").joinpath(*PACKAGE_ASSETS)
    try:
        return {f"{SITE_FOLDER}/{name}": folder.joinpath(name).read_text(encoding="utf-8") for name in STYLESHEETS}
    except (OSError, UnicodeDecodeError) as exc:
        raise RenderError(f"mkdocs-jupyter's stylesheet {getattr(exc, 'filename', '') or exc} cannot be read") from None


def checked_stylesheets(site_origin: str = "") -> dict[str, str]:
    """``stylesheet_files()``, each checked to load nothing from another origin than
    ``site_origin`` (``hooks.checks.external_loads.check_stylesheet``). Raises RenderError naming the file."""
    files = stylesheet_files()
    for uri, css in files.items():
        if (css, site_origin) in _passed:
            continue  # the other language's pass of this process: the same text, checked
        try:
            check_stylesheet(css, site_origin)
        except RenderError as exc:
            raise RenderError(f"{uri} (mkdocs-jupyter's): {exc}") from None
        _passed.add((css, site_origin))
    return files


_passed: set[tuple[str, str]] = set()  # (stylesheet text, site origin) that check_stylesheet passed in this process


def inline_form(css: str) -> str:
    """The ``<style>`` element nbconvert's ``include_css`` writes for ``css``."""
    return f'<style type="text/css">\n{css}</style>'


def link_stylesheets(html: str, files: dict[str, str], href) -> str:
    """``html`` with each exact inline copy of a stylesheet of ``files`` (uri -> text) replaced
    by ``<link rel="stylesheet">``; ``href(uri)`` gives the URL the page links to."""
    for uri, css in files.items():
        inline = inline_form(css)
        if inline in html:
            html = html.replace(inline, f'<link rel="stylesheet" href="{html_lib.escape(href(uri))}">')
    return html


# mkdocs-jupyter (0.26, nbconvert2.py) appends f"<style>{resources['inlining']['css']}</style>":
# the Python repr of a list of the Pygments stylesheet the template already inlined, i.e. CSS
# with literal "\n" escapes that no rule matches. A style whose whole text is such a repr is
# dropped (verify.artifact refuses backslashes in a <style>: CSS escapes can spell anything).
LIST_REPR_STYLE_RE = re.compile(r"\s*<style>\s*\[(?:'(?:[^'\\]|\\.)*'(?:,\s*)?)*\]\s*</style>")
# The same element from its literal start, which the regular expression engine finds by a fast
# scan (``\s*`` first makes it try every position of a 1 MB page): the whitespace before it is
# added back by drop_list_repr_style.
_LIST_REPR_STYLE_TAIL_RE = re.compile(LIST_REPR_STYLE_RE.pattern.removeprefix(r"\s*"))


def drop_list_repr_style(html: str) -> str:
    """``html`` without mkdocs-jupyter's ``<style>`` holding a Python list's repr, and the
    whitespace before it: ``LIST_REPR_STYLE_RE.sub("", html)``, found from ``<style>``."""
    kept, end = [], 0
    for match in _LIST_REPR_STYLE_TAIL_RE.finditer(html):
        start = match.start()
        while start > end and html[start - 1].isspace():  # what \s* takes (str.isspace: the same class)
            start -= 1
        kept.append(html[end:start])
        end = match.end()
    return "".join(kept) + html[end:] if kept else html
