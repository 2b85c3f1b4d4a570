"""Render layer of the guide: plain functions ``(markdown, lang) -> markdown`` and checks.

The render functions raise ``RenderError``; ``mkdocs_glue.py``, the thin hook file named in
``mkdocs.yml``, turns any exception into one ``PluginError`` naming the file, so ``mkdocs build
--strict`` stops with one line. Only the MkDocs-facing modules import MkDocs: the two hook
files, the plugin ``deferred_imports.py``, ``notebook_pages.py`` and ``serve.py``.
"""
