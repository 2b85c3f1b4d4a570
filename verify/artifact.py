"""The check of the site as it will be uploaded: the last step before publishing, in a
process of its own, after the build and every process it started have ended.

``python -m verify.artifact SITE_DIR [--manifest FILE] [--tar FILE] [--snippets DIR] [--calculator DIR]`` reads
every file of ``SITE_DIR`` once and refuses the site (exit 2, one line naming the file)
unless, by allow-list:

- every file is a regular file whose path matches a row of ``FILE_TYPES`` (an ``.htm``, an
  ``.svg``, a file of an unlisted type or folder fails);
- every page (``*.html``) passes ``check_page``: its ``<head>`` opens with the
  Content-Security-Policy of ``verify.theme_scripts``; each ``<script>`` is a file of the
  site (``src``, relative, an existing ``.js`` file), a JSON data island (exactly
  ``type="application/json"``, content that is JSON) or one of the theme's own inline
  scripts (its hash in ``theme_hashes``); each ``<style>`` only sets the properties Pygments
  writes; everything else passes the allow-list sanitiser nh3 (ammonia) unchanged: only the
  tags of ``TAGS``, the attributes of ``ATTRIBUTES`` (and ``data-md-``/``aria-`` ones), the URL
  schemes of ``URL_SCHEMES`` (``data:`` only for an image's PNG, JPEG or GIF), ids that are unique on the page and not ``__code_…`` (the id
  Material's copy button looks for);
- the code the finder's worker runs is the reviewed code (``check_calculator``): every file
  under ``assets/pyodide/`` is the pinned npm package's (``PYODIDE_SHA256``; the WebAssembly
  once unpacked), and so is every file under ``assets/fzstd/`` (``FZSTD_SHA256``), the
  standard library the site ships holds only modules of the package's, each once, and its
  lock file is the package's without packages (``check_lock_file``), and
  ``assets/vram.zip.zst`` holds exactly the checkout's ``vram/*.py`` and the finder models'
  ``config.json`` (a file the theme's ``overrides/assets/`` or ``docs/assets/`` put there
  instead is refused); each module is byte for byte what ``verify/precompile.py`` compiles
  from the package's or the checkout's file with the pinned package's own CPython (run here
  again, under Node.js), each config.json the checkout's file; each of the two archives is
  byte for byte what the build's zip writer writes of those members (``check_canonical``,
  ``verify/archive.py``), so the worker's ``zipimport`` cannot read other members from it than
  this ``zipfile`` does; a packed file (``.zst``) is one Zstandard frame, checked as the
  worker unpacks it (``unpacked``);
- the theme's own files (``assets/`` paths of mkdocs-material's ``templates/``) are the
  installed theme's bytes (``check_theme_files``): ``overrides/assets/`` adds, never replaces;
- every code block of a Markdown page is an include (``check_code_blocks_are_snippets``): its
  text is a file of ``snippets/`` or a section of one (default language), or the same code to
  its tool as the default language's block at the same place, with only Pygments' markup;
  every Python block uses only the names ``verify/block_names.py`` lists, and on a notebook
  page the blocks, with the cells the page does not show, only those it lists for notebooks
  (``check_cells``: no cell reads the cells' text);
- every file copied from ``docs/`` or ``overrides/`` is the checkout's, every script and
  stylesheet has a source (``check_static_files``), and each search index holds only the
  markup Material's search keeps (``check_search_indexes``): the site as uploaded, whatever a
  process left running by the build rewrote;
- every titled code block (``title="nccl_check.py"``) shows and copies what the extraction
  reads: its code holds only Pygments' ``<span class>`` markup (nothing ``hidden``, no ids),
  so the text a browser shows and the copy button copies is ``code.text()``; in the
  default language that text is the file ``snippets/**/<title>`` byte for byte, in every
  other language the same code to its tool (``verify.extract.compare_code``).

Then it writes ``--manifest`` (JSON: every file's path, size and SHA-256) and ``--tar`` (the
files as read and hashed, the archive GitHub Pages deploys): the upload is what was checked,
whatever a process left over from the build writes into ``SITE_DIR`` afterwards.

Allow-lists: ``FILE_TYPES``, ``TAGS``, ``ATTRIBUTES``, ``URL_SCHEMES``, ``STYLE_PROPERTIES``,
``PYODIDE_SHA256`` here; the policy and theme scripts in ``verify/theme_scripts.py``. A contributor who needs a
new tag, attribute or file type adds it to the table here, with the reason (README,
"Verified publishing").
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import io
import json
import re
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath
from posixpath import normpath
from typing import Any
from urllib.parse import urlsplit

import nh3
import yaml
from selectolax.lexbor import LexborHTMLParser, LexborNode

from verify import archive as zip_writer, precompile
from verify.block_names import PYTHON_FENCES, BlockNameError, check_cells, check_names
from verify.extract import ExtractError, blocks_in_html, compare_code
from verify.languages import DEFAULT_LANGUAGE, LANGUAGES
from verify.theme_scripts import hosts_finder, policy, script_hash, theme_hashes

# ------------------------------------------------------------------ allow-lists
# Every file the site may hold: (pattern of its path under the site, fnmatch: * crosses
# folders; what it is). Pages are checked below; scripts and stylesheets are the theme's and
# ours (reviewed as code); no SVG (a browser runs the scripts of an SVG opened directly).
FILE_TYPES: tuple[tuple[str, str], ...] = (
    ("*.html", "a page (check_page)"),
    ("assets/*.js", "a script of the theme or of docs/assets, overrides/assets"),
    ("assets/*.css", "a stylesheet of the theme, docs/assets, overrides/assets or mkdocs-jupyter"),
    ("assets/javascripts/*.js.map", "Material's source maps"),
    ("assets/stylesheets/*.css.map", "Material's source maps"),
    ("assets/images/*.png", "Material's favicon"),
    ("assets/notebook/plots/*.png", "a notebook's plot, its executed output (hooks/notebooks/weight.py)"),
    ("assets/finder.json", "the finder's data (hooks/finder/compute.py)"),
    ("assets/finder-results.json", "the finder's reference answers (hooks/finder/compute.py)"),
    (
        "assets/calibration/plot-*.png",
        "the formulas page's plot of the published runs (hooks/render/calibration_plot.py)",
    ),
    ("search/search_index.json", "the default language's search index"),
    ("*/search/search_index.json", "another language's search index"),
    ("sitemap.xml", "the sitemap"),
    ("sitemap.xml.gz", "the sitemap, compressed"),
    # the calculator in the reader's browser (issue 20): Pyodide's runtime, self-hosted, and the
    # calculator's own code, compiled; their bytes are checked too (check_calculator)
    ("assets/pyodide/pyodide.mjs", "Pyodide's loader (PYODIDE_SHA256)"),
    ("assets/pyodide/pyodide.asm.mjs", "Pyodide's runtime (PYODIDE_SHA256)"),
    ("assets/pyodide/pyodide.asm.wasm.zst", "Pyodide's runtime, packed (PYODIDE_SHA256 unpacked)"),
    ("assets/pyodide-stdlib.zip.zst", "the part of Pyodide's standard library the worker imports (STDLIB_ARCHIVE)"),
    ("assets/pyodide-lock.json", "Pyodide's lock file without packages (LOCK_FILE)"),
    ("assets/vram.zip.zst", "the calculator's code for Pyodide, compiled (CALCULATOR_BUNDLE)"),
    ("assets/fzstd/index.mjs", "fzstd, which unpacks the .zst files in the worker (FZSTD_SHA256)"),
    ("assets/fzstd/LICENSE", "fzstd's licence (FZSTD_SHA256)"),
)

# The elements our Markdown extensions, Material's templates and the notebooks' template
# and outputs produce. <script> and <style> are read before the sanitiser (see check_page).
TAGS = frozenset(
    {
        "a",
        "abbr",
        "article",
        "aside",
        "b",
        "blockquote",
        "br",
        "button",
        "caption",
        "clipboard-copy",
        "code",
        "col",
        "colgroup",
        "dd",
        "del",
        "details",
        "div",
        "dl",
        "dt",
        "em",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "head",
        "header",
        "hr",
        "i",
        "img",
        "input",
        "ins",
        "kbd",
        "label",
        "legend",
        "li",
        "link",
        "main",
        "mark",
        "meta",
        "nav",
        "ol",
        "option",
        "p",
        "path",
        "pre",
        "q",
        "s",
        "select",
        "small",
        "span",
        "strong",
        "sub",
        "summary",
        "sup",
        "svg",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "title",
        "tr",
        "u",
        "ul",
        "var",
        "datalist",
        "optgroup",
        "output",
        "progress",
        "textarea",  # the finder's form (issue 20): inert controls
    }
)
# Attributes every element may carry, then those of one element. data-md-* (Material's
# state) and aria-* pass by prefix; no other data-*: Material's copy button copies a
# [data-copy] ancestor instead of the code.
GLOBAL_ATTRIBUTES = frozenset(
    {"class", "id", "title", "lang", "dir", "role", "hidden", "tabindex", "translate", "data-search-exclude"}
)
ATTRIBUTES: dict[str, frozenset[str]] = {
    "a": frozenset({"href", "hreflang", "rel", "target"}),
    "abbr": frozenset({"title"}),
    "body": frozenset(),
    "button": frozenset({"type", "disabled", "name", "value"}),
    "clipboard-copy": frozenset({"for", ","}),  # "," : a typo of mkdocs-jupyter's template, inert
    "div": frozenset(
        {
            "data-jp-theme-light",
            "data-jp-theme-name",
            "data-mime-type",
            "data-type",
            "data-kinds",
            "data-tabs",
            "data-snippet-sha256",
        }
    ),  # the last: the verification note (hooks/render/verification_note.py)
    "details": frozenset({"open"}),
    "fieldset": frozenset({"disabled", "name"}),
    "form": frozenset({"name", "data-json"}),
    "img": frozenset(
        {"alt", "src", "width", "height", "loading", "decoding"}
    ),  # a notebook's plots: lazy below the first
    "input": frozenset(
        {
            "autocapitalize",
            "autocomplete",
            "autocorrect",
            "checked",
            "name",
            "placeholder",
            "required",
            "spellcheck",
            "type",
            "value",
            "min",
            "max",
            "step",
            "inputmode",
            "pattern",
            "list",
            "disabled",
            "readonly",
            "size",
            "maxlength",
            "minlength",
            "multiple",
            "accept",
        }
    ),
    "label": frozenset({"for"}),
    "link": frozenset({"href", "hreflang", "rel"}),
    "meta": frozenset({"charset", "content", "name", "http-equiv"}),  # http-equiv: the policy only, first in <head>
    "ol": frozenset({"start"}),
    "optgroup": frozenset({"label", "disabled"}),
    "option": frozenset({"selected", "value", "disabled", "label"}),
    "output": frozenset({"for", "name"}),
    "progress": frozenset({"max", "value"}),
    "p": frozenset({"aria-live"}),
    "path": frozenset({"d", "fill", "fill-rule"}),
    "select": frozenset({"name", "disabled", "required", "multiple", "size"}),
    "svg": frozenset({"height", "version", "viewBox", "width", "xmlns", "data-view-component"}),
    "td": frozenset(
        {"align", "colspan", "rowspan", "data-label"}
    ),  # its column's heading: the phone layout (guide.css)
    "textarea": frozenset(
        {"name", "rows", "cols", "spellcheck", "autocomplete", "placeholder", "readonly", "disabled"}
    ),
    "th": frozenset({"align", "colspan", "rowspan", "scope"}),
}
ATTRIBUTE_PREFIXES = frozenset({"data-md-", "aria-"})
URL_SCHEMES = frozenset({"http", "https", "mailto"})  # and relative URLs; data: only for images (check_page)
URL_ATTRIBUTES = frozenset({"href", "src"})  # the attributes of ATTRIBUTES that hold a URL
RESERVED_ID_RE = re.compile(r"__code_")  # Material's copy button copies the first #__code_N it finds
# What Pygments' stylesheets (the notebook cells' highlighting) set, and nothing that hides.
STYLE_PROPERTIES = frozenset(
    {
        "color",
        "background",
        "background-color",
        "font-weight",
        "font-style",
        "text-decoration",
        "border",
        "line-height",
        "padding-left",
        "padding-right",
    }
)
# The files the finder's worker runs (hooks/finder/pyodide_assets.py): the npm package
# pyodide@314.0.7 (package-lock.json) as `npm ci` installs it, by SHA-256 of each file; a new
# version updates these (tests/verify/test_artifact_calculator.py compares them with
# node_modules/pyodide). A file of the site under assets/pyodide/ is one of them, byte for byte,
# or packed (PACKED: Zstandard) into the file's name + ".zst", unpacking to it byte for byte.
PYODIDE_DIR = "assets/pyodide/"
PYODIDE_SHA256 = {
    "pyodide.mjs": "6f1d60f7bf529beb300f0f47983c921d3982363640ba20af0e38efdddbc66109",
    "pyodide.asm.mjs": "f7cdc8ece80678ceb712f8e65ebe6d3a83203a180c399865f49612a051693635",
    "pyodide.asm.wasm": "cc36e3cab04fdfc9a63ff13eb52eae2b911bf46c025cc7b281f394bd3de1d5e6",
    "python_stdlib.zip": "fa1957e5777068fc4f7437f96d860ae2fbe9c19732ba06c84e004ec16dd7dd7a",
    "pyodide-lock.json": "5dc2fc119108bc148c7457dc86e7675b5c87e1cafd420b9c34c1eaef7b36c010",
}
# shipped whole (the wasm packed); the other two trimmed
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm")
PACKED = ".zst"
PYODIDE_PACKED = ("pyodide.asm.wasm",)  # shipped packed, as "<name>.zst"; the others as they are
PACKED_LIMIT = 64 * 2**20  # bytes a packed file may unpack to (the largest, the WebAssembly, is 9.2 MiB)
# The npm package fzstd@0.1.1 (package-lock.json), which unpacks them in the worker: site path
# under assets/fzstd/ -> (its file in the package, SHA-256); tests/verify/test_artifact_calculator.py
# compares them with node_modules/fzstd.
FZSTD_DIR = "assets/fzstd/"
FZSTD_SHA256 = {
    "index.mjs": ("esm/index.mjs", "1a901fc5a58c349bbdb4f2aa1e688637ef56891ec58243a9f0cd863166b0d2a4"),
    "LICENSE": ("LICENSE", "62249119bb7df6e54300f37a37145c26a6d4420410aac8881a119c5b427cf751"),
}
# The package's standard library and lock file, as the site ships them (hooks/finder/pyodide_assets.py):
# STDLIB_ARCHIVE holds modules of the package's python_stdlib.zip, each once, compiled
# (verify/precompile.py: <name>.pyc, byte for byte what the package compiles of <name>.py);
# LOCK_FILE is the package's lock file's "info" with no packages. Both are read from the
# package folder (node_modules/pyodide), itself checked against PYODIDE_SHA256 first.
STDLIB_ARCHIVE = "assets/pyodide-stdlib.zip.zst"
LOCK_FILE = "assets/pyodide-lock.json"
PYODIDE_PACKAGE = Path(__file__).resolve().parent.parent / "node_modules" / "pyodide"
# The calculator's archive the worker imports (packed): exactly vram/<name>.pyc for every
# vram/*.py of the checkout (compiled from it, verify/precompile.py) and configs/<model>.json
# for every model of snippets/data/models.yaml (the bytes of that file), and nothing else.
CALCULATOR_BUNDLE = "assets/vram.zip.zst"
CALCULATOR_DIR = Path(__file__).resolve().parent.parent / "vram"
DOCS_DIR = Path(__file__).resolve().parent.parent / "docs"  # which pages are notebooks (notebook_pages); static files
OVERRIDES_DIR = (
    Path(__file__).resolve().parent.parent / "overrides"
)  # the theme's custom folder (mkdocs.yml: custom_dir)
HTML_ATTRIBUTES = frozenset({"class", "lang"})  # <html>
BODY_ATTRIBUTES = frozenset({"dir", "data-md-color-scheme", "data-md-color-primary", "data-md-color-accent"})


class ArtifactError(Exception):
    """The site is not what may be published: one line naming the file."""


@dataclass(frozen=True)
class SiteFile:
    path: str  # POSIX, relative to the site
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


# ------------------------------------------------------------------------ files
def file_type(path: str) -> str | None:
    """What ``path`` (relative, POSIX) is by ``FILE_TYPES``, or None."""
    return next((what for pattern, what in FILE_TYPES if fnmatch.fnmatchcase(path, pattern)), None)


def read_site(site_dir: Path) -> list[SiteFile]:
    """Every file of ``site_dir``, read once. Raises ArtifactError for a link, a special file
    or a file of no listed type."""
    if not site_dir.is_dir():
        raise ArtifactError(f"{site_dir}: no such folder")
    files = []
    for path in sorted(site_dir.rglob("*")):
        relative = path.relative_to(site_dir).as_posix()
        if path.is_symlink():
            raise ArtifactError(f"{relative}: a symbolic link; the site holds plain files")
        if path.is_dir():
            continue
        if not path.is_file():
            raise ArtifactError(f"{relative}: not a plain file")
        if file_type(relative) is None:
            raise ArtifactError(
                f"{relative}: a file of no allowed type (verify/artifact.py, FILE_TYPES); "
                "the site holds pages, the theme's and our assets, search indexes and the sitemap"
            )
        files.append(SiteFile(relative, path.read_bytes()))
    return files


# ------------------------------------------------------------------------ pages
def base_urls(page: str, site_path: str) -> tuple[str, ...]:
    """The ``base_url`` MkDocs gives a page's template: the way back to the site's root
    (``.``, ``..``, ``../..``), or on a 404 page the site's absolute path."""
    depth = len(PurePosixPath(page).parts) - 1
    return ("/".join([".."] * depth) or ".", site_path)


