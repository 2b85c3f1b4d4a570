"""The one writer of the zip archives the finder's worker imports (``assets/vram.zip.zst`` and
``assets/pyodide-stdlib.zip.zst``, unpacked): the build writes them with ``canonical_zip``
(``hooks/finder/pyodide_assets.py``) and the check of the site as uploaded (``verify/artifact.py``)
accepts an archive only when its bytes are exactly what ``canonical_zip`` writes from the
members it read and accepted.

Why the bytes and not only the members: the check reads an archive with this CPython's
``zipfile`` and the worker imports it with Pyodide's ``zipimport`` (CPython 3.14), two parsers
that can be made to see different files in the same bytes (a second central directory behind
a Zip64 end record without its locator: ``zipimport`` takes it, ``zipfile`` does not; likewise
comments, extra fields, gaps, bytes before or after, entries twice, data descriptors). An
archive that is the canonical one of its members has none of them: every member stored, one
after the other from the first byte, its local header and its central directory entry saying
the same, no comment, no extra field, no data descriptor, no Zip64 record, the end record last.

Deterministic: the same members in the same order give the same bytes (fixed timestamps and
permissions, stored), with the same CPython ``zipfile`` (the build and the check run 3.11:
``.github/workflows/publish.yml``; another version that wrote other bytes would make the check
refuse, never accept, the build's archives). Standard library only.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable

ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: the archive depends on the members only
MEMBER_MODE = 0o644  # a regular file, rw-r--r-- (the upper 16 bits of a member's external attributes)


def canonical_zip(members: Iterable[tuple[str, bytes]]) -> bytes:
    """The zip of ``members`` (name, bytes), in their order: each stored (no compression) at
    ``ZIP_TIME`` with ``MEMBER_MODE``, no comment, no extra field. A name given twice is
    written twice (the callers refuse duplicates first)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = MEMBER_MODE << 16
            archive.writestr(info, data)
    return buffer.getvalue()
