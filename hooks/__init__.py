"""Render layer of the guide: plain functions ``(markdown, lang) -> markdown``.

Nothing here imports MkDocs except ``mkdocs_glue.py``, the thin hook file named in
``mkdocs.yml``. The render functions raise ``RenderError``; the glue turns it into
MkDocs' ``PluginError`` so ``mkdocs build --strict`` stops with one line.
"""
