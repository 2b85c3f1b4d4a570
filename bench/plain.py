"""The baseline for the build-time ratio: the same Markdown, built without our hooks
and without notebooks (placeholders stay as text), in a throwaway copy of the sources."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml


class Tagged:
    """A YAML value with a tag MkDocs resolves itself (``!ENV``, ``!relative``): kept as is."""

    def __init__(self, tag: str, value):
        self.tag, self.value = tag, value


class _Loader(yaml.SafeLoader):
    pass


class _Dumper(yaml.SafeDumper):
    pass


def _construct(loader, tag_suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return Tagged(node.tag, value)


def _represent(dumper, data: Tagged):
    if isinstance(data.value, list):
        return dumper.represent_sequence(data.tag, data.value)
    if isinstance(data.value, dict):
        return dumper.represent_mapping(data.tag, data.value)
    return dumper.represent_scalar(data.tag, data.value)


_Loader.add_multi_constructor("!", _construct)
_Dumper.add_representer(Tagged, _represent)


def _is_notebook(entry) -> bool:
    if isinstance(entry, dict):
        return any(_is_notebook(v) for v in entry.values())
    if isinstance(entry, list):
        return all(_is_notebook(v) for v in entry) and bool(entry)
    return isinstance(entry, str) and entry.endswith(".ipynb")


OURS_OR_NOTEBOOKS = {"mkdocs-jupyter", "guide-deferred-imports"}


def plain_config(config: dict) -> dict:
    """``mkdocs.yml`` data without ``hooks``, the jupyter plugin and ours, notebook nav entries,
    strict mode and our theme overrides (their templates call what the hooks define, such as
    the Content-Security-Policy of every page)."""
    plain = {k: v for k, v in config.items() if k not in {"hooks", "watch"}}
    if isinstance(config.get("theme"), dict):
        plain["theme"] = {k: v for k, v in config["theme"].items() if k != "custom_dir"}
    plain["strict"] = False
    plain["plugins"] = [
        p
        for p in config.get("plugins", [])
        if not OURS_OR_NOTEBOOKS.intersection([p] if isinstance(p, str) else list(p))
    ]
    if "nav" in config:
        plain["nav"] = [entry for entry in config["nav"] if not _is_notebook(entry)]
    return plain


def make_plain_copy(repo: Path, dest: Path) -> Path:
    """Copy docs/ (no notebooks) and snippets/ to ``dest`` with a plain mkdocs.yml; returns
    that mkdocs.yml."""
    config = yaml.load((repo / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 (a SafeLoader)
    plain = plain_config(config)
    for folder in ("docs", "snippets"):
        if (repo / folder).is_dir():
            shutil.copytree(repo / folder, dest / folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    path = dest / "mkdocs.yml"
    path.write_text(yaml.dump(plain, Dumper=_Dumper, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path
