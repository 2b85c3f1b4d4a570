"""Notebooks stay pages when static-i18n rebuilds the file list.

Works around ultrabug/mkdocs-static-i18n#198: static-i18n rebuilds every ``File`` in its
``on_files`` (after mkdocs-jupyter has wrapped them), so a notebook becomes a raw JSON asset
copied to ``index.html`` and the strict build stays green. Making MkDocs' own
``File.is_documentation_page`` true for ``.ipynb`` fixes it (the glue calls
``make_notebooks_pages`` once, when MkDocs loads the hook file; the function is idempotent,
and the original method stays reachable as ``__wrapped_original__``).

It can go when static-i18n keeps mkdocs-jupyter's pages: delete this module and its call in
``hooks/mkdocs_glue.py``; ``tests/notebooks/test_notebook_site.py`` (the raw-JSON regression)
says whether it is still needed.
"""

from __future__ import annotations

from mkdocs.structure.files import File


def make_notebooks_pages() -> None:
    """Make ``.ipynb`` files documentation pages for MkDocs itself (idempotent)."""
    original = getattr(File.is_documentation_page, "__wrapped_original__", File.is_documentation_page)

    def is_documentation_page(self) -> bool:
        return original(self) or self.src_uri.endswith(".ipynb")

    is_documentation_page.__wrapped_original__ = original  # type: ignore[attr-defined]  # marks the patch (idempotent)
    File.is_documentation_page = is_documentation_page  # type: ignore[method-assign]  # the workaround is this patch