def _style_problem(css: str) -> str | None:
    if re.search(r"@|\\|url\(|<", css):
        return "an @-rule, escape or url() in a <style>"
    for declarations in re.findall(r"\{([^{}]*)\}", css):
        for declaration in filter(str.strip, declarations.split(";")):
            prop = declaration.partition(":")[0].strip().lower()
            if prop not in STYLE_PROPERTIES:
                return f"a <style> setting {prop!r} (only Pygments' properties: verify/artifact.py, STYLE_PROPERTIES)"
    return None


def _resolve(page: str, url: str, site_path: str) -> str | None:
    """The file of the site a ``url`` of ``page`` names (relative, or absolute under
    ``site_path`` as on a 404 page), or None for another origin, a scheme or a query."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or parts.query or not parts.path:
        return None
    if parts.path.startswith("/"):
        return parts.path[len(site_path) :] if parts.path.startswith(site_path) and ".." not in parts.path else None
    target = normpath(str(PurePosixPath(page).parent / parts.path))
    if target == ".":
        return ""  # the site's root
    return None if target.startswith("../") or target == ".." else target


def _check_scripts(
    page: str, tree: LexborHTMLParser, site_files: set[str], allowed_hashes: frozenset[str], site_path: str
) -> None:
    for node in tree.css("script"):
        attributes = dict(node.attributes)
        src = attributes.pop("src", None)
        if src is not None:
            attributes.pop("defer", None)
            if attributes.get("type") == "module":  # a module file of the site: as safe as a classic one
                attributes.pop("type")
            target = _resolve(page, src, site_path)
            if attributes or target is None or not target.endswith(".js") or target not in site_files:
                raise ArtifactError(
                    f"{page}: <script src={src!r}> is not a script file of this site "
                    "(a relative URL of an existing .js file, only defer beside it)"
                )
            continue
        body = node.text(deep=True)
        kind = attributes.pop("type", None)
        attributes.pop("id", None)
        if attributes:
            raise ArtifactError(f"{page}: a <script> with {sorted(attributes)}")
        if kind == "application/json":
            try:
                json.loads(body)
            except ValueError:
                raise ArtifactError(f"{page}: a <script type=\"application/json\"> whose content is not JSON") from None
        elif kind is not None or script_hash(body) not in allowed_hashes:
            first = body.strip().splitlines()[0][:60] if body.strip() else ""
            raise ArtifactError(
                f"{page}: an inline <script> that is not one of the theme's own (verify/theme_scripts.py): {first!r}"
            )


def _check_policy(page: str, tree: LexborHTMLParser, bases: tuple[str, ...]) -> None:
    metas = tree.css("meta[http-equiv]")
    head = tree.head
    first = next((child for child in head.iter() if child.tag not in ("-text", "-comment")), None) if head else None
    expected = {policy(base, finder=hosts_finder(str(tree.html))) for base in bases}
    if (
        len(metas) != 1
        or first is None
        or first.tag != "meta"
        or first.attributes.get("http-equiv") != "Content-Security-Policy"
        or first.attributes.get("content") not in expected
        or set(first.attributes) != {"http-equiv", "content"}
    ):
        raise ArtifactError(
            f"{page}: <head> does not open with the site's Content-Security-Policy "
            "(overrides/main.html, verify/theme_scripts.py) or has another http-equiv"
        )


LINK_RELS = {
    "stylesheet": "file",
    "icon": "file",
    "prev": "page",
    "next": "page",
    "canonical": "address",
    "alternate": "page",
}  # <link rel>: what its href must be


def _check_loads(page: str, tree: LexborHTMLParser, site_files: set[str], site_path: str, home: str) -> None:
    """What a page loads comes from the site: each <link> has a listed ``rel`` and names a
    file of the site (a stylesheet, the icon) or a page of it; each <img> a file of the site
    or a PNG/JPEG/GIF ``data:`` URL."""
    for node in tree.css("link"):
        rel, href = node.attributes.get("rel") or "", node.attributes.get("href") or ""
        kind = LINK_RELS.get(rel)
        target = _resolve(page, href, site_path)
        if kind == "file":
            ok = target in site_files
        elif kind == "page":
            ok = target is not None or (
                rel == "alternate" and urlsplit(href).path.startswith(site_path) and not urlsplit(href).netloc
            )
        else:
            ok = kind == "address" and href.startswith(home) and "://" in home
        if not ok:
            raise ArtifactError(
                f"{page}: <link rel={rel!r} href={href!r}>: a link of the head names a file or page of this site"
            )
    for node in tree.css("img"):
        src = node.attributes.get("src") or ""
        if not (re.match(r"data:image/(png|jpeg|gif);base64,", src) or _resolve(page, src, site_path) in site_files):
            raise ArtifactError(
                f"{page}: <img src={src[:80]!r}>: an image is a file of this site or inline PNG, JPEG or GIF"
            )


def url_scheme(value: str) -> str | None:
    """The scheme a browser reads in the URL ``value`` (lower case), or None for a relative URL:
    leading and trailing spaces and C0 controls stripped, tabs and newlines anywhere removed,
    as the URL standard's parser does (`` DATA:``, ``da\tta:`` are ``data:``)."""
    flat = re.sub(r"[\t\n\r]", "", value).strip("".join(map(chr, range(0x21))))
    found = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", flat)
    return found.group(1).lower() if found else None


