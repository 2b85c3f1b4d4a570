"""Every page exists in every language (suffix layout: ``page.it.md`` / ``page.fr.md``)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from hooks.errors import RenderError
from verify.languages import LANGUAGES

PAGE_SUFFIXES = (".md", ".ipynb")


def check_language_parity(docs_dir: Path, languages: tuple[str, ...] = LANGUAGES) -> None:
    """Raise RenderError naming the first page that lacks a language or a language suffix."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(docs_dir.rglob("*")):
        if path.suffix not in PAGE_SUFFIXES or ".ipynb_checkpoints" in path.parts:
            continue
        rel = path.relative_to(docs_dir)
        stem, _, lang = rel.with_suffix("").name.rpartition(".")
        if not stem or lang not in languages:
            raise RenderError(
                f"docs/{rel}: page without a language suffix ({', '.join(f'.{code}{path.suffix}' for code in languages)})"
            )
        found[str(rel.parent / (stem + path.suffix))].add(lang)
    for page, langs in sorted(found.items()):
        missing = [lang for lang in languages if lang not in langs]
        if missing:
            stem, suffix = page.rsplit(".", 1)
            present = ", ".join(f"docs/{stem}.{lang}.{suffix}" for lang in sorted(langs))
            absent = ", ".join(f"docs/{stem}.{lang}.{suffix}" for lang in missing)
            raise RenderError(f"{absent}: missing; every page needs every language ({present} has no translation)")
