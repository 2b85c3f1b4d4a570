"""``overrides/`` and ``docs/`` add to the theme; they never replace one of the theme's own static files.

MkDocs copies a file of the theme's custom folder (``overrides/``) or of ``docs/`` in place of
the theme's file of the same path, so ``overrides/assets/javascripts/bundle.<hash>.min.js`` would replace
Material's JavaScript on every page with minified code nobody reviews, and the site's checks
accept a script file of the site. Templates (``main.html``, ``partials/``) are overridden by
design: they are reviewed HTML, and the pages they render pass every page check. The check of
the site as uploaded holds the published files to the installed theme's bytes too
(``verify.artifact.check_theme_files``).

Pure: no MkDocs import; raises RenderError.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hooks.errors import RenderError


def check_theme_files_kept(folders: Iterable[Path], theme_dirs: Iterable[Path], root: Path) -> None:
    """Raise RenderError naming the first file of the ``assets/`` of one of ``folders`` (the theme's
    custom folder, the docs folder: both are copied over the theme) that has the path of a file
    of one of ``theme_dirs`` (the installed theme's folders)."""
    theme_dirs = list(theme_dirs)
    for base in folders:
        if not (base / "assets").is_dir():
            continue
        for path in sorted((base / "assets").rglob("*")):
            relative = path.relative_to(base)
            if path.is_file() and any((theme / relative).is_file() for theme in theme_dirs):
                shown = path.relative_to(root) if path.is_relative_to(root) else path
                raise RenderError(
                    f"{shown}: replaces the theme's own {relative.as_posix()}; docs/ and overrides/ add "
                    "files to the theme and never replace one (name it differently)"
                )
