"""Identical code in every language, checked in every build (not only the publish build).

A titled code block (```` ```python title="nccl_check.py" ````) is a snippet readers copy
and ``verify.extract`` runs. Over one build, ``TitledBlocks`` sees every built page of every
language (static-i18n builds the default language first, then each other one) and refuses:

- a second block with the same title in one language (one snippet, shown once);
- a block whose code Python would read differently from the default language's block of
  that title (``verify.extract.compare_code``: UTF-8 by ``tokenize.detect_encoding``, same
  AST parsed from the bytes), or that does not parse;
- a title present in one language and not in another (the same code under another title);
- a title (an element of class ``filename``) outside a code block: written in a page's raw
  HTML above another block, it would label that block with a snippet's name;
- a Python block, titled or not, that uses a name, attribute, import or environment variable
  ``verify/block_names.py`` does not list (a block that could read its own comments, or ask
  whether it runs in a rehearsal).

Only the code blocks of a page are parsed (``hooks/render/code_blocks.py``). A development
build keeps an empty entry in ``.cache/block-names`` (``STORE_DIR``, through ``hooks.cache.stored``)
for each block whose names ``check_names`` accepted, under the SHA-256 of the block's code, of
``verify/block_names.py`` (the allow-lists; it imports only the standard library) and of
Python's version (its ``ast``): the next build process checks only what changed; a
publication build (``start`` with no store) checks every block. Raises RenderError.
"""

from __future__ import annotations

import sys
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from hooks.cache import Memo, file_stamp, inputs_digest, stored
from hooks.errors import RenderError
from hooks.render.code_blocks import code_blocks
from verify import block_names
from verify.block_names import PYTHON_FENCES, BlockNameError, check_names
from verify.extract import Block, ExtractError, blocks_in_html, check_runnable, compare, duplicate_message
from verify.languages import DEFAULT_LANGUAGE
from verify.readers import language_of

STORE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "block-names"  # blocks found valid, by names_key
KEEP = 512  # entries kept: every Python block of both languages, and the versions an edit replaced
_rules = Memo()  # verify/block_names.py -> the SHA-256 of its bytes, while the file is unchanged


def checked_names(code: str, where: str, store: Path | None = None) -> None:
    """``check_names(code, where)``; with a ``store`` (a development build: ``STORE_DIR``) a block
    accepted before under ``names_key(code)`` is not checked again. Raises BlockNameError."""
    if store is None:
        check_names(code, where)
        return

    def check() -> bytes:
        check_names(code, where)
        return b""

    stored(store, names_key(code), check, suffix=".ok", keep=KEEP)


def names_key(code: str) -> str:
    """SHA-256 (hex) of what ``check_names`` decides from: Python's version, the allow-lists
    (``verify/block_names.py``'s bytes) and the block's code."""
    rules = Path(block_names.__file__)
    lists = _rules.get(rules, file_stamp(rules), lambda: inputs_digest("", (), ([rules], rules.parent)))
    return inputs_digest("block names", (sys.version, lists, code))


def untitled_python(spans: str) -> list[str]:
    """The code of each Python block (a fence of ``PYTHON_FENCES``) in ``spans`` without a
    Python title (none, or one whose tool is not Python: the titled path checks the others)."""
    found = []
    for block in LexborHTMLParser(spans).css("div.highlight"):
        classes = (block.attributes.get("class") or "").split()
        code, title = block.css_first("pre > code"), block.css_first("span.filename")
        python = any(c.removeprefix("language-") in PYTHON_FENCES for c in classes if c.startswith("language-"))
        if code is not None and python and (title is None or language_of(title.text().strip()) != "python"):
            found.append(code.text())
    return found


class TitledBlocks:
    """The titled blocks of one build: language -> title -> Block (``page`` is the source file)."""

    def __init__(self) -> None:
        self.blocks: dict[str, dict[str, Block]] = {}
        self.store: Path | None = None

    def start(self, lang: str, store: Path | None = None) -> None:
        """A language pass begins; the default language's pass begins a new build. ``store``:
        where accepted blocks are kept (``checked_names``; None in a publication build)."""
        if lang == DEFAULT_LANGUAGE:
            self.blocks.clear()
        self.blocks[lang] = {}
        self.store = store

    def add_page(self, html: str, lang: str, page: str) -> None:
        """Check and remember the titled blocks of one built page, and check the names every
        Python block of it uses (``verify.block_names``). Raises RenderError."""
        if "highlight" not in html:
            return
        spans = "".join(html[start:end] for start, end in code_blocks(html))
        try:
            for number, code in enumerate(untitled_python(spans), start=1):
                checked_names(code, f"Python block {number} without a .py title ({lang}, {page})", self.store)
        except BlockNameError as exc:
            raise RenderError(str(exc)) from None
        if "filename" not in html:
            return
        titles = len(LexborHTMLParser(html).css(".filename"))
        if titles != len(LexborHTMLParser(spans).css("div.highlight > span.filename")):
            raise RenderError(
                "a snippet title (class=\"filename\") outside a code block: only a fenced block's "
                "title=\"…\" names a snippet"
            )
        seen = self.blocks.setdefault(lang, {})
        reference = self.blocks.get(DEFAULT_LANGUAGE, {})
        try:
            for block in blocks_in_html(spans, lang, page):
                if block.name in seen:
                    raise ExtractError(duplicate_message(block.name, lang, seen[block.name].page, page))
                check_runnable(block)
                if language_of(block.name) == "python":
                    checked_names(block.code, f"block {block.name!r} ({lang}, {page})", self.store)
                if lang != DEFAULT_LANGUAGE:
                    if block.name not in reference:
                        raise ExtractError(
                            f"block {block.name!r} ({lang}) has no {DEFAULT_LANGUAGE} block with this title: "
                            "the same code keeps the same title in every language"
                        )
                    compare(block.name, reference[block.name], block)
                seen[block.name] = block
        except (ExtractError, BlockNameError) as exc:
            raise RenderError(str(exc)) from None

    def finish(self, lang: str) -> None:
        """A language pass ended: it must have shown every block of the default language. Raises RenderError."""
        if lang == DEFAULT_LANGUAGE:
            return
        missing = sorted(set(self.blocks.get(DEFAULT_LANGUAGE, {})) - set(self.blocks.get(lang, {})))
        if missing:
            first = self.blocks[DEFAULT_LANGUAGE][missing[0]]
            raise RenderError(
                f"block {missing[0]!r} ({first.page}) has no {lang} block with this title: "
                "the same code keeps the same title in every language"
            )
