"""Page content is text: it carries no script, style or event handler of its own.

The promise "the code on the page is the code that ran" is checked on the page's HTML, but
a reader sees the page through a browser. Raw HTML in a page's Markdown, in a data text or
in a notebook cell could run or restyle in the reader's browser and show other code than
the HTML holds, in one language only: a ``<script>`` that rewrites the ``nccl_check.py``
block, a ``<style>`` or ``style=`` that hides a token, an ``onerror=`` handler, a ``<base
href>`` that makes the theme's own relative scripts load from another origin, an SVG
``<script href>``. Scripts and styles belong to the theme and to files of ``docs/assets/``,
which are code and reviewed as such.

``check_page_content(html)`` reads the HTML a page's Markdown produced (``on_page_content``,
placeholders and data included) and refuses:

- a ``<script>`` other than JSON data (exactly ``type="application/json"``, content that
  ``json.loads`` reads, no ``src``) or a script
  file of the site's own ``assets/`` folder (``<script src="../assets/finder.js">``);
- a ``<link>`` other than a stylesheet file of that folder (``assets/finder.css``);
- ``<style>``, ``<meta>``, ``<base>`` and embedding elements (frames, objects);
- an ``on…`` event-handler attribute, a ``style`` or ``srcdoc`` attribute, and any attribute
  whose value is a ``javascript:`` or ``vbscript:`` URL (ASCII whitespace and controls
  removed first, as browsers do).

``check_notebook_cells(notebook, source)`` applies the same rule to the executed notebook a
notebook page is rendered from: every Markdown cell's source and every HTML, SVG or Markdown
output (mkdocs-jupyter inserts them as they are); outputs of other types than text, HTML,
SVG, Markdown and PNG/JPEG/GIF images (``application/javascript``, widgets) and raw cells are
refused, and the executed copy must hold its source notebook's cells. The notebook
template's own scripts and styles are outside the cells and not checked.

``check_code_shows_what_runs(html)`` reads every code block of a built page (and
``check_notebook_cells`` every code cell): code holds no character a reader cannot see or
that reorders what is shown, i.e. no format character (bidirectional overrides and
isolates, zero-width spaces and joiners, a soft hyphen, a byte-order mark), no control
character but tab and line feed, no line or paragraph separator. Python accepts them in
strings and comments, and the page copies them faithfully, so the code that ran is the code
copied, but not the code read ("Trojan Source", CVE-2021-42574: ``"user\u202e \u2066# admin\u2069 \u2066"``
shows as a comment and runs as a string).

Raises RenderError naming the element. Pure: no MkDocs import.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import unicodedata
from pathlib import Path
from posixpath import normpath
from urllib.parse import urlsplit

from selectolax.lexbor import LexborHTMLParser

from hooks.errors import RenderError
from hooks.render.code_blocks import code_blocks

FORBIDDEN_ELEMENTS = {"style", "meta", "base", "iframe", "frame", "frameset", "object", "embed", "applet", "portal"}
# What can be found by selector (fast); event handlers by their names in the text (a name
# cannot be written with entities), then every element is read.
SUSPECTS = ", ".join(["script", "link", *sorted(FORBIDDEN_ELEMENTS), "[style]", "[srcdoc]"])
URL_SUSPECTS = (  # read only when the page's text has a "script:"
    f"{SUSPECTS}, [href], [src], [action], [formaction], [data], [poster], [background], [to], [values], [from], [by]"
)
ATTRIBUTE_ON_RE = re.compile(r"on[^\s/>=]*\s*=")  # on a lowered text: an attribute named on…, if it starts a name
NAME_STARTS_AFTER = set(" \t\n\r\f/\"'\x00")  # what may precede an attribute's name (HTML tokenizer)
SCRIPT_SCHEMES = ("javascript:", "vbscript:")
URL_NOISE_RE = re.compile(r"[\x00-\x20]")  # browsers drop these inside a URL's scheme ("java\tscript:")
CHECKED_OUTPUTS = {"text/html", "image/svg+xml", "text/markdown"}
INERT_OUTPUTS = {"text/plain", "image/png", "image/jpeg", "image/gif"}
UNSEEN_CATEGORIES = {
    "Cf": "a format character",
    "Cc": "a control character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
UNSEEN_RE = re.compile(r"[^\t\n\x20-\x7e\u00a0-\u00ac\u00ae-\u05ff]")  # a quick filter: what may be unseen


def _site_asset(url: str, suffix: str) -> bool:
    """Whether ``url`` names a ``suffix`` file (``.js``, ``.css``) of the site's ``assets/`` folder (a relative URL)."""
    parts = urlsplit(url.strip())
    path = normpath(parts.path).lstrip("./")
    return not (parts.scheme or parts.netloc or parts.query) and path.endswith(suffix) and "/assets/" in f"/{path}"


