"""Images the site ships stay small: a file of ``docs/`` or ``overrides/`` with an image's
suffix over ``IMAGE_MAX_BYTES`` stops the build, naming the file, its size and the limit.

The limit is the project's choice, not a measured fact: 1 MB (10^6 bytes), five times the
whole notebook page's budget before images (200 KB gzip, ``bench/``), so a screenshot or a
diagram fits and a photograph straight from a camera (several MB) does not. Every build checks
every such file, linked from a page or not (MkDocs copies every file of ``docs/``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hooks.errors import RenderError

IMAGE_MAX_BYTES = 1_000_000
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".svg", ".bmp", ".tif", ".tiff", ".ico"})


def check_image_sizes(paths: Iterable[Path], root: Path) -> None:
    """Raise RenderError for the first of ``paths`` (files of the checkout ``root``) that is an
    image over ``IMAGE_MAX_BYTES``."""
    for path in paths:
        if path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
            continue
        size = path.stat().st_size
        if size > IMAGE_MAX_BYTES:
            where = path.relative_to(root) if path.is_relative_to(root) else path
            raise RenderError(
                f"{where.as_posix()}: {size / 1e6:.1f} MB, over the {IMAGE_MAX_BYTES / 1e6:g} MB limit for an "
                "image of the site (hooks/checks/images.py); resize or compress it"
            )
