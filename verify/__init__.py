"""The pipeline that makes the guide publish only what ran.

- ``verify.extract``: code blocks from the built site (both languages) -> runnable files;
- ``verify.topology``: ``nvidia-smi topo -m`` -> the link class of every GPU pair;
- ``verify.record``: the verification record (what ran, where, what it measured) and
  the checks the publish build applies to it;
- ``verify.scope``: the PID namespace each command of the checkout's code runs in, ended
  and waited for before anything is recorded (``verify/scope_init.py``, its first process:
  every mount read-only but the command's own folders);
- ``verify.gpu_check``: the GPU run, each command in its scope, collecting its outputs;
- ``verify.write_record``: the record written from those outputs, running none of the
  verified code (``make gpu-check`` runs both; the workflow's ``record`` job the second);
- ``verify.junit``: the counts of the gpu tests' JUnit report;
- ``verify.config``: ``mkdocs.yml`` read as data before MkDocs reads it (no tag runs code);
- ``verify.theme_scripts``: the theme's own inline scripts, by hash, and the pages' policy;
- ``verify.artifact``: the last check of the site as uploaded, by allow-list, with its
  manifest and the archive made from the checked bytes (``make publish``, ``check-site``).
"""
