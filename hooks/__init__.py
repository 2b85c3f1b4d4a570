"""The site's MkDocs side: glue between MkDocs and plain functions, in rooms by role.

Read first: ``hooks/mkdocs_glue.py``, the one hook file ``mkdocs.yml`` names: one function
per MkDocs event, in the order MkDocs calls them, and one error boundary (``reported``) that
turns every exception of the rooms below into one ``PluginError`` naming the file and line.

Top level: what MkDocs or ``make`` runs, and what every room shares.

- ``mkdocs_glue.py``: the hook file. ``serve.py``: ``make serve`` (``mkdocs serve`` under
  ``watchmedo auto-restart``). ``errors.py``: ``RenderError``, the one error type of the rooms.
  ``cache.py``: the build's caches (file stamps, the stamp-keyed memo, file hashes, compiled
  templates).

Rooms (subpackages). Only ``workarounds/`` imports MkDocs (beside the hook file and
``serve.py``): the other rooms are plain functions a new generator could call. No module
imports, directly or through others, a module that imports it:

- ``data/``: the data files of ``snippets/data`` and ``snippets/comments.yaml``: loading
  (``load.py``: ``load_model`` returns the validated pydantic model, so nothing after it
  checks a file's shape again) and their schemas (``schemas.py``, pydantic).
- ``render/``: the page transform, ``render_markdown(markdown, lang) -> markdown``
  (placeholders, tables, numbers, time and cost, catalogue facts in prose, locale formatting) and the HTML rewrites of a
  built page (comment translation, typography, interface strings, inline code, the
  verification note, the rental links), and each page's search index entries, kept by a
  development build (``search_entries.py``: Material's search plugin parses every page's HTML
  again otherwise).
- ``finder/``: "find the GPU": the answers ``vram`` computes (``compute.py``), the page that
  shows them (``page.py``), the files that run ``vram`` in the reader's browser
  (``pyodide_assets.py``).
- ``checks/``: what a page, a file or a build must not do; each raises RenderError with one
  line (same code in every language, conventions, active content, external loads, plain
  files and includes, language parity, the publish gate).
- ``notebooks/``: executing the notebooks (cached) and making their pages pages of the site.
- ``workarounds/``: code that exists only because of an upstream bug or gap; each module names
  the upstream issue and when it can go (the ``guide-deferred-imports`` plugin, ``.ipynb`` as
  pages, per-language search indexes and 404 pages). Modules here may import MkDocs.

The site's languages are defined once, in ``verify/languages.py`` (read from ``mkdocs.yml``;
it imports nothing of the project), which both ``hooks/`` and ``verify/`` read. ``verify/`` and ``vram/`` never import
``hooks/`` (``tests/test_import_cycles.py``).
"""
