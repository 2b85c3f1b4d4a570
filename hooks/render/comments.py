"""Translated comments in code blocks, with the code itself left byte-identical.

Mechanism: every snippet in ``snippets/`` is written once, with its comments in
Italian (the default language). ``snippets/comments.yaml`` lists each comment with
its translations (``- it: ... fr: ...``). After MkDocs has rendered a page, Pygments
has already marked comments as ``<span class="c1">`` (and ``c``, ``cm``, ``cs``) inside
``div.highlight``; for a non-default language each such span's text is replaced by
its translation (only the code blocks are parsed, with selectolax: hooks/render/code_blocks.py).
Code tokens are never touched, so copy buttons and extraction give the same code in
every language. A comment without a translation fails the build.

Notebook pages are not translated here: each language's notebook carries its own comments
(``docs/NAME.fr.ipynb``, checked against the Italian one by hooks/notebooks/translated.py), so
a cell shows, copies and executes the same French text.

A translation is only ever the text of one comment, and Python runs bytes: a translation
may not hold a newline, a carriage return, a backslash, a control or format character
(bidirectional overrides included), or anything Python's coding-cookie rule (PEP 263)
matches, which would make Python decode the whole file otherwise. The schema of the
catalogue checks every translation whenever it is loaded (``hooks.data.schemas.safe_comment``).

What Pygments marks as a comment is not always one to the tool that runs the block (bash
reads ``x=#y; echo $x`` as two commands, Pygments as one and a comment). So every block
whose comments were translated, titled or not, must read the same to its tool before and
after (``verify.readers``: Python's AST from the bytes, ``bash --pretty-print``, YAML or JSON
data); a block of a language no reader knows gets no translated comments.
``hooks/checks/same_code.py`` also compares each titled block across languages.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from selectolax.lexbor import LexborHTMLParser

from hooks.data.load import SNIPPETS_DIR, load_model
from hooks.errors import RenderError
from hooks.render.code_blocks import code_blocks
from verify.languages import DEFAULT_LANGUAGE
from verify.readers import ReadError, language_of, read_ahead, read_as

COMMENT_CLASSES = {"c", "c1", "cm", "cs"}  # Pygments comment tokens; shebangs ("ch") stay as they are
COMMENT_SELECTOR = ", ".join(f"span.{name}" for name in sorted(COMMENT_CLASSES))
ANY_COMMENT_RE = re.compile(rf'<span class="(?:{"|".join(sorted(COMMENT_CLASSES))})">')
LANGUAGE_CLASS_RE = re.compile(r"\b(?:language|hl)-(\S+)")  # pymdownx.highlight (pygments_lang_class), a notebook cell
MARKER_RE = re.compile(r"^(?P<marker>#+\s*|//\s*)(?P<body>.*?)(?P<trail>\s*)$", re.DOTALL)
CATALOGUE = "snippets/comments.yaml"


def load_catalogue(lang: str) -> dict[str, str]:
    """Italian comment text -> its ``lang`` translation. Raises RenderError (the schema of
    ``snippets/comments.yaml``, ``hooks.data.schemas.CommentsFile``, checks every translation)."""
    return {entry[DEFAULT_LANGUAGE]: entry[lang] for entry in load_model("comments", data_dir=SNIPPETS_DIR).root}


def translate_comments(
    html: str, lang: str, catalogue: dict[str, str] | None = None, used: set[str] | None = None
) -> str:
    """Return ``html`` with code comments in ``lang``; unchanged for the default language.
    Each comment translated is added to ``used`` (``check_catalogue_used`` at the end of the build).

    Raises RenderError naming the first comment that has no translation.
    """
    if lang == DEFAULT_LANGUAGE or not ANY_COMMENT_RE.search(html):
        return html
    catalogue = load_catalogue(lang) if catalogue is None else catalogue
    parts, done, translated = [], 0, []
    for start, end in code_blocks(
        html
    ):  # a notebook's cells carry its language's comments (hooks/notebooks/translated.py)
        block = html[start:end]
        if ANY_COMMENT_RE.search(block):
            div, original = _translate_block(block, lang, catalogue, set() if used is None else used)
            parts += [html[done:start], div.html if original is not None else block]
            done = end
            if original is not None:
                translated.append(Translated(div, original))
    read_ahead(pair for block in translated for pair in block.readings())  # the bash readers of the page at once
    for done_block in translated:
        check_same_code(done_block.div, done_block.original, lang)
    return "".join(parts) + html[done:] if parts else html


@dataclass(frozen=True)
class Translated:
    """A code block whose comments were translated: its ``div`` and its ``original`` code."""

    div: Any
    original: str

    def compared(self) -> tuple[str, str, str]:
        """What ``check_same_code`` decides from: the block's classes, its original code, its code now."""
        return self.div.attributes.get("class") or "", self.original, code_node(self.div).text()

    def readings(self) -> list[tuple[str, str]]:
        fence = LANGUAGE_CLASS_RE.search(self.div.attributes.get("class") or "")
        language = language_of(fence.group(1)) if fence else None
        return [(language, self.original), (language, code_node(self.div).text())] if language else []


