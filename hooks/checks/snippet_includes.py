"""Fail a page early, with one line, when a snippet include is broken or unsafe.

pymdownx.snippets (``check_paths: true``) raises ``SnippetMissingError`` from deep inside
Markdown conversion, which MkDocs reports as a traceback without the page's name. This
runs the same preprocessor, with the same configuration, on the page's Markdown first
and turns that error into a RenderError naming the missing file or section, nested
includes included. Every file it would include is checked before it is read:

- it is not a symbolic link, nor inside one, and its real path is inside the snippets
  folder (``base_path``): pymdownx.snippets' ``restrict_base_path`` compares paths without
  resolving links, so ``snippets/host.txt -> /proc/self/environ`` would publish the build's
  environment (in the deploy job, the OIDC request token);
- it is not empty (an empty snippet renders an empty code block);
- its section markers pair up (``check_section_markers``): pymdownx.snippets shows a section
  from its ``[start:name]`` to the end of the file when the ``[end:name]`` is misspelt.

``check_plain_files`` applies the first rule to every file the build reads from the repository's
own content (pages, ``docs/assets/``, ``overrides/`` with its templates, ``snippets/`` with its
data; ``own_content`` leaves out installed packages, wherever the environment lives):
MkDocs copies a static file by following its link, and renders a linked template,
so ``docs/assets/env.txt -> /proc/self/environ`` published the build's environment (in the
deploy job, the OIDC request token) without any page naming it. Git stores a link as a
link; a hard link cannot cross into ``/proc`` and is not something a pull request can carry.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import markdown
from pymdownx.snippets import SnippetMissingError, SnippetPreprocessor

from hooks.errors import RenderError


def check_included_file(path: Path, written: str, bases: list[Path]) -> None:
    """Raise RenderError unless the file an include resolved to (``path``, under one of
    ``bases``) may be shown: no link on the way, really inside its base, not empty."""
    base = next((b for b in bases if path.is_relative_to(b)), None)
    if base is None:
        raise RenderError(f"snippet include {written!r}: {path} is outside the snippets folder", written)
    for step in [path, *path.parents]:
        if step == base:
            break
        if step.is_symlink():
            raise RenderError(
                f"snippet include {written!r}: {step.relative_to(base)} is a symbolic link "
                f"(to {step.readlink()}); snippets are plain files inside {base.name}/",
                written,
            )
    if not path.resolve().is_relative_to(base.resolve()):
        raise RenderError(
            f"snippet include {written!r}: its real path {path.resolve()} is outside {base.name}/", written
        )
    if not path.read_bytes().strip():
        raise RenderError(f"snippet include {written!r}: the file is empty", written)
    check_section_markers(
        path.read_text(encoding="utf-8", errors="replace"), f"{base.name}/{path.relative_to(base).as_posix()}", written
    )


def check_section_markers(text: str, where: str, written: str | None = None) -> None:
    """Raise RenderError naming ``where`` (the snippet file), the line and the marker unless
    every ``--8<-- [start:name]`` of ``text`` is closed by a later ``[end:name]``, and every
    ``[end:name]`` closes a section of that name that is open (sections may nest or overlap,
    as pymdownx.snippets allows; its own marker pattern; a marker escaped with ``;`` is text)."""
    opened: dict[str, int] = {}  # name -> line of its start
    for number, line in enumerate(text.splitlines(), start=1):
        marker = SnippetPreprocessor.RE_SNIPPET_SECTION.match(line) if "8<-" in line else None
        if marker is None or marker["escape"]:
            continue
        kind, name = marker["type"].lower(), marker["name"]
        if kind == "start" and name in opened:
            raise RenderError(
                f"{where}:{number}: section marker [start:{name}] while section '{name}' (line {opened[name]}) is open",
                written,
            )
        if kind == "start":
            opened[name] = number
        elif name not in opened:
            still = "".join(f"; section '{other}' (line {at}) is still open" for other, at in opened.items())
            raise RenderError(f"{where}:{number}: section marker [end:{name}] closes no section{still}", written)
        else:
            del opened[name]
    for name, number in opened.items():
        raise RenderError(
            f"{where}:{number}: section '{name}' has no [end:{name}]: an include of it would show the rest of the file",
            written,
        )


def check_snippets(page_markdown: str, snippets_config: dict[str, Any]) -> None:
    """Raise RenderError if any ``--8<--`` include of ``page_markdown`` cannot be resolved or may not be shown."""
    if "--8<--" not in page_markdown:
        return
    md = markdown.Markdown(
        extensions=["pymdownx.snippets"],
        extension_configs={
            "pymdownx.snippets": {
                **snippets_config,
                "check_paths": True,
                "restrict_base_path": True,
                "url_download": False,
            }
        },
    )
    preprocessor: Any = md.preprocessors["snippet"]  # pymdownx's SnippetPreprocessor (pymdownx has no types)
    resolve = preprocessor.get_snippet_path
    bases = [Path(base) for base in preprocessor.base_path]

    def resolve_checked(path: str) -> str | None:
        found = resolve(path)
        if found is not None:
            check_included_file(Path(found), path, bases)
        return found

    preprocessor.get_snippet_path = resolve_checked
    try:
        preprocessor.run(page_markdown.split("\n"))
    except SnippetMissingError as exc:
        missing = re.search(r"Snippet at path '(.+)' could not be found", str(exc))
        raise RenderError(f"broken snippet include: {exc}", f'"{missing.group(1)}"' if missing else None) from None


def own_content(paths: Iterable[str | Path], root: Path, content_dirs: Iterable[str | Path]) -> list[Path]:
    """The ``paths`` inside ``content_dirs`` (the repository's own content: pages, overrides,
    snippets), made absolute, not resolved. The others are installed packages (the theme's),
    wherever the environment lives, even a linked ``.venv`` inside ``root`` (the checkout).
    Raises RenderError naming a content folder outside ``root``."""
    root = Path(os.path.abspath(root))
    content = [Path(os.path.abspath(folder)) for folder in content_dirs]
    for folder in content:
        if not folder.is_relative_to(root):
            raise RenderError(f"{folder}: a content folder outside the repository ({root})")
    absolute = (Path(os.path.abspath(path)) for path in paths)
    return [path for path in absolute if any(path.is_relative_to(folder) for folder in content)]


def check_plain_files(paths: Iterable[Path], root: Path) -> None:
    """Raise RenderError naming the first of ``paths`` (absolute, inside ``root``, the checkout:
    see ``own_content``) that is a symbolic link or inside one, up to ``root``."""
    root = Path(os.path.abspath(root))
    checked: set[Path] = set()
    for path in paths:
        for step in [path, *path.parents]:
            if step == root or step in checked:
                break
            if step.is_symlink():
                raise RenderError(
                    f"{path.relative_to(root)}: {step.relative_to(root)} is a symbolic link (to {step.readlink()}); "
                    "the site is built from plain files of the repository"
                )
            checked.add(step)