def _filter(page: str, problems: list[str]) -> Callable[[str, str, str], str | None]:
    def check(tag: str, name: str, value: str) -> str | None:
        if name == "id" and RESERVED_ID_RE.match(value):
            problems.append(f'an id="{value}" (Material\'s copy button would copy that element)')
            return None
        if name == "http-equiv" and value != "Content-Security-Policy":
            problems.append(f'a <meta http-equiv="{value}">')
            return None
        if name in URL_ATTRIBUTES and url_scheme(value) == "data":
            if tag == "img" and name == "src" and re.match(r"data:image/(png|jpeg|gif);base64,", value):
                return value
            problems.append(
                f"<{tag} {name}={value[:40]!r}...>: a data: URL other than an image's PNG, JPEG or GIF "
                "(a link to it downloads or opens content the site does not hold as a file)"
            )
            return None
        return value

    return check


def _shape(html_text: str) -> list[tuple[str | None, str | tuple[tuple[str, str], ...]]]:
    """The elements, attributes and texts of a document's head and body, in order."""
    tree = LexborHTMLParser(html_text)
    shape: list[tuple[str | None, str | tuple[tuple[str, str], ...]]] = []
    for root in (tree.head, tree.body):
        if root is None:
            continue
        for number, node in enumerate(root.traverse(include_text=True)):
            if (
                number == 0
                or node.tag in ("-comment", "script", "style")
                or (node.parent is not None and node.parent.tag in ("script", "style"))
            ):
                continue
            if node.tag == "-text":
                text = node.text_content or ""
                if text.strip():
                    shape.append(("text", " ".join(text.split())))
            else:
                shape.append((node.tag, tuple(sorted((k, v or "") for k, v in node.attributes.items()))))
    return shape


