"""The one way a pydantic validation error becomes a line of the build log, for the render
layer's data files (``hooks.data.load.validate``) and the GPU record (``verify.record``)."""

from __future__ import annotations


def one_line(error) -> str:
    """The first problem of ``error`` (a ``pydantic.ValidationError``) as one line:
    ``key.path[n]: message (got value)``, list items counted from 1 (``entry n`` at the top),
    and how many more problems there are."""
    first = error.errors(include_url=False)[0]
    where = ""
    for part in first["loc"]:
        if isinstance(part, int):
            where += f"[{part + 1}]" if where else f"entry {part + 1}"
        else:
            where += f".{part}" if where else str(part)
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] in {"model_type", "model_attributes_type", "dict_type"}:
        message = "Input should be a mapping of keys"  # not the name of a pydantic class
    got = "" if first["type"] in {"value_error", "missing", "assertion_error"} else f" (got {first['input']!r})"
    if len(got) > 80:
        got = got[:76] + "…)"
    count = error.error_count()
    more = f" (and {count - 1} more problem{'s' if count > 2 else ''})" if count > 1 else ""
    return f"{where + ': ' if where else ''}{message}{got}{more}"
