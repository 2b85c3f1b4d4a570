"""A notebook page's weight: its plots as image files, its stylesheet only what it uses.

mkdocs-jupyter writes each plot into the page as a base64 ``data:`` URI (a third larger
than the PNG, compressing poorly, paid before the first plot shows) and nbconvert inlines
JupyterLab's whole stylesheet (575 KB, most of it rules for widgets and panels no page
has). Here, for one page:

- ``plots_as_files``: each ``<img src="data:image/png;base64,...">`` becomes a PNG file
  named by its SHA-256 (``assets/notebook/plots/<sha>.png``), the ``<img>`` keeps its alt
  text and width, gets the height of the PNG's proportions (no layout shift) and, after the
  first, ``loading="lazy"``;
- ``used_rules``: of a stylesheet, the rules whose selectors match some element of the
  page (tinycss2 parses, soupsieve matches; a selector soupsieve cannot read is kept, as
  are @font-face, @keyframes and the rules of ``:root``, ``html`` and ``body``); a
  ``@media`` or ``@supports`` block keeps its used rules.

Pure: the caller writes the files (``write(uri, bytes)``). No MkDocs import.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import html as html_lib
import os
import re
import struct
from pathlib import Path

from hooks.cache import package_versions
from hooks.errors import RenderError

PLOTS_FOLDER = "assets/notebook/plots"
IMG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# States and parts a static page's elements are not in when matched here: removed from a
# selector before matching (the rule is then kept if its element exists).
DYNAMIC = re.compile(
    r"::?(?:-[a-z]+-)?(?:hover|focus(?:-within|-visible)?|active|visited|link|target|checked|disabled|"
    r"enabled|placeholder(?:-shown)?|selection|before|after|first-line|first-letter|marker|backdrop|"
    r"scrollbar(?:-[a-z-]+)?|[a-z-]*autofill|indeterminate|invalid|valid|read-only|focus-ring)\b(?!-)",
    re.IGNORECASE,
)
REQUIRED = re.compile(r"([.#])(-?[_a-zA-Z][\w-]*)|\[\s*([_a-zA-Z][\w-]*)|(?:^|(?<=[\s>+~]))([a-zA-Z][\w-]*)")
PARENTHESES = re.compile(r"\([^()]*\)")


def _png_size(data: bytes) -> tuple[int, int]:
    if not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise RenderError("a notebook plot is not a PNG image")
    return struct.unpack(">II", data[16:24])


def plots_as_files(html: str, write, href) -> str:
    """``html`` with each base64 PNG ``<img>`` served as a file. ``write(uri, data)`` stores
    a file of the site; ``href(uri)`` gives the URL the page links to. Raises RenderError for
    a data URI that is not valid base64 of a PNG."""
    from selectolax.lexbor import LexborHTMLParser

    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        node = LexborHTMLParser(match.group(0)).css_first("img")
        attrs = dict(node.attributes) if node is not None else {}
        src = attrs.get("src") or ""
        if not src.startswith("data:image/png;base64,"):
            return match.group(0)
        try:
            data = base64.b64decode(src.split(",", 1)[1], validate=True)
        except (binascii.Error, ValueError):
            raise RenderError("a notebook plot's data URI is not base64") from None
        width_px, height_px = _png_size(data)
        uri = f"{PLOTS_FOLDER}/{hashlib.sha256(data).hexdigest()[:20]}.png"
        write(uri, data)
        attrs["src"] = href(uri)
        written = attrs.get("width") or ""
        shown = int(written) if written.isdigit() else width_px
        attrs["width"], attrs["height"] = str(shown), str(round(shown * height_px / width_px))
        if count:
            attrs["loading"] = "lazy"  # below the fold: fetched when the reader scrolls near it
        attrs["decoding"] = "async"
        count += 1
        return "<img " + " ".join(f'{k}="{html_lib.escape(v or "", quote=True)}"' for k, v in attrs.items()) + ">"

    return IMG.sub(replace, html)


class _PageIndex:
    """What a page holds: its tags, classes and ids (a fast first filter), and its tree."""

    def __init__(self, html: str):
        from bs4 import BeautifulSoup

        self.soup = BeautifulSoup(f"<!DOCTYPE html><html><head></head><body>{html}</body></html>", "html.parser")
        self._memo: dict[str, bool] = {}
        elements = self.soup.find_all(True)
        self.names = {"." + c for el in elements for c in el.get("class") or []}
        self.names |= {f"#{el['id']}" for el in elements if el.get("id")}
        self.names |= {"[" + name.lower() for el in elements for name in el.attrs}
        self.names |= {el.name.lower() for el in elements}

    def _required(self, selector: str) -> set[str]:
        """Classes, ids, attributes and tags every element ``selector`` matches needs (what
        sits inside parentheses, :not() and :is() alike, counts for nothing)."""
        while PARENTHESES.search(selector):
            selector = PARENTHESES.sub("", selector)
        needed = set()
        for kind, name, attribute, tag in REQUIRED.findall(selector):
            needed.add(kind + name if kind else "[" + attribute.lower() if attribute else tag.lower())
        return needed

    def matches(self, selector: str) -> bool:
        if selector not in self._memo:
            self._memo[selector] = self._matches(selector)
        return self._memo[selector]

    def _matches(self, selector: str) -> bool:
        plain = DYNAMIC.sub("", selector).strip()
        if not self._required(plain) <= self.names:
            return False  # a class, id, attribute or element the page does not have
        plain = re.sub(r"(^|[\s>+~,(])(?=[\s>+~,)]|$)", r"\1*", plain)  # "a > :x" left "a > " -> "a > *"
        import soupsieve

        try:
            return self.soup.select_one(plain) is not None
        except (soupsieve.SelectorSyntaxError, NotImplementedError, ValueError):  # keep what we cannot read
            return True


def _kept(rules, page: _PageIndex) -> list[str]:
    import tinycss2

    out = []
    for rule in rules:
        if rule.type == "qualified-rule":
            selectors = [s.strip() for s in tinycss2.serialize(rule.prelude).split(",") if s.strip()]
            if any(page.matches(s) for s in selectors):
                out.append(rule.serialize())
        elif rule.type == "at-rule" and rule.lower_at_keyword in {"media", "supports"} and rule.content is not None:
            inner = _kept(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True), page)
            if inner:
                out.append(
                    f"@{rule.at_keyword} {tinycss2.serialize(rule.prelude).strip()} {{\n" + "\n".join(inner) + "\n}"
                )
        elif rule.type == "at-rule":
            out.append(rule.serialize())
    return out


@functools.lru_cache(maxsize=8)  # the package's stylesheets, parsed once per process (0.7 s)
def _parsed(css: str) -> tuple:
    import tinycss2

    return tuple(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True))


def used_rules(css: str, html: str) -> str:
    """The rules of ``css`` that ``html`` (a page's body content) uses, in their order."""
    return "\n".join(_kept(_parsed(css), _PageIndex(html))) + "\n"


STYLES_FOLDER = "assets/notebook"


CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "notebook-css"


LIBRARIES = ("tinycss2", "webencodings", "soupsieve", "beautifulsoup4")  # what used_rules parses and matches with


@functools.cache  # a process does not see its packages change
def _tool_versions() -> bytes:
    return "\0".join(package_versions(LIBRARIES)).encode()


def _cached_rules(css_texts: list[str], html: str, cache_dir: Path | None = None) -> str:
    """``used_rules`` of each stylesheet, joined. With ``cache_dir`` (a development build passes
    ``CACHE_DIR``; a publication build none, since anyone who writes the checkout writes
    there), kept there under the SHA-256 of every input: this module, Python and the
    versions of ``LIBRARIES``, each stylesheet and the page."""
    if cache_dir is None:
        return "".join(used_rules(css, html) for css in css_texts)
    digest = hashlib.sha256(b"notebook-css\0" + Path(__file__).read_bytes() + b"\0" + _tool_versions())
    for text in (*css_texts, html):
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big") + data)
    cached = cache_dir / f"{digest.hexdigest()}.css"
    try:
        return cached.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        pass  # computed below
    out = "".join(used_rules(css, html) for css in css_texts)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(out, encoding="utf-8")
        temporary.replace(cached)
    except OSError:
        pass
    return out


def own_stylesheet(html: str, files: dict[str, str], write, href, check, cache_dir: Path | None = None) -> str:
    """``html`` with the exact inline copies of ``files``' stylesheets (uri -> text, as
    nbconvert's ``include_css`` writes them) replaced by one ``<link>`` to a stylesheet of
    the rules the page uses (``assets/notebook/page.<sha>.css``, written with
    ``write(uri, data)``, checked with ``check(css)``). A style that differs in one byte
    from a package file stays inline. ``href(uri)``: the URL the page links to; ``cache_dir``:
    see ``_cached_rules``."""
    from hooks.notebooks.styles import inline_form

    found = sorted(
        (html.index(inline_form(css)), inline_form(css), css) for css in files.values() if inline_form(css) in html
    )
    if not found:
        return html
    first = found[0][0]
    for _, inline, _ in found:
        html = html.replace(inline, "\0" if html.index(inline) == first else "", 1)
    css = _cached_rules([css for _, _, css in found], html.replace("\0", ""), cache_dir)
    check(css)
    data = css.encode("utf-8")
    uri = f"{STYLES_FOLDER}/page.{hashlib.sha256(data).hexdigest()[:16]}.css"
    write(uri, data)
    return html.replace("\0", f'<link rel="stylesheet" href="{html_lib.escape(href(uri))}">', 1)