def _sanitised(page: str, text: str) -> None:
    problems: list[str] = []
    clean = nh3.clean(
        text,
        tags=set(TAGS),
        clean_content_tags={"script", "style"},
        attributes={"*": set(GLOBAL_ATTRIBUTES), **{tag: set(names) for tag, names in ATTRIBUTES.items()}},
        generic_attribute_prefixes=set(ATTRIBUTE_PREFIXES),
        url_schemes=set(URL_SCHEMES) | {"data"},
        attribute_filter=_filter(page, problems),
        link_rel=None,
        strip_comments=True,
    )
    if problems:
        raise ArtifactError(f"{page}: {problems[0]}")
    before, after = _shape(text), _shape(clean)
    if before != after:
        index = _first_difference(before, after)
        found = repr(before[index] if index < len(before) else "(end)")
        raise ArtifactError(
            f"{page}: the allow-list sanitiser (nh3) refuses {found[:200]} "
            "(verify/artifact.py: TAGS, ATTRIBUTES, URL_SCHEMES)"
        )


def _first_difference(one: Sequence[Any], other: Sequence[Any]) -> int:
    """The index of the first item where two different sequences differ (the shorter one's
    length when it is the start of the other)."""
    return next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))


def check_page(page: str, text: str, site_files: set[str], site_path: str = "/", home: str = "/") -> None:
    """Raise ArtifactError unless the page ``page`` (its path in the site) passes (module docstring)."""
    tree = LexborHTMLParser(text)
    bases = base_urls(page, site_path)
    _check_policy(page, tree, bases)
    _check_scripts(page, tree, site_files, frozenset().union(*(theme_hashes(base) for base in bases)), site_path)
    _check_loads(page, tree, site_files, site_path, home)
    for style in tree.css("style"):
        if problem := _style_problem(style.text(deep=True)):
            raise ArtifactError(f"{page}: {problem}")
    for node, allowed in ((tree.root, HTML_ATTRIBUTES), (tree.body, BODY_ATTRIBUTES)):
        if node is not None and (extra := set(node.attributes) - allowed):
            raise ArtifactError(f"{page}: <{node.tag}> has {sorted(extra)}")
    ids = [node.attributes["id"] for node in tree.css("[id]")]
    if len(ids) != len(set(ids)):
        twice = next(value for value in ids if ids.count(value) > 1)
        raise ArtifactError(f'{page}: id="{twice}" twice (a copy button or link would find the first)')
    _check_code_blocks(page, tree)
    _sanitised(page, text)


def _check_code_blocks(page: str, tree: LexborHTMLParser) -> None:
    for title in tree.css("div.highlight > span.filename"):
        code = title.parent.css_first("pre > code") if title.parent is not None else None
        if code is None:
            continue
        for number, node in enumerate(code.traverse()):
            if number == 0:
                continue
            if node.tag != "span" or set(node.attributes) - {"class"}:
                raise ArtifactError(
                    f"{page}: the block {title.text().strip()!r} holds <{node.tag} {' '.join(node.attributes)}>: "
                    "a titled block's code is Pygments' <span class> markup only, shown and copied as extracted"
                )


SECTION_MARKER_RE = re.compile(r"^\s*\S*\s*-{1,2}8<-{1,2}\s*\[(?:start|end):[\w-]+\]\s*$")  # pymdownx.snippets


def snippet_files(snippets_dir: Path, title: str) -> list[Path]:
    """The files of ``snippets_dir`` a block titled ``title`` can show (``snippets/**/<title>``,
    not the data folder): a titled block is checked against the one file found."""
    return [
        path
        for path in snippets_dir.rglob(title)
        if path.is_file() and "data" not in path.relative_to(snippets_dir).parts
    ]


def section_lines(snippet: str) -> list[str]:
    """The lines of ``snippet`` a section of it may show: all but pymdownx.snippets' section markers."""
    return [line for line in snippet.splitlines() if not SECTION_MARKER_RE.match(line)]


def is_part_of(code: str, snippet: str) -> bool:
    """Whether ``code`` is ``snippet`` byte for byte, or the lines of one section of it (a
    contiguous run of its lines, pymdownx.snippets' section markers left out)."""
    if code == snippet:
        return True
    lines = section_lines(snippet)
    shown = code.splitlines()
    return bool(shown) and any(lines[i : i + len(shown)] == shown for i in range(len(lines) - len(shown) + 1))


def check_titled_blocks(pages: dict[str, str], snippets_dir: Path) -> None:
    """Every titled block's text (as shown and copied) is its snippet: in the default language
    the file ``snippets/**/<title>`` byte for byte (or one section of it), in the others the
    same code to its tool as the default language's block. Raises ArtifactError."""
    found: dict[str, dict[str, tuple[str, str]]] = {}
    for page, text in pages.items():
        first = page.split("/")[0]
        lang = first if first in LANGUAGES and first != DEFAULT_LANGUAGE else DEFAULT_LANGUAGE
        for block in blocks_in_html(text, lang, page):
            found.setdefault(block.name, {})[f"{lang} {page}"] = (lang, block.code)
    for name, shown in sorted(found.items()):
        matches = snippet_files(snippets_dir, name)
        if len(matches) != 1:
            raise ArtifactError(
                f"block {name!r}: {len(matches)} files named so under {snippets_dir}: a block's title is "
                "the name of the one snippet file it shows"
            )
        snippet = matches[0].read_text(encoding="utf-8")
        defaults = [(where, code) for where, (lang, code) in sorted(shown.items()) if lang == DEFAULT_LANGUAGE]
        for where, code in defaults:
            if not is_part_of(code, snippet):
                raise ArtifactError(
                    f"block {name!r} ({where}): the code shown is not {matches[0]} (or a section of it) byte for byte"
                )
        reference = defaults[0] if defaults else (str(matches[0]), snippet)
        for where, (lang, code) in sorted(shown.items()):
            if lang != DEFAULT_LANGUAGE:
                try:
                    compare_code(name, (reference[1], reference[0]), (code, where))
                except ExtractError as exc:
                    raise ArtifactError(str(exc)) from None


