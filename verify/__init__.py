"""The pipeline that makes the guide publish only what ran.

- ``verify.extract``: code blocks from the built site (both languages) -> runnable files;
- ``verify.topology``: ``nvidia-smi topo -m`` -> the link class of every GPU pair;
- ``verify.record``: the verification record (what ran, where, what it measured) and
  the checks the publish build applies to it;
- ``verify.gpu_check``: the GPU run that writes the record (``make gpu-check``);
- ``verify.config``: ``mkdocs.yml`` read as data before MkDocs reads it (no tag runs code);
- ``verify.theme_scripts``: the theme's own inline scripts, by hash, and the pages' policy;
- ``verify.artifact``: the last check of the site as uploaded, by allow-list, with its
  manifest and the archive made from the checked bytes (``make publish``, ``check-site``).
"""