def data_island_problem(node) -> str | None:
    """Why an inline ``<script>`` is not a JSON data island, or None: only exactly
    ``type="application/json"`` (no other spelling: a later rewrite of a case or a space must
    not be the only thing between data and code) with content ``json.loads`` reads."""
    kind = node.attributes.get("type")
    if kind != "application/json":
        of_type = "" if kind is None else f" of type {kind!r}"
        return f"an inline <script>{of_type} (only JSON data, type=\"application/json\" exactly, may be inline)"
    try:
        json.loads(node.text(deep=True))
    except ValueError:
        return "a <script type=\"application/json\"> whose content is not JSON"
    return None


def _problem(node) -> str | None:
    tag, attributes = node.tag, node.attributes
    if tag == "script":
        src = attributes.get("src")
        if src is None and (problem := data_island_problem(node)):
            return problem
        if src is not None and not _site_asset(src, ".js"):
            return f"a <script src={src!r}> that is not a script file of the site's assets/ folder"
    if tag == "link":
        href, rel = attributes.get("href") or "", (attributes.get("rel") or "").strip().lower()
        if rel != "stylesheet" or not _site_asset(href, ".css"):
            return f"a <link rel={rel!r} href={href!r}> that is not a stylesheet file of the site's assets/ folder"
    if tag in FORBIDDEN_ELEMENTS:
        return f"a <{tag}> element"
    for written, value in attributes.items():
        name = written.lower()
        if name.startswith("on"):
            return f"an event handler ({name}=) on <{tag}>"
        if name in ("style", "srcdoc"):
            return f"a {name}= attribute on <{tag}>"
        if value and URL_NOISE_RE.sub("", value).lower().startswith(SCRIPT_SCHEMES):
            return f"a script URL in {name}= on <{tag}>"
    return None


def check_page_content(html: str, what: str = "the page") -> None:
    """Raise RenderError for the first script, style or event handler in ``html`` (see the module's docstring)."""
    if "<" not in html:
        return
    tree = LexborHTMLParser(html)
    lowered = html.lower()
    if "xlink:" in lowered or any(
        lowered[m.start() - 1 : m.start()] in NAME_STARTS_AFTER for m in ATTRIBUTE_ON_RE.finditer(lowered)
    ):
        selector = "*"  # a possible event handler (a name cannot be written with entities): read every element
    else:
        text = (
            html_lib.unescape(lowered).replace("\t", "").replace("\n", "").replace("\r", "")
        )  # the URL parser drops them
        selector = URL_SUSPECTS if "script:" in text else SUSPECTS  # "java\tscript:", "&#106;avascript:"
    for node in tree.css(selector):
        problem = _problem(node)
        if problem:
            raise RenderError(
                f"{what} holds {problem}: page content is text; scripts and styles "
                "belong to the theme and to files of docs/assets/"
            )