def notebook_pages(docs_dir: Path) -> dict[str, Path]:
    """The site path of each notebook page (``docs/NAME.LANG.ipynb`` -> ``[LANG/]NAME/index.html``)
    -> its notebook: its code blocks are its code cells, not includes."""
    pages = {}
    for path in sorted(docs_dir.glob("*.ipynb")):
        name, _, lang = path.stem.rpartition(".")
        pages[f"{name}/index.html" if lang == DEFAULT_LANGUAGE else f"{lang}/{name}/index.html"] = path
    return pages


def _notebook_code_cells(notebook: Path) -> list[str]:
    """The source of each code cell of ``notebook``, in order."""
    return [
        "".join(cell.get("source", [])) if isinstance(cell.get("source"), list) else cell.get("source", "")
        for cell in json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
        if cell.get("cell_type") == "code"
    ]


def _check_notebook_names(page: str, blocks: list[str], notebook: Path) -> None:
    """What the code a notebook page shows, and the cells it does not show (the set-up cell), use:
    the names ``verify.block_names.check_cells`` allows a notebook (issue 33, hole 3), as one
    program: the page's blocks as uploaded, after the notebook's cells that no block shows as
    they are (a block is checked, whatever ``_check_notebook_blocks`` says of it next). Raises
    ArtifactError naming the page and its block, or the notebook and its cell, and the line."""
    cells = _notebook_code_cells(notebook)
    hidden = [
        (code, f"{notebook.name}: code cell {number} (not shown)")
        for number, code in enumerate(cells, start=1)
        if code + "\n" not in blocks
    ]
    shown = [(code, f"{page}: code block {number}") for number, code in enumerate(blocks, start=1)]
    try:
        check_cells(hidden + shown)
    except BlockNameError as exc:
        raise ArtifactError(str(exc)) from None


def _check_notebook_blocks(page: str, blocks: list[str], notebook: Path) -> None:
    """A notebook page's code blocks are code cells of its notebook, in the notebook's order (a
    cell the page leaves out, the set-up cell, is skipped): a fence or ``<pre>`` in a Markdown
    cell is no cell, never ran and is refused, and so is a text output (none yet: reading
    them needs the executed notebook)."""
    cells = [code + "\n" for code in _notebook_code_cells(notebook)]
    position = 0
    for number, code in enumerate(blocks, start=1):
        while position < len(cells) and cells[position] != code:
            position += 1
        if position == len(cells):
            line = (code.strip().splitlines() or [""])[0][:60]
            raise ArtifactError(
                f"{page}: code block {number} ({line!r}) is not a code cell of {notebook.name} (in its order): "
                "a notebook page shows its code cells, and only those"
            )
        position += 1


def _fence_language(pre: LexborNode) -> str:
    classes = (pre.parent.attributes.get("class") or "").split() if pre.parent is not None else []
    return next((c.removeprefix("language-") for c in classes if c.startswith("language-")), "")


def check_code_blocks_are_snippets(pages: dict[str, str], snippets_dir: Path, docs_dir: Path) -> None:
    """Every code block of a Markdown page is an include of ``snippets/``, as its Markdown must
    write it (``hooks/checks/conventions.py`` reads the fences; a block written as raw HTML is no
    fence): each ``<pre>`` holds only Pygments' ``<code>`` and ``<span class>`` markup, and its
    text is a file of ``snippets/`` (or one section of it) byte for byte in the default language;
    in every other language the page has as many blocks, each the same code to its tool as the
    default language's block at the same place. On a notebook page (``notebook_pages``) the
    blocks are code cells of its notebook instead. Raises ArtifactError naming the page and the block."""
    sources = [
        path.read_text(encoding="utf-8")
        for path in sorted(snippets_dir.rglob("*"))
        if path.is_file() and "data" not in path.relative_to(snippets_dir).parts
    ]
    notebooks = notebook_pages(docs_dir)
    shown: dict[str, list[tuple[str, str]]] = {}
    for page, text in sorted(pages.items()):
        tree = LexborHTMLParser(text)
        blocks = []
        for number, pre in enumerate(tree.css("pre"), start=1):
            for index, node in enumerate(pre.traverse()):
                if index and not (
                    (node.tag == "code" and not node.attributes)
                    or (node.tag == "span" and set(node.attributes) <= {"class"})
                ):
                    raise ArtifactError(
                        f"{page}: code block {number} holds <{node.tag} {' '.join(node.attributes)}>: a code block "
                        "is Pygments' <code> and <span class> markup only, shown and copied as written"
                    )
            code_node = pre.css_first("code")
            blocks.append((_fence_language(pre), (code_node if code_node is not None else pre).text()))
        if page in notebooks:
            _check_notebook_names(page, [code for _, code in blocks], notebooks[page])
            _check_notebook_blocks(page, [code for _, code in blocks], notebooks[page])
            continue
        for number, (fence, code) in enumerate(blocks, start=1):
            if fence in PYTHON_FENCES:  # what a Python block may use (issue 33: comments are not behaviour)
                try:
                    check_names(code, f"{page}: code block {number}")
                except (BlockNameError, SyntaxError) as exc:
                    raise ArtifactError(str(exc)) from None
        shown[page] = blocks
    for page, blocks in shown.items():
        first = page.split("/")[0]
        lang = first if first in LANGUAGES and first != DEFAULT_LANGUAGE else DEFAULT_LANGUAGE
        if lang == DEFAULT_LANGUAGE:
            for number, (_, code) in enumerate(blocks, start=1):
                if not any(is_part_of(code, source) for source in sources):
                    line = (code.strip().splitlines() or [""])[0][:60]
                    raise ArtifactError(
                        f"{page}: code block {number} ({line!r}) is not a file of snippets/ nor a section of "
                        "one: every code block is an include (--8<--), written once and rehearsed"
                    )
            continue
        reference_page = page[len(first) + 1 :]
        reference = shown.get(reference_page, [])
        if len(reference) != len(blocks) or [fence for fence, _ in reference] != [fence for fence, _ in blocks]:
            raise ArtifactError(
                f"{page}: {len(blocks)} code blocks, {reference_page} has {len(reference)}: every language "
                "shows the same blocks in the same order"
            )
        for number, ((fence, code), (_, reference_code)) in enumerate(zip(blocks, reference, strict=True), start=1):
            try:
                compare_code(
                    fence or "text",
                    (reference_code, f"{reference_page}, block {number}"),
                    (code, f"{page}, block {number}"),
                )
            except ExtractError as exc:
                raise ArtifactError(str(exc)) from None


