"""The conventions between a page's languages, read from the Markdown sources before a build.

For every Markdown page (``docs/<page>.<lang>.md``, every language present: ``hooks/checks/language_parity.py``):

- every code block is an include of ``snippets/``: its body is one ``--8<-- "file"`` line, so
  the code is written once for every language; a block typed into the page is refused unless
  its fence marks it as a deliberate inline example (```` ```{ .bash .inline-example } ````);
- every language shows the same code blocks in the same order (the same included files; an
  inline example with the same lines);
- every language has the same heading anchors, in the same order (the language switcher keeps
  the reader's place: ``{ #id }``, or the slug ``toc`` makes of the heading's text);
- no page sets one anchor twice (``toc`` makes its own slugs unique, never an explicit ``{ #id }``:
  a link to it would land on the first heading, and the published page would hold an id twice).

Each error is one line naming the file and line of each language. Raises RenderError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown.extensions.toc import slugify

from hooks.errors import RenderError
from verify.languages import DEFAULT_LANGUAGE, LANGUAGES

FENCE_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
INCLUDE_RE = re.compile(r'^\s*--8<--\s+"(?P<path>[^"]+)"\s*$')
HEADING_RE = re.compile(r"^(?P<level>#{1,6})\s+(?P<text>.*?)(?:\s*\{(?P<attrs>[^{}]*)\})?\s*#*\s*$")
ID_RE = re.compile(r"(?:^|\s)#(?P<id>[^\s}]+)")
INLINE_EXAMPLE = ".inline-example"


@dataclass(frozen=True)
class Block:
    line: int
    shown: str  # the included file, or the inline example's lines


@dataclass(frozen=True)
class Heading:
    line: int
    anchor: str
    explicit: bool = False


def outline(text: str, where: str) -> tuple[list[Block], list[Heading]]:
    """The code blocks and headings of one page's Markdown ``text`` (``where``: its path, for
    errors). Raises RenderError for a typed block without the inline-example mark."""
    blocks: list[Block] = []
    headings: list[Heading] = []
    lines = text.split("\n")
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        fence = FENCE_RE.match(line)
        if fence:
            start, closing = number, re.compile(rf"^[ \t]*{fence['fence'][0]}{{{len(fence['fence'])},}}[ \t]*$")
            body = []
            while number < len(lines) and not closing.match(lines[number]):
                body.append(lines[number])
                number += 1
            number += 1
            include = INCLUDE_RE.match(body[0]) if len(body) == 1 else None
            if include:
                blocks.append(Block(start, f'--8<-- "{include["path"]}"'))
            elif INLINE_EXAMPLE in fence["info"].split():
                blocks.append(Block(start, "\n".join(body)))
            else:
                raise RenderError(
                    f"{where}:{start}: a code block typed into the page: write it once in snippets/ and "
                    f"include it (a fence holding one line --8<-- \"file\"), or mark a deliberate inline "
                    f"example: ```{{ .bash {INLINE_EXAMPLE} }}"
                )
            continue
        heading = HEADING_RE.match(line)
        if heading:
            explicit = ID_RE.search(heading["attrs"] or "")
            headings.append(
                Heading(number, explicit["id"] if explicit else slugify(heading["text"], "-"), bool(explicit))
            )
    return blocks, headings


def check_unique_anchors(headings: list[Heading], where: str) -> None:
    """Raise RenderError naming ``where`` and the line of the second heading that sets an explicit
    anchor already set on the page."""
    first: dict[str, int] = {}
    for heading in headings:
        if heading.explicit and heading.anchor in first:
            raise RenderError(
                f"{where}:{heading.line}: heading anchor '#{heading.anchor}' is set twice on this page "
                f"(first at line {first[heading.anchor]}); every anchor of a page is unique"
            )
        if heading.explicit:
            first[heading.anchor] = heading.line


def check_page_conventions(docs_dir: Path, languages: tuple[str, ...] = LANGUAGES) -> None:
    """Check every Markdown page of ``docs_dir`` against its default-language version.
    Raises RenderError naming the first file and line that breaks a convention."""
    for reference_path in sorted(docs_dir.rglob(f"*.{DEFAULT_LANGUAGE}.md")):
        stem = reference_path.name.removesuffix(f".{DEFAULT_LANGUAGE}.md")
        name = f"docs/{reference_path.relative_to(docs_dir)}"
        reference = outline(reference_path.read_text(encoding="utf-8"), name)
        check_unique_anchors(reference[1], name)
        for lang in languages:
            path = reference_path.with_name(f"{stem}.{lang}.md")
            if lang == DEFAULT_LANGUAGE or not path.is_file():
                continue
            other = f"docs/{path.relative_to(docs_dir)}"
            blocks, headings = outline(path.read_text(encoding="utf-8"), other)
            check_unique_anchors(headings, other)
            _same(
                reference[0],
                blocks,
                name,
                other,
                "code block",
                lambda block: block.shown,
                "every language shows the same code blocks in the same order",
            )
            _same(
                reference[1],
                headings,
                name,
                other,
                "heading anchor",
                lambda heading: f"#{heading.anchor}",
                "every language has the same heading anchors in the same order (set them with { #id })",
            )


def _same(reference: list, other: list, name: str, other_name: str, what: str, key, rule: str) -> None:
    for position in range(max(len(reference), len(other))):
        mine = reference[position] if position < len(reference) else None
        theirs = other[position] if position < len(other) else None
        if mine is not None and theirs is not None and key(mine) == key(theirs):
            continue
        if theirs is None:
            assert mine is not None  # one of the two lists is the longer
            raise RenderError(f"{name}:{mine.line}: {what} {key(mine)!r} has none in {other_name}; {rule}")
        if mine is None:
            raise RenderError(f"{other_name}:{theirs.line}: {what} {key(theirs)!r} has none in {name}; {rule}")
        raise RenderError(
            f"{other_name}:{theirs.line}: {what} {key(theirs)!r} where {name}:{mine.line} has {key(mine)!r}; {rule}"
        )
