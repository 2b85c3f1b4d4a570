"""What a build hashes to know that nothing changed: files, by path and bytes.

``hash_files`` is the one way the render layer fingerprints files: the notebooks' cache key
(``hooks/notebooks.py``). Pure: no MkDocs import.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def hash_files(digest: hashlib._Hash, files: Iterable[Path], root: Path) -> None:
    """Update ``digest`` with each file's path relative to ``root`` (POSIX) and its bytes, in
    path order; ``files`` must lie under ``root`` (anything that is not a file is skipped)."""
    for path in sorted(files, key=lambda path: path.relative_to(root).as_posix()):
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
