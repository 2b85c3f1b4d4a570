"""The one way a pydantic validation error becomes a line of the build log, for the render
layer's data files (``hooks.data.load.validate``) and the GPU record (``verify.record``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


def key_path(loc: Sequence[int | str]) -> str:
    """``gpus.h200.memory_mib``, ``rows[1].link``: a pydantic ``loc``, list items counted from 1
    (``entry n`` at the top)."""
    where = ""
    for part in loc:
        if isinstance(part, int):
            where += f"[{part + 1}]" if where else f"entry {part + 1}"
        else:
            where += f".{part}" if where else str(part)
    return where


def one_line(error: ValidationError) -> str:
    """The first problem of ``error`` (a ``pydantic.ValidationError``) as one line:
    ``key.path[n]: message (got value)``, and how many more problems there are. Several keys
    missing from one mapping are one problem naming each of them:
    ``gpus.x300: missing fields: bf16_dense_tflops, datasheet, host_link``."""
    errors = error.errors(include_url=False)
    first = errors[0]
    where = key_path(first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    counted = 1
    if first["type"] == "missing":
        parent = tuple(first["loc"][:-1])
        missing = [str(e["loc"][-1]) for e in errors if e["type"] == "missing" and tuple(e["loc"][:-1]) == parent]
        if len(missing) > 1:
            where, message, counted = key_path(parent), f"missing fields: {', '.join(missing)}", len(missing)
    if first["type"] in {"model_type", "model_attributes_type", "dict_type"}:
        message = "Input should be a mapping of keys"  # not the name of a pydantic class
    got = "" if first["type"] in {"value_error", "missing", "assertion_error"} else f" (got {first['input']!r})"
    if len(got) > 80:
        got = got[:76] + "…)"
    more_count = len(errors) - counted
    more = f" (and {more_count} more problem{'s' if more_count > 1 else ''})" if more_count else ""
    return f"{where + ': ' if where else ''}{message}{got}{more}"
