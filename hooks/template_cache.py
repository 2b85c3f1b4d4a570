"""Compiled theme templates kept in memory for the life of the process.

MkDocs creates a new Jinja environment for every build, and the i18n plugin builds once
per language, so each of Material's templates (about 80) is compiled once per language,
and again on every ``mkdocs serve`` rebuild. Jinja's bytecode cache (a documented
extension point, ``jinja2.BytecodeCache``) lets the next environment reuse the compiled
code: Jinja checks each entry against a checksum of the template's source, so an edited
template (``overrides/``) is compiled again.
"""

from __future__ import annotations

import jinja2


class InMemoryBytecodeCache(jinja2.BytecodeCache):
    """A ``jinja2.BytecodeCache`` in a dict: bucket key -> marshalled code."""

    def __init__(self) -> None:
        self._store: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = self._store.get(bucket.key)
        if data is not None:
            bucket.bytecode_from_string(data)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._store[bucket.key] = bucket.bytecode_to_string()

    def clear(self) -> None:
        self._store.clear()

    def __len__(self) -> int:
        return len(self._store)


TEMPLATE_CACHE = InMemoryBytecodeCache()  # one per process: every build and language pass reuses it
