"""Extract the code blocks readers copy from the built site, per language, and check them.

A block is found by its title: a fenced block written ```` ```python title="nccl_check.py" ````
renders (pymdownx.highlight + Material) as ``div.highlight > span.filename`` followed by
``pre > code``; the title is the block's stable name. The default language lives at the
site's root, every other language under ``<site>/<lang>/``.

"Identical code" means identical to the tool that runs it (``verify.readers``): a Python
block, encoded as the UTF-8 file extraction writes, must be UTF-8 by
``tokenize.detect_encoding`` (no coding cookie that makes Python read it otherwise) and give
the same ``ast.dump(ast.parse(bytes))`` as the default language's block; a shell block the
same ``bash --pretty-print``, a YAML or JSON block the same data. Comments are the only thing
translated, and no tool's reading holds them. A block of another kind must have the same
lines once comments are removed. A name is the title of exactly one block per language. The file written is the default
language's text, which for an LF snippet with one trailing newline is byte-identical to
``snippets/<name>``, so ``sha256`` of the extracted file equals
``verify.record.snippet_sha256`` of the snippet the pages include. The render layer applies
the same checks in every build (``hooks/checks/same_code.py``).

CLI: ``python -m verify.extract SITE_DIR OUT_DIR [--block NAME ...]``; exit 2 with one line
naming the block on any problem.
"""

from __future__ import annotations

import argparse
import difflib
import io
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from verify.languages import DEFAULT_LANGUAGE, LANGUAGES
from verify.readers import ReadError, language_of, read_as
from verify.record import BLOCKS, snippet_sha256

REQUIRED_BLOCKS = BLOCKS  # every block the GPU job hashes into its record


class ExtractError(Exception):
    """A block is missing, duplicated, not UTF-8 to Python, or differs between languages."""


@dataclass(frozen=True)
class Block:
    name: str
    lang: str
    page: str
    code: str


def language_root(site_dir: Path, lang: str) -> Path:
    return site_dir if lang == DEFAULT_LANGUAGE else site_dir / lang


def blocks_in_html(html: str, lang: str, page: str) -> list[Block]:
    """Every titled code block of one page."""
    blocks = []
    for title in LexborHTMLParser(html).css("div.highlight > span.filename"):
        code = title.parent.css_first("pre > code") if title.parent is not None else None
        if code is not None:
            blocks.append(Block(title.text().strip(), lang, page, code.text()))
    return blocks


def titled_code(html: str, name: str) -> str | None:
    """The code of the first block titled ``name`` in one page's HTML, or None."""
    return next((block.code for block in blocks_in_html(html, "", "") if block.name == name), None)


def collect(site_dir: Path, lang: str) -> dict[str, Block]:
    """Titled blocks of one language's pages, by name. Raises ExtractError for a second
    block of the same name (one block per snippet and language)."""
    root = language_root(site_dir, lang)
    if not root.is_dir():
        raise ExtractError(f"{root}: no built pages for language {lang!r}")
    others = {root / other for other in LANGUAGES if other != lang and language_root(site_dir, other) != root}
    found: dict[str, Block] = {}
    for path in sorted(root.rglob("*.html")):
        if any(other in path.parents for other in others):
            continue
        page = str(path.relative_to(site_dir))
        for block in blocks_in_html(path.read_text(encoding="utf-8"), lang, page):
            if block.name in found:
                raise ExtractError(duplicate_message(block.name, lang, found[block.name].page, block.page))
            found[block.name] = block
    return found


def duplicate_message(name: str, lang: str, first: str, second: str) -> str:
    return (
        f"block {name!r} ({lang}): a second block with this title in {second} (the first is in {first}); "
        "a title names one snippet, shown once per language"
    )


def _strip_python(code: str, name: str) -> list[tuple[int, str]]:
    cuts: dict[int, int] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                cuts[token.start[0]] = token.start[1]
    except (tokenize.TokenError, SyntaxError) as exc:
        raise ExtractError(f"block {name!r}: not valid Python ({exc})") from None
    lines = code.splitlines()
    return [(i, line[: cuts.get(i, len(line))].rstrip()) for i, line in enumerate(lines, start=1)]


def _strip_shell_line(line: str) -> str:
    quote = None
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def code_lines(code: str, name: str) -> list[tuple[int, str]]:
    """(line number, code without comments) for every line that has code left."""
    if name.endswith(".py"):
        stripped = _strip_python(code, name)
    else:
        stripped = [(i, _strip_shell_line(line)) for i, line in enumerate(code.splitlines(), start=1)]
    return [(i, line) for i, line in stripped if line]


def python_ast(code: str, where: str) -> str:
    """``ast.dump`` of ``code`` as Python reads the UTF-8 file extraction writes. Raises
    ExtractError when Python would decode it as anything but UTF-8 (a coding cookie on line
    1 or 2, a byte-order mark) or cannot parse it."""
    return tool_reading("python", code, where)


