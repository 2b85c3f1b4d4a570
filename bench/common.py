"""What every benchmark of ``bench/`` shares: the checkout and the environment its builds run in."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Python's bytecode cache on, as on a maintainer's machine: the plain build's modules (all
# installed packages) have theirs from pip, and with PYTHONDONTWRITEBYTECODE set (some
# sandboxes do) only this checkout's modules would be compiled again on every build.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"} | {"NO_MKDOCS_2_WARNING": "1"}
