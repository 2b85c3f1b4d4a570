"""No page loads anything from another origin: checked on the built HTML of every page.

The guide promises self-contained pages (no CDN, no third-party fonts or scripts: a reader's
browser contacts only the site). Chromium sees violations only when the browser tests run;
this check reads the HTML the build writes, with an HTML5 parser (selectolax), and refuses:

- an element that makes the browser fetch a resource from an absolute URL of another
  origin: ``script[src]`` (and SVG's ``script[href]``), ``link[href]`` of a loading kind
  (stylesheet, preload, icon...), images, media, frames, objects, the legacy ``background``
  attribute, and ``url(...)`` / ``@import`` / ``image-set("...")`` in styles (fonts);
- a ``<script src="">`` (mkdocs-jupyter writes one when no MathJax URL is set;
  ``strip_inert_mathjax`` removes it from notebook pages, and ``strip_inert_mermaid`` the
  template's Mermaid loader, which names a CDN);
- a Mermaid diagram (``.mermaid``): Material's JavaScript loads Mermaid from unpkg.com;
- in the site's own stylesheet files (``check_stylesheet_files``), the same ``url(...)`` /
  ``@import`` / ``image-set`` of another origin;
- an inline script whose text holds ``<!--``, ``<script`` or ``</script``: the page's
  scripts would be swallowed (JSON in scripts is written by ``hooks/render/script_json.py``).

Raises RenderError naming the element and the URL. Pure: no MkDocs import.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from selectolax.lexbor import LexborHTMLParser

from hooks.errors import RenderError

LOADING_RELS = {
    "stylesheet",
    "preload",
    "modulepreload",
    "prefetch",
    "preconnect",
    "dns-prefetch",
    "icon",
    "apple-touch-icon",
    "manifest",
    "prerender",
}
SOURCES = {
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "iframe": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "input": ("src",),
    "image": ("href", "xlink:href"),
    "use": ("href", "xlink:href"),
    "feimage": ("href", "xlink:href"),
    "script": ("href", "xlink:href"),  # SVG's
    "body": ("background",),
    "table": ("background",),
    "td": ("background",),
    "th": ("background",),
}
# (?=[uU@iI]): the first letters of the three forms, so the engine skips other positions at
# once (twice as fast on mkdocs-jupyter's 580 KB stylesheet; under re.I it folds as they do)
CSS_URL_RE = re.compile(
    r"""(?=[uU@iI])(?:url\(\s*['"]?([^'")\s]+)|(?:@import|image-set\()\s*['"]([^'"]+))""", re.IGNORECASE
)
UNSAFE_IN_SCRIPT_RE = re.compile(r"<!--|<script|</script", re.IGNORECASE)
MATHJAX_RE = re.compile(
    r"<!-- Load mathjax -->\s*<script src=\"\">\s*</script>\s*"
    r"(?:<!-- MathJax configuration -->\s*<script type=\"text/x-mathjax-config\">.*?</script>)?",
    re.DOTALL,
)


def is_external(url: str, site_origin: str = "") -> bool:
    """Whether ``url`` (as written in an attribute) is fetched from an origin other than ``site_origin``."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob") or (not parts.scheme and not url.startswith("//")):
        return False
    return not site_origin or f"{parts.scheme or 'https'}://{parts.netloc}" != site_origin


def origin(site_url: str | None) -> str:
    """``https://host[:port]`` of the site's own URL ("" if none)."""
    parts = urlsplit(site_url or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def _srcset_urls(value: str) -> list[str]:
    return [candidate.split()[0] for candidate in value.split(",") if candidate.strip()]


SELECTOR = ", ".join(
    [
        "script",
        "link[href]",
        "style",
        "[style]",
        ".mermaid",
        "[background]",
        *(tag for tag, attributes in SOURCES.items() if attributes != ("background",)),
    ]
)  # one pass over the page


def _problem(node, site_origin: str) -> str | None:
    """What is wrong with one element, or None."""
    tag, attributes = node.tag, node.attributes
    if "mermaid" in (attributes.get("class") or "").split():
        return "has a Mermaid diagram: Material's JavaScript would load Mermaid from unpkg.com"
    if tag == "script":
        src = attributes.get("src")
        if src is not None and not src.strip():
            return "has a <script src=\"\"> (an empty source)"
        if src is not None and is_external(src, site_origin):
            return f"loads a script from {src!r}"
        if src is None and UNSAFE_IN_SCRIPT_RE.search(node.text() or ""):
            return (
                f"an inline script ({attributes.get('id') or attributes.get('type') or 'no id'}) "
                "holds '<!--' or '<script': it would swallow the rest of the page"
            )
    if tag == "link":
        rels = set((attributes.get("rel") or "").lower().split()) & LOADING_RELS
        if rels and is_external(attributes["href"], site_origin):
            return f"loads a {'/'.join(sorted(rels))} from {attributes['href']!r}"
    for attribute in SOURCES.get(tag.lower(), ()):  # SVG's feImage keeps its case
        value = attributes.get(attribute)
        for url in (_srcset_urls(value) if attribute == "srcset" else [value]) if value else []:
            if is_external(url, site_origin):
                return f"loads <{tag} {attribute}> from {url!r}"
    for css in ((node.text() or "") if tag == "style" else "", attributes.get("style") or ""):
        for match in CSS_URL_RE.finditer(css):
            url = match.group(1) or match.group(2)
            if is_external(url, site_origin):
                return f"a style loads {url!r} (a font or stylesheet from another origin)"
    return None


def check_no_external_loads(html: str, site_origin: str = "") -> None:
    """Raise RenderError for the first thing in ``html`` that would load from another origin
    (or an empty script source, a Mermaid diagram, a script that swallows the page)."""
    for node in LexborHTMLParser(html).css(SELECTOR):
        problem = _problem(node, site_origin)
        if problem:
            raise RenderError(problem)


def check_stylesheet(css: str, site_origin: str = "") -> None:
    """Raise RenderError for the first ``url(...)``, ``@import`` or ``image-set`` of a
    stylesheet file that loads from another origin (the check of a page's ``<style>``)."""
    for match in CSS_URL_RE.finditer(css):
        url = match.group(1) or match.group(2)
        if is_external(url, site_origin):
            raise RenderError(f"loads {url!r} (a font or stylesheet from another origin)")


def check_stylesheet_files(paths: list[Path], root: Path, site_origin: str = "") -> None:
    """``check_stylesheet`` on every ``.css`` file of ``paths`` inside ``root`` (the site's own
    stylesheets: ``docs/assets/*.css``, the theme overrides). Raises RenderError naming the file."""
    for path in paths:
        if path.suffix == ".css" and path.is_relative_to(root):
            try:
                check_stylesheet(path.read_text(encoding="utf-8"), site_origin)
            except (OSError, UnicodeDecodeError) as exc:
                raise RenderError(f"{path.relative_to(root)}: cannot be read as UTF-8 ({exc})") from None
            except RenderError as exc:
                raise RenderError(f"{path.relative_to(root)}: {exc}") from None


MERMAID_LOADER_RE = re.compile(
    r'<script type="module">\s*document\.addEventListener\("DOMContentLoaded", async \(\) => \{\s*'
    r'const diagrams = document\.querySelectorAll\("\.jp-Mermaid > pre\.mermaid"\);(?:(?!</script>).)*</script>'
    r'\s*<style>\s*\.jp-Mermaid(?:(?!</style>).)*</style>(?:\s*<!-- End of mermaid configuration -->)?',
    re.DOTALL,
)


def strip_inert_mermaid(html: str) -> str:
    """A notebook page's HTML without nbconvert's Mermaid loader (its lab template's
    ``mermaid_js``: a module script that imports Mermaid from cdnjs.cloudflare.com when the
    page has a diagram, and the diagrams' styles). No page may have one (a ``.mermaid``
    element is refused), so the loader only carried another origin's URL."""
    return MERMAID_LOADER_RE.sub("", html)


def strip_inert_mathjax(html: str) -> str:
    """A notebook page's HTML without mkdocs-jupyter's empty MathJax ``<script src="">`` and its
    inert configuration (MathJax itself would come from a CDN, so it is never loaded)."""
    return MATHJAX_RE.sub("", html)