# ------------------------------------------------------------------ calculator
def calculator_members(calculator_dir: Path, snippets_dir: Path) -> dict[str, bytes]:
    """What ``CALCULATOR_BUNDLE`` is made of: member name -> the bytes of the checkout's file
    (``vram/<name>.py``, shipped compiled as ``vram/<name>.pyc``; ``configs/<model>.json``)."""
    members = {f"vram/{path.name}": path.read_bytes() for path in sorted(calculator_dir.glob("*.py"))}
    models_dir = (snippets_dir / "data" / "models").resolve()
    models = yaml.safe_load((snippets_dir / "data" / "models.yaml").read_text(encoding="utf-8"))["models"]
    for key, entry in models.items():
        path = (models_dir / entry["config"]).resolve()
        if path.parent != models_dir:
            raise ArtifactError(
                f"snippets/data/models.yaml: models.{key}.config is not a file of snippets/data/models/"
            )
        members[f"configs/{key}.json"] = path.read_bytes()
    return members


def _pinned_package_file(package_dir: Path, name: str) -> bytes:
    """A file of the installed npm package, checked against ``PYODIDE_SHA256``."""
    try:
        data = (package_dir / name).read_bytes()
    except OSError as exc:
        raise ArtifactError(
            f"{package_dir / name}: cannot read the pinned package ({exc.strerror}); run `npm ci`"
        ) from None
    if PYODIDE_SHA256.get(name) != hashlib.sha256(data).hexdigest():
        raise ArtifactError(
            f"{package_dir / name}: not the file of the npm package pyodide that package-lock.json pins "
            "(verify/artifact.py, PYODIDE_SHA256); run `npm ci`"
        )
    return data


def unpacked(path: str, data: bytes) -> bytes:
    """The bytes a packed file (``PACKED``) unpacks to, as the worker's fzstd unpacks it: exactly
    one Zstandard frame, nothing after it, its size in its header and at most ``PACKED_LIMIT``.
    Raises ArtifactError naming the file."""
    import zstandard

    try:
        size = zstandard.frame_content_size(data)
        if size < 0 or size > PACKED_LIMIT:
            raise ArtifactError(f"{path}: does not say its unpacked size, or says more than {PACKED_LIMIT} bytes")
        return zstandard.ZstdDecompressor().decompress(data, allow_extra_data=False)
    except zstandard.ZstdError as exc:
        raise ArtifactError(f"{path}: not one Zstandard frame and nothing else ({exc})") from None


def _module_source(name: str) -> str:
    """The source a member of a shipped archive is compiled from: ``x.pyc`` from ``x.py``; any
    other member is shipped as it is."""
    return name[:-1] if name.endswith(".pyc") else name


def _read_archive(path: str, packed: bytes) -> tuple[bytes, list[tuple[str, bytes]]]:
    """The packed zip at ``path`` unpacked (``unpacked``), and its members as ``zipfile`` reads
    them, in order. Raises ArtifactError naming the file when it is not a readable zip."""
    data = unpacked(path, packed)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return data, [(info.filename, archive.read(info)) for info in archive.infolist()]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, zlib.error) as exc:
        raise ArtifactError(f"{path}: not a readable zip ({exc})") from None
    except (RuntimeError, NotImplementedError) as exc:  # an encrypted member, an unknown compression method
        raise ArtifactError(f"{path}: not a zip the worker reads ({exc})") from None


def check_canonical(path: str, data: bytes, members: list[tuple[str, bytes]]) -> None:
    """The unpacked archive ``data`` is byte for byte what ``verify.archive.canonical_zip`` (the
    build's writer) writes of the ``members`` read from it: then ``zipfile`` here and the
    worker's ``zipimport`` read the same members from it, as nothing else is in it (no comment,
    extra field, gap, data descriptor, second directory, byte before or after). Raises
    ArtifactError naming the file and the first byte that differs."""
    canonical = zip_writer.canonical_zip(members)
    if data != canonical:
        offset = _first_difference(data, canonical)
        raise ArtifactError(
            f"{path}: the archive is not the canonical archive of its members (verify/archive.py; "
            f"byte {offset} of {len(data)} differs)"
        )


def _compile_all(sources: dict[str, list[tuple[str, bytes]]], package_dir: Path) -> dict[str, dict[str, bytes]]:
    """Each archive's ``[(name, source bytes)]`` as ``verify.precompile`` makes it (``.py``
    compiled by the pinned package, whose files are checked first, the rest as it is), in one
    Node.js process: archive path -> {member name: bytes}. Raises ArtifactError when Node.js
    fails or is missing."""
    for name in precompile.COMPILER_FILES:
        _pinned_package_file(package_dir, name)
    prefixes = {STDLIB_ARCHIVE: precompile.STDLIB_PREFIX, CALCULATOR_BUNDLE: precompile.CALCULATOR_PREFIX}
    jobs = []
    for path, members in sources.items():
        jobs.append((zip_writer.canonical_zip(members), prefixes[path]))  # the same sources, the same key
    try:
        results = precompile.precompiled(jobs, package_dir)
    except precompile.PrecompileError as exc:
        raise ArtifactError(f"cannot check the finder's compiled Python: {exc}") from None
    compiled = {}
    for path, result in zip(sources, results, strict=True):
        with zipfile.ZipFile(io.BytesIO(result)) as archive:
            compiled[path] = {info.filename: archive.read(info) for info in archive.infolist()}
    return compiled


def _stdlib_sources(names: list[str], package: zipfile.ZipFile) -> list[tuple[str, bytes]]:
    """The package's members ``STDLIB_ARCHIVE`` is made of, in its order (its members' ``names``): each member compiled
    from a ``.py`` of the package's ``python_stdlib.zip`` (``x.pyc``) or another member of it,
    each module once. Raises ArtifactError naming a member that is not (a source, or one the
    package does not have: a module of our own there would shadow the standard library)."""
    held = set(package.namelist())
    modules = [_module_source(name) for name in names]
    for name, module in zip(names, modules, strict=True):
        if module not in held or modules.count(module) > 1:
            raise ArtifactError(
                f"{STDLIB_ARCHIVE}: {name!r} is {'not a member of' if module not in held else 'twice in'} "
                "the pinned package's python_stdlib.zip"
            )
        if name.endswith(".py"):
            raise ArtifactError(
                f"{STDLIB_ARCHIVE}: {name!r} is a source; the site ships the package's modules compiled"
            )
    return [(module, package.read(module)) for module in modules]


def check_lock_file(files: dict[str, bytes], package_dir: Path) -> None:
    """``LOCK_FILE`` is the package's lock file's ``info`` with no packages. Raises
    ArtifactError naming the file."""
    if LOCK_FILE in files:
        info = json.loads(_pinned_package_file(package_dir, "pyodide-lock.json"))["info"]
        try:
            lock = json.loads(files[LOCK_FILE])
        except (ValueError, UnicodeDecodeError):
            lock = None
        if lock != {"info": info, "packages": {}}:
            raise ArtifactError(f"{LOCK_FILE}: not the pinned package's lock file info with no packages")