def tool_reading(language: str, code: str, where: str) -> str:
    """``code`` as the tool of ``language`` reads it (``verify.readers.read_as``). Raises ExtractError naming ``where``."""
    try:
        return read_as(language, code)
    except ReadError as exc:
        raise ExtractError(f"{where}: {exc}") from None


def compare_code(name: str, reference: tuple[str, str], other: tuple[str, str]) -> None:
    """Raise ExtractError unless ``other`` is the same code as ``reference``, each ``(code,
    where)`` (``where`` names the language and page in messages): the same reading by the
    tool of ``name``'s kind (``verify.readers``: Python's AST, bash's parse, YAML or JSON
    data), or for another kind the same lines without comments. The message names the first
    differing line."""
    (ref_code, ref_where), (other_code, other_where) = reference, other
    language = language_of(name)
    if language is not None and tool_reading(language, ref_code, f"block {name!r}: {ref_where}") == tool_reading(
        language, other_code, f"block {name!r}: {other_where}"
    ):
        return
    ref_lines, other_lines = code_lines(ref_code, name), code_lines(other_code, name)
    matcher = difflib.SequenceMatcher(
        a=[line for _, line in ref_lines], b=[line for _, line in other_lines], autojunk=False
    )
    for tag, i1, _i2, j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "delete":
            ref_no, ref_line = ref_lines[i1]
            raise ExtractError(f"block {name!r}: {other_where} lacks line {ref_no} of {ref_where}: {ref_line!r}")
        if tag == "insert":
            other_no, other_line = other_lines[j1]
            raise ExtractError(f"block {name!r}: {other_where} has an extra line {other_no}: {other_line!r}")
        (ref_no, ref_line), (other_no, other_line) = ref_lines[i1], other_lines[j1]
        raise ExtractError(
            f"block {name!r}: code differs between {ref_where} (line {ref_no}) "
            f"and {other_where} (line {other_no}): {ref_line!r} != {other_line!r}"
        )
    if language is not None:
        raise ExtractError(
            f"block {name!r}: {language} reads {other_where} differently from {ref_where} "
            "although its lines look the same"
        )


def compare(name: str, reference: Block, other: Block) -> None:
    """Raise ExtractError naming the first line whose code differs between two languages."""
    compare_code(
        name,
        (reference.code, f"the {reference.lang} version ({reference.page})"),
        (other.code, f"the {other.lang} version ({other.page})"),
    )


def check_runnable(block: Block) -> None:
    """A block must hold code that its tool reads (``verify.readers``: a Python block UTF-8 to
    Python and parsing, a shell block parsed by bash, YAML or JSON data). Raises ExtractError."""
    if not block.code.strip():
        raise ExtractError(f"block {block.name!r} is empty in {block.page}")
    language = language_of(block.name)
    if language is not None:
        tool_reading(language, block.code, f"block {block.name!r} ({block.lang}, {block.page})")


def extract(
    site_dir: Path, out_dir: Path, names: tuple[str, ...] = REQUIRED_BLOCKS, lang: str = DEFAULT_LANGUAGE
) -> dict[str, str]:
    """Check ``names`` in every language and write ``lang``'s text of each (the default
    language's unless told: the CPU rehearsal runs every language's) to ``out_dir``;
    returns name -> sha256 of what was written.

    Raises ExtractError naming the block (missing in a language, or code that differs).
    """
    per_lang = {lang: collect(site_dir, lang) for lang in LANGUAGES}
    hashes = {}
    for name in names:
        missing = [lang for lang in LANGUAGES if name not in per_lang[lang]]
        if missing:
            where = ", ".join(f"{lang} ({language_root(site_dir, lang)})" for lang in missing)
            raise ExtractError(
                f"block {name!r} not found in the built pages of {where}: is its title=\"{name}\" still there?"
            )
        reference = per_lang[DEFAULT_LANGUAGE][name]
        for other in LANGUAGES:
            check_runnable(per_lang[other][name])
            if other != DEFAULT_LANGUAGE:
                compare(name, reference, per_lang[other][name])
        written = per_lang[lang][name].code
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / name).write_text(written, encoding="utf-8", newline="")
        hashes[name] = snippet_sha256(written.encode("utf-8"))
    return hashes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.extract", description=__doc__.splitlines()[0])
    parser.add_argument("site_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument(
        "--block", action="append", dest="blocks", help=f"block title (default: {', '.join(REQUIRED_BLOCKS)})"
    )
    args = parser.parse_args(argv)
    try:
        hashes = extract(args.site_dir, args.out_dir, tuple(args.blocks or REQUIRED_BLOCKS))
    except ExtractError as exc:
        print(f"verify.extract: error: {exc}", file=sys.stderr)
        return 2
    for name, digest in hashes.items():
        print(f"{args.out_dir / name}  sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