def check_article_content(page_html: str) -> None:
    """``check_page_content`` on the content of a whole built page (its ``<article>``, where
    Markdown, data texts and the note go), after every rewrite of the page: run on the page
    as published, a later transform (interface strings, typography, the note) cannot bring
    back what the check of the Markdown's HTML refused. Raises RenderError."""
    for article in LexborHTMLParser(page_html).css("article"):
        check_page_content(article.html or "", "the page as published")


def unseen_character(code: str) -> str | None:
    """``U+XXXX (what it is)`` for the first character of ``code`` a reader cannot see, or None."""
    for match in UNSEEN_RE.finditer(code):
        kind = UNSEEN_CATEGORIES.get(unicodedata.category(match.group()))
        if kind:
            line = code.count("\n", 0, match.start()) + 1
            name = unicodedata.name(match.group(), "")
            return f"U+{ord(match.group()):04X} ({kind}{', ' + name if name else ''}) on line {line}"
    return None


def check_code_shows_what_runs(html: str) -> None:
    """Raise RenderError for a code block of ``html`` holding a character a reader cannot see."""
    for start, end in code_blocks(html):
        block = html[start:end]
        if UNSEEN_RE.search(block) or "&#" in block:
            code = html_lib.unescape(re.sub(r"<[^>]*>", "", block))
            unseen = unseen_character(code)
            if unseen:
                first = code.strip().splitlines()[0][:60] if code.strip() else ""
                raise RenderError(f"the code block starting {first!r} holds {unseen}: code shows what runs")


def check_notebook_cells(notebook: Path, source: Path | None = None) -> None:
    """Raise RenderError for a Markdown cell or an output of ``notebook`` (an executed .ipynb)
    that holds a script, style or event handler, an output type that carries code, or a raw
    cell (mkdocs-jupyter writes a raw cell's text into the page as it is). With ``source``
    (the notebook ``notebook`` was executed from), also unless both hold the same cells: the
    same types and sources, in order."""
    cells = _cells(notebook)
    if source is not None:
        _check_same_cells(cells, _cells(source))
    for number, cell in enumerate(cells, start=1):
        if cell.get("cell_type") == "raw":
            raise RenderError(
                f"cell {number} is a raw cell: its text would reach the page unchecked; "
                "write it as a Markdown or code cell"
            )
        if cell.get("cell_type") == "markdown":
            check_page_content(_text(cell.get("source")), f"Markdown cell {number}")
        elif cell.get("cell_type") == "code" and (unseen := unseen_character(_text(cell.get("source")))):
            raise RenderError(f"code cell {number} holds {unseen}: code shows what runs")
        for output in cell.get("outputs", []):
            for kind, data in (output.get("data") or {}).items():
                if kind in CHECKED_OUTPUTS:
                    check_page_content(_text(data), f"the {kind} output of cell {number}")
                elif kind not in INERT_OUTPUTS:
                    raise RenderError(
                        f"cell {number} has an output of type {kind}: a page shows text, HTML "
                        f"and images ({', '.join(sorted(CHECKED_OUTPUTS | INERT_OUTPUTS))}), no code"
                    )


def _cells(notebook: Path) -> list[dict]:
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError) as exc:
        raise RenderError(f"{notebook.name}: not a readable notebook ({exc})") from None
    return cells if isinstance(cells, list) else []


def _check_same_cells(executed: list[dict], source: list[dict]) -> None:
    shape = [(cell.get("cell_type"), _text(cell.get("source"))) for cell in source]
    for number, (cell, expected) in enumerate(zip(executed, shape, strict=False), start=1):
        if (cell.get("cell_type"), _text(cell.get("source"))) != expected:
            raise RenderError(
                f"cell {number} of the executed copy is not the notebook's cell {number}: "
                "a page shows only what its notebook ran"
            )
    if len(executed) != len(shape):
        raise RenderError(
            f"the executed copy has {len(executed)} cells, the notebook {len(shape)}: "
            "a page shows only what its notebook ran"
        )


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")
