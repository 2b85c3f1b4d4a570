"""Checks of what MkDocs lets through in silence, each raising RenderError with one line.

- ``check_front_matter``: MkDocs ignores front matter that does not parse (``title: [unclosed``)
  and renders it as text; here it must parse (no duplicate keys) and match
  ``hooks.data.schemas.FrontMatter``.
- ``check_nav_translations``: static-i18n shows the Italian title of a nav entry that has no
  ``nav_translations`` entry; here every other language must translate every entry.
- ``check_notebook_links``: MkDocs validates the links of Markdown pages only; mkdocs-jupyter
  renders a notebook's Markdown cells itself, so their links are checked here against the
  site's files (the path; anchors are not checked), and a link with a scheme must be
  ``http``, ``https`` or ``mailto`` (a cell's ``[text](javascript:…)`` has no ``<`` for the
  cell check to read, and mkdocs-jupyter makes it a live link).

Pure: no MkDocs import (the glue passes plain values).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from posixpath import normpath
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser

from hooks.data.load import parse_yaml, validate
from hooks.errors import RenderError

LINK_SCHEMES = ("http", "https", "mailto")  # of a notebook Markdown cell's links; relative links have none
URL_NOISE_RE = re.compile(r"[\x00-\x20]")  # what the URL parser drops before reading a scheme ("java\tscript:")
FRONT_MATTER_RE = re.compile(r"^-{3}[ \t]*\n(.*?\n)(?:\.{3}|-{3})[ \t]*\n", re.DOTALL)  # mkdocs.utils.meta.YAML_RE


def check_front_matter(source: str) -> None:
    """Raise RenderError if the page source opens with front matter that is not valid YAML
    key: value pairs of ``FrontMatter`` (line numbers are the page's)."""
    match = FRONT_MATTER_RE.match(source)
    if match is None:
        return
    data = parse_yaml("\n" + match.group(1), "front matter")
    if not isinstance(data, dict):
        raise RenderError(f"front matter: expected `key: value` lines, got {type(data).__name__}")
    validate(data, "front matter", "front matter", match.group(1))


def nav_titles(nav: list | None) -> list[str]:
    """Every title of a MkDocs ``nav`` (sections and pages), in order."""
    titles = []
    for entry in nav or []:
        if isinstance(entry, dict):
            for title, value in entry.items():
                titles.append(title)
                if isinstance(value, list):
                    titles += nav_titles(value)
    return titles


def check_nav_translations(nav: list | None, translations: Mapping[str, Mapping[str, str] | None]) -> None:
    """``translations``: language -> its ``nav_translations`` (every language but the default).
    Raise RenderError for a nav entry without a title in a language, or a translation of no entry."""
    titles = nav_titles(nav)
    for lang, given in translations.items():
        where = f"mkdocs.yml: plugins.i18n.languages ({lang}).nav_translations"
        table = given or {}
        missing = [title for title in titles if not isinstance(table.get(title), str) or not table[title].strip()]
        if missing:
            raise RenderError(f"{where}: no {lang} title for the nav entry {missing[0]!r}")
        stale = [title for title in table if title not in titles]
        if stale:
            raise RenderError(f"{where}: translates {stale[0]!r}, which is not a nav entry")


def check_notebook_links(html: str, page_url: str, site_urls: Collection[str]) -> None:
    """Raise RenderError for a relative link of a notebook page's ``html`` that leads to no
    file of the site (``site_urls``: the URLs of its pages and files, as MkDocs writes them)."""
    for anchor in LexborHTMLParser(html).css("a[href]"):
        href = anchor.attributes.get("href") or ""
        parts = urlsplit(URL_NOISE_RE.sub("", href))
        if parts.scheme and parts.scheme.lower() not in LINK_SCHEMES:
            raise RenderError(
                f"a Markdown cell links to {href!r}: a link's scheme is one of {', '.join(LINK_SCHEMES)} "
                "(a javascript: link runs code in the reader's browser)"
            )
        if parts.scheme or parts.netloc or not parts.path:
            continue
        target = normpath(urljoin(f"/{page_url}", parts.path)).lstrip("/")
        target = "" if target == "." else target
        candidates = {target, f"{target}/", target.removesuffix("index.html"), f"{target}/index.html"}
        if not candidates & set(site_urls):
            raise RenderError(
                f"a Markdown cell links to {href!r}, which leads to no page or file of the site ({target or '/'})"
            )