def check_calculator(
    files: dict[str, bytes], calculator_dir: Path, snippets_dir: Path, package_dir: Path = PYODIDE_PACKAGE
) -> None:
    """The code the finder's worker runs is the reviewed code: every file under
    ``assets/pyodide/`` is the npm package's (``PYODIDE_SHA256``), as it is or packed (the
    WebAssembly), every file under ``assets/fzstd/`` fzstd's (``FZSTD_SHA256``), the lock file
    the package's without packages (``check_lock_file``), ``STDLIB_ARCHIVE`` members of the
    package's standard library (``_stdlib_sources``) and ``CALCULATOR_BUNDLE`` exactly
    ``calculator_members`` (no other member, none twice), each byte for byte what
    ``verify.precompile`` compiles from the package's or the checkout's file (the pinned
    package compiles them again here) or that file itself, and each archive then the canonical
    archive of those members (``check_canonical``). Raises ArtifactError naming the file."""
    shipped = {name + PACKED if name in PYODIDE_PACKED else name: name for name in PYODIDE_FILES}
    for path, data in files.items():
        if path.startswith(PYODIDE_DIR):
            name = shipped.get(path[len(PYODIDE_DIR) :], "")
            content = unpacked(path, data) if name in PYODIDE_PACKED else data
            if PYODIDE_SHA256.get(name) != hashlib.sha256(content).hexdigest():
                raise ArtifactError(
                    f"{path}: not the file of the npm package pyodide that package-lock.json pins "
                    "(verify/artifact.py, PYODIDE_SHA256)"
                )
        elif path.startswith(FZSTD_DIR):
            pinned = FZSTD_SHA256.get(path[len(FZSTD_DIR) :])
            if pinned is None or pinned[1] != hashlib.sha256(data).hexdigest():
                raise ArtifactError(
                    f"{path}: not the file of the npm package fzstd that package-lock.json pins "
                    "(verify/artifact.py, FZSTD_SHA256)"
                )
    check_lock_file(files, package_dir)
    archives = {path: _read_archive(path, files[path]) for path in (STDLIB_ARCHIVE, CALCULATOR_BUNDLE) if path in files}
    sources: dict[str, list[tuple[str, bytes]]] = {}
    if STDLIB_ARCHIVE in archives:
        package = zipfile.ZipFile(io.BytesIO(_pinned_package_file(package_dir, "python_stdlib.zip")))
        sources[STDLIB_ARCHIVE] = _stdlib_sources([name for name, _ in archives[STDLIB_ARCHIVE][1]], package)
    if CALCULATOR_BUNDLE in archives:
        names = [name for name, _ in archives[CALCULATOR_BUNDLE][1]]
        calculator = calculator_members(calculator_dir, snippets_dir)
        expected = [(name + "c" if name.endswith(".py") else name) for name in calculator]
        if len(names) != len(set(names)) or set(names) != set(expected):
            extra = sorted(set(names) - set(expected)) or sorted({n for n in names if names.count(n) > 1})
            raise ArtifactError(
                f"{CALCULATOR_BUNDLE}: holds {extra[0] if extra else 'not every file'!r}; the calculator's "
                f"archive is vram/*.py compiled and the models' config.json, each once (missing: "
                f"{', '.join(sorted(set(expected) - set(names))) or 'none'})"
            )
        sources[CALCULATOR_BUNDLE] = sorted(calculator.items())
    if not sources:
        return
    compiled = _compile_all(sources, package_dir)
    for path, what in ((STDLIB_ARCHIVE, "the pinned package's member"), (CALCULATOR_BUNDLE, "the checkout's file")):
        for name, data in archives[path][1] if path in archives else ():
            if compiled[path].get(name) != data:
                how = " compiled (verify/precompile.py)" if name.endswith(".pyc") else ""
                raise ArtifactError(f"{path}: {name} is not {what}{how} byte for byte")
    for path, (data, members) in archives.items():  # the members accepted: now the bytes around them
        check_canonical(path, data, members)


# ----------------------------------------------------------------------- theme
def check_theme_files(files: dict[str, bytes]) -> None:
    """The theme's own files are the installed theme's: a file under ``assets/`` whose path is
    a file of mkdocs-material's ``templates/`` (its JavaScript bundle, search worker, lunr,
    stylesheets, favicon) holds that file's bytes. ``overrides/assets/`` adds files, never
    replaces one (``overrides/assets/javascripts/bundle.*.min.js`` would run on every page).
    Raises ArtifactError naming the file."""
    theme = Path(str(resources.files("material") / "templates"))
    for path, data in files.items():
        installed = theme / path
        if path.startswith("assets/") and installed.is_file() and installed.read_bytes() != data:
            raise ArtifactError(
                f"{path}: not the file of the installed mkdocs-material; the theme's own files are "
                "published as the theme ships them (docs/ and overrides/ add files, never replace one)"
            )


# ------------------------------------------------------------- static sources
# What Material's search keeps of a page's markup in its index (its plugin's parser: "keep");
# its search results insert an entry's title and text as HTML.
SEARCH_INDEX_TAGS = frozenset({"p", "code", "pre", "li", "ol", "ul", "sub", "sup"})
NOTEBOOK_STYLESHEET_RE = re.compile(
    r"assets/notebook/page\.([0-9a-f]{16})\.css"
)  # hooks/notebooks/weight.py names it by its SHA-256


def check_static_files(files: dict[str, bytes], docs_dir: Path, custom_dir: Path) -> None:
    """Every file the build copies from the checkout is the checkout's: a site file whose path is
    a file of ``docs_dir`` or ``custom_dir`` (``overrides/``; pages and templates aside) holds its
    bytes. Every script (``.js``) and stylesheet (``.css``) of the site has such a source: the
    checkout, the installed theme (``check_theme_files``), or, for the notebook page's stylesheet,
    the SHA-256 its name states. A file rewritten after the build (a process a notebook cell left
    running) is refused, naming it."""
    theme = Path(str(resources.files("material") / "templates"))
    for path, data in files.items():
        sources = [
            (base.name, base / path)
            for base in (docs_dir, custom_dir)
            if (base / path).is_file() and (base / path).suffix not in (".md", ".ipynb", ".html")
        ]
        for folder, source in sources:
            if source.read_bytes() != data:
                raise ArtifactError(
                    f"{path}: not the checkout's {folder}/{path} byte for byte (rewritten after the build?)"
                )
        if path.endswith((".js", ".css")) and not sources and not path.startswith(PYODIDE_DIR):
            named = NOTEBOOK_STYLESHEET_RE.fullmatch(path)
            if named and hashlib.sha256(data).hexdigest()[:16] == named.group(1):
                continue
            if not (path.startswith("assets/") and (theme / path).is_file()):
                raise ArtifactError(
                    f"{path}: a script or stylesheet that is no file of docs/, overrides/ or the installed theme "
                    "(nor the notebook page's stylesheet named by its SHA-256)"
                )


def _stylesheet_rules(rules: Iterable[Any], found: set[str] | None = None) -> set[str]:
    """Every rule of a parsed stylesheet as tinycss2 serializes it: qualified rules (at the top
    or inside ``@media``/``@supports``), those blocks' preludes, other at-rules whole."""
    import tinycss2

    found = set() if found is None else found
    for rule in rules:
        if rule.type == "qualified-rule":
            found.add(rule.serialize())
        elif rule.type == "at-rule" and rule.lower_at_keyword in {"media", "supports"} and rule.content is not None:
            found.add(f"@{rule.at_keyword} {tinycss2.serialize(rule.prelude).strip()}")
            _stylesheet_rules(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True), found)
        else:  # another at-rule, or a parse error (never a rule of the package: refused)
            found.add(rule.serialize() if rule.type == "at-rule" else f"\0{rule.type}")
    return found


_PARSED_RULES: dict[str, frozenset[str]] = {}  # SHA-256 of a stylesheet's text -> its rules


def _rules_of(text: str) -> frozenset[str]:
    """``_stylesheet_rules`` of the stylesheet ``text``, parsed once per process for each
    content: kept under the SHA-256 of the text, so a file that changes is parsed again. (A
    process may check many sites, the tests do: the installed mkdocs-jupyter's stylesheets,
    about 0.5 s to parse, are the same every time.)"""
    import tinycss2

    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if key not in _PARSED_RULES:
        parsed = tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True)
        _PARSED_RULES[key] = frozenset(_stylesheet_rules(parsed))
    return _PARSED_RULES[key]