def _translate_block(block: str, lang: str, catalogue: dict[str, str], used: set[str]) -> tuple[Any, str | None]:
    """(the block's div with its comments in ``lang``, its original code), or (None, None) if no comment has prose."""
    tree = LexborHTMLParser(block)
    changed = False
    for span in tree.css(COMMENT_SELECTOR):
        match = MARKER_RE.match(span.text())
        if not match or not re.search(r"[^\W\d_]", match.group("body")) or span.first_child is None:
            continue
        body = match.group("body")
        if body not in catalogue:
            raise RenderError(missing_translation(body, lang))
        used.add(body)
        span.first_child.replace_with(match.group("marker") + catalogue[body] + match.group("trail"))
        changed = True
    if not changed:
        return None, None
    return tree.css_first("div"), code_node(LexborHTMLParser(block)).text()


def written_in(body: str, snippets_dir: Path = SNIPPETS_DIR) -> str | None:
    """``snippets/<file>:<line>`` of the first line of a snippet (not its data) with the comment ``body``, or None."""
    for path in sorted(snippets_dir.rglob("*")):
        if not path.is_file() or path.is_relative_to(snippets_dir / "data") or path.name == "comments.yaml":
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(lines, 1):
            match = MARKER_RE.match(line[line.find("#") :]) if "#" in line else None
            if match and match.group("body") == body:
                return f"snippets/{path.relative_to(snippets_dir).as_posix()}:{number}"
    return None


def missing_translation(body: str, lang: str) -> str:
    """The error for a comment without a ``lang`` translation: where it is written, and the entry to paste."""
    entry = yaml.safe_dump([{DEFAULT_LANGUAGE: body, lang: ""}], allow_unicode=True, sort_keys=False, width=10**6)
    where = written_in(body)
    return (
        f"{where + ': ' if where else ''}code comment {body!r} has no '{lang}' translation; "
        f"add to {CATALOGUE} and translate:\n{entry.rstrip()}"
    )


def notebook_comments(docs_dir: Path) -> set[str]:
    """The comments of every code cell of the notebooks in ``docs_dir``, those a page does not
    show included (a set-up cell removed by its tag is read in the repository)."""
    import json
    import tokenize

    found = set()
    for path in sorted(docs_dir.rglob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
            if cell.get("cell_type") != "code":
                continue
            source = "".join(cell.get("source", []))
            try:
                tokens = [token for _, token in python_comments(source)]
            except (tokenize.TokenError, SyntaxError):
                continue  # the notebook checks name a cell that does not parse
            found |= {match.group("body") for match in map(MARKER_RE.match, tokens) if match}
    return found


@functools.lru_cache(maxsize=256)  # the same cells come back in every build of a `mkdocs serve` process
def python_comments(source: str) -> tuple[tuple[tuple[int, int], str], ...]:
    """((line, column), token) of each comment of Python ``source``, as ``tokenize`` reads it
    (the token with its ``#``). Raises tokenize.TokenError or SyntaxError (not kept)."""
    import io
    import tokenize

    return tuple(
        (token.start, token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    )


def check_catalogue_used(
    used: set[str], lang: str, docs_dir: Path, path: Path = SNIPPETS_DIR / "comments.yaml"
) -> None:
    """Raise RenderError naming the line of the first entry of ``path`` that no comment of the
    ``lang`` build used (``used``: ``translate_comments``) and no notebook of ``docs_dir`` holds:
    an orphan left by an edited snippet."""
    if lang == DEFAULT_LANGUAGE:
        return
    used = used | notebook_comments(docs_dir)
    entries = yaml.compose(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for entry in entries.value if entries is not None else []:
        for key, value in entry.value:
            if key.value == DEFAULT_LANGUAGE and value.value not in used:
                raise RenderError(
                    f"{CATALOGUE}:{value.start_mark.line + 1}: {value.value!r} is the comment of no code "
                    "block of any page (its snippet changed?): delete the entry"
                )


def code_node(tree):
    """The element holding a block's code: ``pre > code`` (a fenced block), or ``pre`` (a notebook cell)."""
    return tree.css_first("pre > code") or tree.css_first("pre")


def check_same_code(div, original: str, lang: str) -> None:
    """Raise RenderError unless the block ``div`` (comments translated to ``lang``) reads the
    same to its tool as its ``original`` code."""
    fence = LANGUAGE_CLASS_RE.search(div.attributes.get("class") or "")
    language = language_of(fence.group(1)) if fence else None
    translated = code_node(div).text()
    first_line = original.strip().splitlines()[0][:60] if original.strip() else ""
    where = f"the {fence.group(1) if fence else 'untyped'} block starting {first_line!r}"
    if language is None:
        raise RenderError(
            f"{where}: its comments cannot be translated, no reader of this language checks that "
            "the code stays the same (verify/readers.py)"
        )
    try:
        same = read_as(language, original) == read_as(language, translated)
    except ReadError as exc:
        raise RenderError(f"{where}: {exc}; its comments are translated only where {language} reads the code") from None
    if not same:
        raise RenderError(
            f"{where}: the '{lang}' comments change the code as {language} reads it "
            f"(what looks like a comment is code to {language}); fix the snippet or {CATALOGUE}"
        )
