"""The scripts as readers copy them: extracted from the built site (both languages checked);
the session's zygote that the rehearsals' workers are forked from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verify.extract import extract


@pytest.fixture(scope="session")
def extracted(built_site, tmp_path_factory) -> Path:
    """A folder with nccl_check.py and train.py taken from the built pages."""
    out = tmp_path_factory.mktemp("extracted")
    extract(built_site, out)
    return out


@pytest.fixture(scope="session")
def zygote(tmp_path_factory):
    """``{"SCRIPT_ZYGOTE": socket}`` of one script_zygote.py serving for the session, after one
    import of ``launch.WORKER_IMPORTS`` with the rehearsal environment (what torch reads when it
    is imported, OMP_NUM_THREADS=1 included): give it to ``launch.torchrun`` / ``single_process``."""
    from tests.snippets.launch import CPU_REHEARSAL, WORKER_IMPORTS
    from tests.snippets.script_zygote import serving

    with serving(WORKER_IMPORTS, {**os.environ, **CPU_REHEARSAL}, tmp_path_factory.mktemp("zygote")) as env:
        yield env
