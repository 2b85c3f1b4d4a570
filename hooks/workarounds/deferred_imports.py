"""MkDocs plugin ``guide-deferred-imports``: load mkdocs-jupyter's converter only when a
notebook is actually converted.

``mkdocs_jupyter.plugin`` imports its converter (nbconvert, mistune, bleach...) and
jupytext (with Jupyter's server stack) at module level: over a second on every build,
paid even when each notebook page comes from mkdocs-jupyter's own HTML cache and nothing
is converted. Listed in ``mkdocs.yml`` *before* ``mkdocs-jupyter``, this plugin is loaded
first and puts a placeholder module in ``sys.modules`` for each of ``DEFERRED``: the
import statements in mkdocs-jupyter bind the placeholder, and its first attribute lookup
(``convert.nb2html`` on a cache miss, ``jupytext.read`` for a ``.md`` file that the
``ignore`` option did not exclude) imports the real module and answers from it. Nothing
else changes; the plugin has no events.

The standard library's ``importlib.util.LazyLoader`` cannot do this here: CPython's
``import x`` statement reads ``x.__spec__``, which already runs a lazy module's code.
``GUIDE_DEFERRED_IMPORTS=off`` disables the plugin (for comparing build times).

It can go when mkdocs-jupyter imports its converter and jupytext inside the functions that
use them (it does not in 0.26.3), or when the saving no longer shows in ``make bench``
(``tests/build_speed/test_deferred_imports.py`` checks that the placeholder still works).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types

from mkdocs.plugins import BasePlugin

DEFERRED = ("jupytext", "mkdocs_jupyter.convert")


class DeferredModule(types.ModuleType):
    """Stands for module ``__name__`` until one of its attributes is looked up."""

    def __getattr__(self, attr: str):
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attr)


def defer_import(name: str) -> bool:
    """Put a ``DeferredModule`` for ``name`` in ``sys.modules`` (and on its parent package).

    Returns False when ``name`` is already imported (nothing to defer) or not installed.
    """
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)  # imports the parent package, not the module
    if spec is None:
        return False
    placeholder = DeferredModule(name)
    placeholder.__spec__ = spec
    sys.modules[name] = placeholder
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, placeholder)
    return True


def defer_imports() -> list[str]:
    """Defer every module of ``DEFERRED`` (unless ``GUIDE_DEFERRED_IMPORTS=off``); the names deferred."""
    if os.environ.get("GUIDE_DEFERRED_IMPORTS") == "off":
        return []
    return [name for name in DEFERRED if defer_import(name)]


defer_imports()


class DeferredImportsPlugin(BasePlugin):
    """No events: importing this module (when MkDocs loads the plugin) does the work."""