def check_notebook_stylesheets(files: dict[str, bytes]) -> None:
    """The notebook page's stylesheet (``assets/notebook/page.<sha>.css``, the JupyterLab rules
    the page uses, ``hooks/notebooks/weight.py``) holds only rules of the installed
    mkdocs-jupyter's stylesheets: its name states its hash, not its origin, so a page and a
    stylesheet rewritten together (a rule that hides a comment's ``#`` in a cell, or adds text
    with ``content:``) would pass without this. Raises ArtifactError naming the file."""
    sheets = [path for path in files if NOTEBOOK_STYLESHEET_RE.fullmatch(path)]
    if not sheets:
        return
    folder = resources.files("mkdocs_jupyter").joinpath("templates", "mkdocs_html", "assets")
    allowed: set[str] = set()
    for entry in folder.iterdir():
        if entry.name.endswith(".css"):
            allowed |= _rules_of(entry.read_text(encoding="utf-8"))
    for path in sheets:
        try:
            text = files[path].decode("utf-8")
        except UnicodeDecodeError:
            raise ArtifactError(f"{path}: not UTF-8") from None
        if extra := sorted(_rules_of(text) - allowed):
            raise ArtifactError(
                f"{path}: {extra[0][:80]!r} is not a rule of the installed mkdocs-jupyter's stylesheets"
            )


def check_search_indexes(files: dict[str, bytes]) -> None:
    """Each search index is Material's: JSON whose entries' ``title`` and ``text`` hold only the
    markup Material's search keeps (``SEARCH_INDEX_TAGS``, no attribute: its results insert them
    as HTML) and whose ``location`` is a relative address in the site."""
    for path, data in files.items():
        if not (path == "search/search_index.json" or fnmatch.fnmatchcase(path, "*/search/search_index.json")):
            continue
        try:
            docs = json.loads(data.decode("utf-8"))["docs"]
            entries = [(doc["location"], doc["title"], doc["text"]) for doc in docs]
        except (ValueError, KeyError, TypeError):
            raise ArtifactError(
                f"{path}: not a search index of Material (JSON with docs of location, title and text)"
            ) from None
        for location, *texts in entries:
            parts = urlsplit(location) if isinstance(location, str) else None
            if parts is None or parts.scheme or parts.netloc or location.startswith(("/", "\\")):
                raise ArtifactError(f"{path}: location {str(location)[:80]!r} is not a relative address in the site")
            for text in texts:
                if not isinstance(text, str):
                    raise ArtifactError(f"{path}: an entry's title or text is not a string")
                if "<" not in text:
                    continue
                body = LexborHTMLParser(f"<!DOCTYPE html><html><head></head><body>{text}</body></html>").body
                for node in body.traverse() if body is not None else []:
                    if node.tag != "body" and (node.tag not in SEARCH_INDEX_TAGS or node.attributes):
                        raise ArtifactError(
                            f"{path}: an entry ({location!r}) holds <{node.tag} {' '.join(node.attributes)}>: "
                            "a search index holds the markup Material's search keeps and nothing else"
                        )


# --------------------------------------------------------------------- artifact
def site_home_of(files: dict[str, bytes]) -> str:
    """The site's address (``https://owner.github.io/REPO/``): the shortest URL of the sitemap, its home page."""
    sitemap = files.get("sitemap.xml", b"").decode("utf-8", "replace")
    return min(re.findall(r"<loc>([^<]+)</loc>", sitemap), key=len, default="/")


# The pages that passed ``check_page`` in this process: (page, SHA-256 of its bytes, SHA-256 of the
# site's file list, site path, home). A process that checks many sites (the tests) checks each
# page once per content; a page that fails is never remembered.
_PASSED_PAGES: set[tuple[str, str, str, str, str]] = set()


def check_site(
    site_dir: Path,
    snippets_dir: Path,
    calculator_dir: Path = CALCULATOR_DIR,
    docs_dir: Path = DOCS_DIR,
    overrides_dir: Path = OVERRIDES_DIR,
    package_dir: Path = PYODIDE_PACKAGE,
) -> list[SiteFile]:
    """Every file of ``site_dir``, read once and checked. Raises ArtifactError."""
    files = read_site(site_dir)
    by_path = {f.path: f.data for f in files}
    check_calculator(by_path, calculator_dir, snippets_dir, package_dir)
    check_theme_files(by_path)
    check_static_files(by_path, docs_dir, overrides_dir)
    check_search_indexes(by_path)
    check_notebook_stylesheets(by_path)
    home = site_home_of(by_path)
    site_path = urlsplit(home).path or "/"
    site_files = hashlib.sha256("\0".join(sorted(by_path)).encode("utf-8")).hexdigest()
    pages = {}
    for f in files:
        if f.path.endswith(".html"):
            try:
                pages[f.path] = f.data.decode("utf-8")
            except UnicodeDecodeError:
                raise ArtifactError(f"{f.path}: not UTF-8") from None
            passed = (f.path, f.sha256, site_files, site_path, home)  # every input of check_page
            if passed not in _PASSED_PAGES:
                check_page(f.path, pages[f.path], set(by_path), site_path, home)
                _PASSED_PAGES.add(passed)
    if not pages:
        raise ArtifactError(f"{site_dir}: no page")
    check_titled_blocks(pages, snippets_dir)
    check_code_blocks_are_snippets(pages, snippets_dir, docs_dir)
    return files


def manifest(files: list[SiteFile]) -> dict[str, Any]:
    return {"files": [{"path": f.path, "bytes": len(f.data), "sha256": f.sha256} for f in files]}


def write_tar(files: list[SiteFile], out: Path) -> None:
    """The archive GitHub Pages deploys (``actions/upload-pages-artifact``'s layout: a tar of
    the site's files at ``./``), made from the bytes that were checked."""
    folders = sorted(
        {"."} | {f"./{parent}" for f in files for parent in map(str, PurePosixPath(f.path).parents) if parent != "."}
    )
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for folder in folders:  # as `tar --directory site -cf artifact.tar .` lists them
            info = tarfile.TarInfo(folder)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for f in files:
            info = tarfile.TarInfo(f"./{f.path}")
            info.size, info.mode, info.mtime = len(f.data), 0o644, 0
            tar.addfile(info, io.BytesIO(f.data))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.artifact", description=__doc__.splitlines()[0])
    parser.add_argument("site_dir", type=Path)
    parser.add_argument("--snippets", type=Path, default=Path("snippets"))
    parser.add_argument(
        "--calculator", type=Path, default=CALCULATOR_DIR, help="the vram/ sources assets/vram.zip.zst must hold"
    )
    parser.add_argument(
        "--pyodide",
        type=Path,
        default=PYODIDE_PACKAGE,
        help="the pinned npm package pyodide (npm ci), whose standard library and lock file the site trims",
    )
    parser.add_argument("--manifest", type=Path, help="write every file's path, size and SHA-256 here (JSON)")
    parser.add_argument("--tar", type=Path, help="write the checked files here, as the Pages artifact")
    args = parser.parse_args(argv)
    try:
        files = check_site(args.site_dir, args.snippets, args.calculator, package_dir=args.pyodide)
    except ArtifactError as exc:
        print(f"verify.artifact: error: {exc}", file=sys.stderr)
        return 2
    if args.manifest:
        args.manifest.write_text(json.dumps(manifest(files), indent=1) + "\n", encoding="utf-8")
    if args.tar:
        write_tar(files, args.tar)
    print(f"verify.artifact: {len(files)} files checked ({sum(len(f.data) for f in files)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
