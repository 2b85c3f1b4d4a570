"""The finder ("find the GPU your model fits in"): ``compute.py`` answers with ``vram`` (the
JSON the page loads), ``page.py`` renders the form and the static answer in the reader's
language, ``pyodide_assets.py`` gives the browser the same ``vram`` code. No MkDocs import."""
