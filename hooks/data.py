"""Load the YAML data of ``snippets/data`` and check its per-language text.

A parsed file is reused only while its modification time and size are unchanged, so
``mkdocs serve`` shows an edited data file on the next rebuild. Parsed data is shared:
callers treat it as read-only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import RenderError
from .languages import LANGUAGES

REPO_ROOT = Path(__file__).resolve().parent.parent
SNIPPETS_DIR = REPO_ROOT / "snippets"
DATA_DIR = SNIPPETS_DIR / "data"
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it
_parsed: dict[Path, tuple[tuple[int, int], Any]] = {}


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def load_yaml(name: str, data_dir: Path | None = None) -> Any:
    """Parse ``<data_dir>/<name>.yaml``. Raises RenderError naming the file."""
    path = (data_dir or DATA_DIR) / f"{name}.yaml"
    if not path.is_file():
        raise RenderError(f"{relative(path)}: data file not found")
    stamp = file_stamp(path)
    cached = _parsed.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader)  # noqa: S506 (safe loader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where else ""
        raise RenderError(f"{relative(path)}: invalid YAML{line}: {getattr(exc, 'problem', exc)}") from None
    _parsed[path] = (stamp, data)
    return data


def file_stamp(path: Path) -> tuple[int, int]:
    """(mtime_ns, size) of ``path``: a changed stamp means the file was edited."""
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def tree_stamp(*folders: Path, pattern: str = "*") -> tuple:
    """(path, mtime_ns, size) of every file matching ``pattern`` under ``folders``: equal
    stamps mean nothing there was edited, added or removed."""
    return tuple(sorted((str(path), *file_stamp(path)) for folder in folders
                        for path in folder.rglob(pattern) if path.is_file()))


def text(value: Any, lang: str, where: str) -> str:
    """The ``lang`` text of a per-language field ``{it: ..., fr: ...}``.

    A field missing any language of ``LANGUAGES`` is an error even when the other
    language is being built, so a half-translated file never publishes.
    """
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, dict):
        raise RenderError(f"{where}: expected text or a mapping of languages, got {value!r}")
    missing = [code for code in LANGUAGES if not value.get(code)]
    if missing:
        raise RenderError(f"{where}: missing translation for {', '.join(missing)}")
    return str(value[lang])
