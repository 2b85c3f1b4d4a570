"""The baseline of the build ratio (bench/plain.py) is the same site minus our code and the notebooks."""

from __future__ import annotations

import yaml

from bench.plain import _Loader, make_plain_copy, plain_config
from tests.conftest import REPO_ROOT


def _plugin_names(config: dict) -> list[str]:
    return [p if isinstance(p, str) else next(iter(p)) for p in config["plugins"]]


def test_plain_config_drops_only_hooks_notebooks_and_our_plugin():
    config = yaml.load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 (a SafeLoader)
    plain = plain_config(config)
    assert "hooks" not in plain and "watch" not in plain and plain["strict"] is False
    assert _plugin_names(plain) == [
        n for n in _plugin_names(config) if n not in {"mkdocs-jupyter", "guide-deferred-imports"}
    ]
    assert {"search", "i18n"} <= set(_plugin_names(plain))
    assert not any(".ipynb" in str(entry) for entry in plain["nav"])
    assert len(plain["nav"]) == len(config["nav"]) - 1
    assert plain["markdown_extensions"] == config["markdown_extensions"]
    # our overrides call what the hooks define (the pages' Content-Security-Policy): the
    # plain build uses the theme's own templates, or it fails on an undefined name
    assert "custom_dir" in config["theme"] and plain["theme"] == {
        k: v for k, v in config["theme"].items() if k != "custom_dir"
    }


def test_plain_copy_has_the_markdown_not_the_notebooks(tmp_path):
    config_path = make_plain_copy(REPO_ROOT, tmp_path / "plain")
    docs = config_path.parent / "docs"
    assert sorted(p.name for p in docs.glob("*.md")) == sorted(p.name for p in (REPO_ROOT / "docs").glob("*.md"))
    assert not list(docs.rglob("*.ipynb")) and not (config_path.parent / "overrides").exists()
    assert (config_path.parent / "snippets" / "nccl_check.py").read_bytes() == (
        REPO_ROOT / "snippets" / "nccl_check.py"
    ).read_bytes()
