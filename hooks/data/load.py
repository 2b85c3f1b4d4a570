"""Load the YAML data of ``snippets/data`` (and ``snippets/comments.yaml``), checked by schema.

``load_yaml`` parses with PyYAML's safe loader (libyaml when available), refusing a key
written twice in one mapping, and validates the result against the file's schema
(``hooks/data/schemas.py``); any problem is one RenderError naming the file and the key.
``load_model`` returns the validated pydantic model itself (frozen): what the schema
guarantees (keys present, types, kinds, every language) needs no check after it, so callers
read attributes and check nothing twice. ``load_yaml`` returns the same file's parsed,
validated mapping, for callers not yet reading the model. A parsed file is reused only while
its modification time and size are unchanged (``hooks.cache.Memo``), so ``mkdocs serve``
shows an edited data file on the next rebuild. Parsed data is shared: callers treat it as
read-only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from hooks.cache import Memo, file_stamp
from hooks.errors import RenderError
from verify.languages import check_languages
from verify.schema_errors import one_line

REPO_ROOT = Path(__file__).resolve().parents[2]
SNIPPETS_DIR = REPO_ROOT / "snippets"
DATA_DIR = SNIPPETS_DIR / "data"
_parsed = Memo()  # path -> its data, while the file is unchanged


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it


class UniqueKeyLoader(_SafeLoader):
    """PyYAML's safe loader, refusing a mapping that names a key twice (PyYAML keeps the last one)
    and any alias (``*name``): a data file is a plain tree, written out in full. Nine lines of
    aliases, each repeating the one above nine times, stand for 9^9 values: what walks them
    (the schema's checks, the error line's ``repr``) took minutes and gigabytes, never a line."""

    def construct_document(self, node):
        seen: set[int] = set()
        pending = [node]
        while pending:
            current = pending.pop()
            if id(current) in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    "an alias (*name) repeats what an anchor (&name) holds; write the data out in full",
                    current.start_mark,
                )
            seen.add(id(current))
            if isinstance(current, yaml.SequenceNode):
                pending.extend(current.value)
            elif isinstance(current, yaml.MappingNode):
                pending.extend(part for pair in current.value for part in pair)
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def parse_yaml(text: str, where: str) -> Any:
    """Parse ``text`` (refusing duplicate keys). Raises RenderError naming ``where`` and the line."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        raise RenderError(f"{where}: invalid YAML{yaml_problem(exc)}") from None


def yaml_problem(exc: Exception) -> str:
    """`` (line N): problem``, and where the construct it was inside began when that is another
    line (PyYAML's ``context_mark``: an unclosed quote is found at the end of the file, and
    starts at the line to fix)."""
    mark, context, context_mark = (getattr(exc, name, None) for name in ("problem_mark", "context", "context_mark"))
    line = f" (line {mark.line + 1})" if mark else ""
    started = (
        f"; {context} that starts at line {context_mark.line + 1}"
        if context and context_mark and (mark is None or context_mark.line != mark.line)
        else ""
    )
    return f"{line}: {getattr(exc, 'problem', None) or exc}{started}"


def validate(data: Any, name: str, where: str, text: str) -> Any:
    """The model of ``data`` (parsed from ``text``) by the schema of ``name`` (hooks/data/schemas.py).
    Raises RenderError."""
    from pydantic import ValidationError

    from hooks.data.schemas import SCHEMAS

    schema = SCHEMAS.get(name)
    if schema is None:
        raise RenderError(f"{where}: no schema for this file; add one to hooks/data/schemas.py (SCHEMAS)")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise RenderError(f"{where}: {one_line(exc)}") from None


def _load(name: str, data_dir: Path | None) -> tuple[Any, Any]:
    """``(parsed mapping, validated model)`` of ``<data_dir>/<name>.yaml``. Raises RenderError naming the file."""
    data_dir = data_dir or DATA_DIR
    path = data_dir / f"{name}.yaml"
    where = f"snippets/{path.name}" if name == "comments" else f"snippets/data/{path.name}"  # as the build sees it
    if not path.is_file():
        raise RenderError(f"{where}: data file not found")

    def parse() -> Any:
        text = path.read_text(encoding="utf-8")
        data = parse_yaml(text, where)
        return data, validate(data, name, where, text)

    return _parsed.get(path, file_stamp(path), parse)


def load_model(name: str, data_dir: Path | None = None) -> Any:
    """The validated model (``hooks.data.schemas.SCHEMAS[name]``) of ``<data_dir>/<name>.yaml``.
    Raises RenderError naming the file and the key."""
    return _load(name, data_dir)[1]


def load_yaml(name: str, data_dir: Path | None = None) -> Any:
    """The parsed mapping of ``<data_dir>/<name>.yaml``, once its schema accepted it (prefer
    ``load_model``). Raises RenderError naming the file and the key."""
    return _load(name, data_dir)[0]


STORE_DIR = REPO_ROOT / ".cache" / "data-checked"  # an empty entry per set of data files found valid
LIBRARIES = ("pydantic", "pydantic-core", "PyYAML", "annotated-types", "typing_extensions")  # what validating runs


def check_data_files(data_dir: Path | None = None, store: Path | None = None) -> None:
    """Validate every YAML file of ``snippets/data`` and ``snippets/comments.yaml``. With a
    ``store`` folder (a development build: ``STORE_DIR``), files found valid leave an entry
    there under the SHA-256 of their bytes, of every ``.py`` of the checkout (the schemas and
    what they import), of the site's languages and of the versions of Python and of
    ``LIBRARIES``; the next build process with the same inputs checks nothing again.
    Raises RenderError."""
    from hooks.cache import code_digest, inputs_digest, package_versions, stored
    from verify.languages import DEFAULT_LANGUAGE, LANGUAGES

    data_dir = data_dir or DATA_DIR
    files = sorted(data_dir.glob("*.y*ml"))
    for path in files:
        if path.suffix == ".yml":
            raise RenderError(f"snippets/data/{path.name}: name data files .yaml")

    def check() -> bytes:
        for path in files:
            load_model(path.stem, data_dir)
        load_model("comments", SNIPPETS_DIR)
        return b""

    if store is None:
        check()
        return
    key = inputs_digest(
        "valid data files",
        (
            *package_versions(LIBRARIES),
            f"languages={LANGUAGES!r} default={DEFAULT_LANGUAGE!r}",
            code_digest(REPO_ROOT),
        ),
        (files, data_dir),
        ([SNIPPETS_DIR / "comments.yaml"], SNIPPETS_DIR),
    )
    stored(store, key, check, suffix=".ok", keep=8)


def label(texts: dict[str, dict[str, str]], key: str, lang: str, where: str) -> str:
    """The ``lang`` text of ``key`` in a validated table of texts (``Texts`` of
    hooks/data/schemas.py: its keys are known and each text has every language, but a key the
    code asks for may be left out). Raises RenderError naming ``where`` and the key."""
    if key not in texts:
        raise RenderError(f"{where}.{key}: missing (add it in every language)")
    return texts[key][lang]


def text(value: Any, lang: str, where: str) -> str:
    """The ``lang`` text of a per-language field ``{it: ..., fr: ...}``.

    A field missing any language of ``LANGUAGES`` is an error even when the other
    language is being built, so a half-translated file never publishes.
    """
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, dict):
        raise RenderError(f"{where}: expected text or a mapping of languages, got {value!r}")
    try:
        check_languages(value)
    except ValueError as exc:
        raise RenderError(f"{where}: {exc}") from None
    return str(value[lang])
