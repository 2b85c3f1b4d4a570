"""The notebook pages: ``cell_names.py`` checks the names their code cells use before any
runs, ``execute.py`` runs each notebook once per change (cached, keyed by what it reads),
``pages.py`` points MkDocs at the executed copies, ``html.py``, ``styles.py`` and
``weight.py`` make their HTML pages of the site, ``translated.py`` checks each language's copy."""
