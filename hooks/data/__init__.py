"""The data files (``snippets/data/*.yaml``, ``snippets/comments.yaml``): ``load.py`` reads and
validates them, ``schemas.py`` holds one pydantic model per file. No MkDocs import."""
