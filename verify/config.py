"""``mkdocs.yml`` is data: read it as YAML without running anything, before MkDocs does.

MkDocs loads its configuration with PyYAML's full loader plus its own tags, so a tag such
as ``!!python/object/apply:subprocess.getoutput [...]`` runs a command in every build
(the pull request's test job, the GPU job, the publish job). ``check_config`` composes the
file's YAML nodes (nothing is constructed, so nothing runs) and refuses every tag but the
plain YAML types and the allow-lists below. ``make site``, ``make publish`` and
``make gpu-check`` run ``python -m verify.config mkdocs.yml`` before MkDocs reads it; a
test runs it on the file as committed.

Allow-lists (add an entry only with the reason, README "Verified publishing"):
``ENV_SETTINGS``, the settings a build variable may set (``!ENV``: its value reaches
published pages); ``RELATIVE_TAG``, MkDocs' ``!relative`` (a path, anywhere);
``PYTHON_NAMES``, the ``!!python/name:`` targets a Markdown extension may name (none yet).

CLI: ``python -m verify.config [mkdocs.yml]``; exit 2 with one line naming the line and the tag.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

YAML_TYPES = {f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")}
ENV_SETTINGS = {("site_url",)}  # the published address: SITE_URL of the publish job
RELATIVE_TAG = "!relative"
PYTHON_NAMES: set[str] = set()  # e.g. "pymdownx.superfences.fence_code_format", were a custom fence needed
PYTHON_NAME_PREFIX = "tag:yaml.org,2002:python/name:"


class ConfigError(Exception):
    """A tag outside the allow-lists, or YAML that does not parse: one line naming the line."""


def _walk(node: yaml.Node, path: tuple[str | int, ...], where: str) -> None:
    tag = node.tag
    line = node.start_mark.line + 1
    if tag not in YAML_TYPES:
        name = tag.removeprefix(PYTHON_NAME_PREFIX) if tag.startswith(PYTHON_NAME_PREFIX) else None
        allowed = (
            (tag == "!ENV" and path in ENV_SETTINGS)
            or tag == RELATIVE_TAG
            or (name is not None and name in PYTHON_NAMES)
        )
        if not allowed:
            key = ".".join(str(part) for part in path) or "(top)"
            shown = tag.replace("tag:yaml.org,2002:", "!!")
            raise ConfigError(
                f"{where}:{line}: {key}: the tag {shown} is not allowed (only !ENV for "
                f"{', '.join('.'.join(p) for p in sorted(ENV_SETTINGS))}, !relative"
                f"{', !!python/name: ' + ', '.join(sorted(PYTHON_NAMES)) if PYTHON_NAMES else ''}): "
                "mkdocs.yml is data, verify/config.py"
            )
        return  # an allowed tag's arguments are plain scalars or a list of them
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _walk(key, path, where)
            _walk(value, (*path, key.value if isinstance(key, yaml.ScalarNode) else "?"), where)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), where)


def check_config(text: str, where: str = "mkdocs.yml") -> None:
    """Raise ConfigError for a tag of ``text`` outside the allow-lists (see the module docstring)."""
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(
            f"{where}:{mark.line + 1 if mark else '?'}: not YAML ({getattr(exc, 'problem', exc)})"
        ) from None
    if len(documents) != 1:
        raise ConfigError(f"{where}: {len(documents)} YAML documents, expected one")
    _walk(documents[0], (), where)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0] if args else "mkdocs.yml")
    try:
        check_config(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError) as exc:
        print(f"verify.config: error: {path}: {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"verify.config: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
