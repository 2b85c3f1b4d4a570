"""A notebook of each language carries its own code comments, and runs as it is written.

``docs/NAME.fr.ipynb`` holds the code cells of ``docs/NAME.it.ipynb`` with the French
comments of ``snippets/comments.yaml``: the French page shows, copies and executes French
code. ``check_translated_notebook`` proves the two are the same program: the same cell
types, each code cell the same to Python (the AST of its UTF-8 text), and each comment the
catalogue's translation of the Italian one in the same place (``translated_source`` writes
such a cell; a notebook editor keeps both files).
"""

from __future__ import annotations

import ast
import functools
import json
from pathlib import Path

from hooks.errors import RenderError
from hooks.render.comments import python_comments


def comments(source: str) -> list[tuple[tuple[int, int], str]]:
    """((line, column), text without '#' and surrounding spaces) of each comment of ``source``."""
    return [(start, token.removeprefix("#").strip()) for start, token in python_comments(source)]


@functools.lru_cache(maxsize=256)
def _ast_of(source: str) -> str:
    """``ast.dump`` of the UTF-8 bytes of ``source``; raises SyntaxError (which is not kept)."""
    return ast.dump(ast.parse(source.encode("utf-8")))


def translated_source(source: str, catalogue: dict[str, str]) -> str:
    """``source`` with each comment replaced by its ``catalogue`` translation (KeyError if none)."""
    lines = source.splitlines(keepends=True)
    for (row, col), text in reversed(comments(source)):
        line = lines[row - 1]
        end = len(line.rstrip("\r\n"))
        lines[row - 1] = line[:col] + "# " + catalogue[text] + line[end:]
    return "".join(lines)


def _cells(path: Path) -> list[dict]:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError) as exc:
        raise RenderError(f"{path.name}: not a readable notebook ({exc})") from None


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def check_translated_notebook(notebook: Path, original: Path, catalogue: dict[str, str]) -> None:
    """Raise RenderError unless ``notebook`` has ``original``'s cells (types in order), each
    code cell the same to Python's AST, with each comment the ``catalogue`` translation of
    the original's comment at the same place (the tags too: a hidden cell stays hidden)."""
    mine, theirs = _cells(notebook), _cells(original)
    if [c.get("cell_type") for c in mine] != [c.get("cell_type") for c in theirs]:
        raise RenderError(f"{notebook.name}: its cells are not those of {original.name} (types, in order)")
    for number, (cell, other) in enumerate(zip(mine, theirs, strict=True), start=1):
        if cell.get("cell_type") != "code":
            continue
        where = f"{notebook.name}: code cell {number}"
        if (cell.get("metadata") or {}).get("tags") != (other.get("metadata") or {}).get("tags"):
            raise RenderError(f"{where}: its tags differ from {original.name}'s")
        source, original_source = _source(cell), _source(other)
        try:
            same = _ast_of(source) == _ast_of(original_source)
        except SyntaxError as exc:
            raise RenderError(f"{where}: not Python ({exc.msg}, line {exc.lineno})") from None
        if not same:
            raise RenderError(f"{where}: not the same code as {original.name} to Python (its AST differs)")
        got, expected = comments(source), comments(original_source)
        if [place for place, _ in got] != [place for place, _ in expected]:
            raise RenderError(f"{where}: its comments are not where {original.name} has them")
        for (_, text), (_, italian) in zip(got, expected, strict=True):
            if italian not in catalogue:
                raise RenderError(f"{where}: code comment {italian!r} has no translation in snippets/comments.yaml")
            if text != catalogue[italian]:
                raise RenderError(
                    f"{where}: comment {text!r} is not the translation of {italian!r} "
                    f"({catalogue[italian]!r}, snippets/comments.yaml)"
                )


def check_notebook_language(notebook: Path, lang: str) -> None:
    """For a notebook of a language other than the default (``NAME.fr.ipynb``), check it
    against the default language's (``NAME.it.ipynb``) with ``check_translated_notebook``."""
    from hooks.render.comments import load_catalogue
    from verify.languages import DEFAULT_LANGUAGE

    if lang == DEFAULT_LANGUAGE:
        return
    stem = notebook.name.removesuffix(f".{lang}.ipynb")
    original = notebook.with_name(f"{stem}.{DEFAULT_LANGUAGE}.ipynb")
    check_translated_notebook(notebook, original, load_catalogue(lang))
