"""The theme's file list without walking the folders MkDocs never copies (Material's ``.icons``).

Every build (every language pass of mkdocs-static-i18n) collects the theme's static files with
``Files.add_files_from_theme``: it lists every file of the theme's folders with the Jinja
loader's ``list_templates`` (``os.walk``) and then drops, name by name, each path with a
component that starts with a dot (patterns ``.*`` and ``*/.*``). Material 9's
``templates/.icons`` holds about 14,000 SVG files, all dropped that way: about 0.1 CPU-s a pass,
0.2 a build, for nothing (the cost reported upstream as squidfunk/mkdocs-material#1598, closed
without a change: "5k icons, which are bundled with the theme as part of the build"). MkDocs has no setting that excludes theme files (``exclude_docs``
covers ``docs/`` only) and Material none that leaves its icons out.

``use_pruned_theme_walk(theme)`` (called from the hooks' ``on_config``, which runs before each
pass's ``theme.get_env()``) makes that theme's Jinja environments use ``PrunedLoader``: the same
``FileSystemLoader`` (same folders, same template loading) whose ``list_templates`` does not enter
a folder whose name starts with a dot. As MkDocs drops every such path anyway, the theme files
it collects are the same, and so is the site (``tests/build_speed/test_theme_walk.py``).
``GUIDE_THEME_WALK=full`` disables it (for comparing).

It can go when MkDocs prunes ignored folders in its walk (it does not in 1.6.1).
"""

from __future__ import annotations

import os

import jinja2


class PrunedLoader(jinja2.FileSystemLoader):
    """``FileSystemLoader`` whose ``list_templates`` skips folders whose name starts with a dot."""

    def list_templates(self) -> list[str]:
        found = set()
        for searchpath in self.searchpath:
            for dirpath, dirnames, filenames in os.walk(searchpath, followlinks=self.followlinks):
                dirnames[:] = [name for name in dirnames if not name.startswith(".")]
                for filename in filenames:
                    template = (
                        os.path.join(dirpath, filename)[len(searchpath) :].strip(os.path.sep).replace(os.path.sep, "/")
                    )
                    if template[:2] == "./":
                        template = template[2:]
                    found.add(template)
        return sorted(found)


def use_pruned_theme_walk(theme) -> None:
    """Make ``theme.get_env()`` return its usual environment with a ``PrunedLoader`` of the
    same folders (no-op with ``GUIDE_THEME_WALK=full``, or when done already)."""
    if os.environ.get("GUIDE_THEME_WALK") == "full" or "get_env" in vars(theme):
        return
    get_env = theme.get_env

    def pruned_env() -> jinja2.Environment:
        env = get_env()
        loader = env.loader
        if type(loader) is jinja2.FileSystemLoader:  # as MkDocs 1.6 makes it; anything else is left alone
            env.loader = PrunedLoader(loader.searchpath, encoding=loader.encoding, followlinks=loader.followlinks)
        return env

    theme.get_env = pruned_env
