"""``overrides/`` adds to the theme; it never replaces one of the theme's own static files.

MkDocs copies a file of the theme's custom folder (``overrides/``) in place of the theme's file
of the same path, so ``overrides/assets/javascripts/bundle.<hash>.min.js`` would replace
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


def check_theme_files_kept(custom_dir: Path, theme_dirs: Iterable[Path], root: Path) -> None:
    """Raise RenderError naming the first file of ``custom_dir``'s ``assets/`` that has the path
    of a file of one of ``theme_dirs`` (the installed theme's folders)."""
    folder = custom_dir / "assets"
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(custom_dir)
        shadowed = next((theme for theme in theme_dirs if (theme / relative).is_file()), None)
        if path.is_file() and shadowed is not None:
            shown = path.relative_to(root) if path.is_relative_to(root) else path
            raise RenderError(f"{shown}: replaces the theme's own {relative.as_posix()}; overrides/ adds files to "
                              "the theme and never replaces one (name it differently)")
