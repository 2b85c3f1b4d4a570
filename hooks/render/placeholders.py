"""Placeholders in page Markdown: ``{{ name key=value key=value }}``.

``name`` selects a renderer (a table or a number); arguments are ``key=value`` pairs
without spaces. Parsing is separate from rendering so every renderer gets checked
arguments and every error names the placeholder.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Mapping

from hooks.errors import RenderError

PLACEHOLDER_RE = re.compile(r"\{\{\s*(?P<name>[a-z_][a-z0-9_]*)(?P<args>(?:\s+[^\s{}]+)*)\s*\}\}")
LEFTOVER_RE = re.compile(r"\{\{[^\n]{0,60}")

Renderer = Callable[[dict[str, str], str], str]


def parse_args(raw: str, placeholder: str) -> dict[str, str]:
    """``"a=1 b=x"`` -> ``{"a": "1", "b": "x"}``; a token without ``=`` is an error."""
    args: dict[str, str] = {}
    for token in raw.split():
        key, sep, value = token.partition("=")
        if not sep or not key or not value:
            raise RenderError(f"placeholder {placeholder}: argument {token!r} is not key=value", placeholder)
        args[key] = value
    return args


def expand(markdown: str, lang: str, renderers: Mapping[str, Renderer], only: set[str] | None = None) -> str:
    """Replace every placeholder by its renderer's output for ``lang``.

    With ``only``, expand just those names and leave the rest for a later pass.
    Otherwise raise RenderError for an unknown name, malformed arguments, or any
    ``{{ ... }}`` left that is not a valid placeholder.
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if only is not None and name not in only:
            return match.group(0)
        if name not in renderers:
            known = ", ".join(sorted(renderers))
            raise RenderError(f"unknown placeholder {match.group(0)!r} (known: {known})", match.group(0))
        args = parse_args(match.group("args"), match.group(0))
        try:
            return renderers[name](args, lang)
        except RenderError as exc:
            raise RenderError(f"placeholder {match.group(0)}: {exc}", match.group(0)) from None

    out = PLACEHOLDER_RE.sub(replace, markdown)
    if only is not None:
        return out
    leftover = LEFTOVER_RE.search(out)
    if leftover:
        raise RenderError(f"malformed placeholder {leftover.group(0)!r}", leftover.group(0))
    return out


class Args:
    """Typed access to a placeholder's arguments; every value is checked."""

    def __init__(self, args: dict[str, str], allowed: set[str]):
        unknown = set(args) - allowed
        if unknown:
            raise RenderError(
                f"unknown argument(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(allowed))}"
            )
        self._args = args

    def has(self, key: str) -> bool:
        return key in self._args

    def str(self, key: str, default: str | None = None) -> str:
        if key in self._args:
            return self._args[key]
        if default is None:
            raise RenderError(f"missing argument {key}=")
        return default

    def params(self, key: builtins.str = "params") -> builtins.int:
        from vram.units import parse_params

        try:
            return parse_params(self.str(key))
        except (ValueError, ArithmeticError) as exc:  # 1e400: a float overflow
            raise RenderError(f"{key}={self.str(key)}: {exc}") from None

    def int(
        self,
        key: builtins.str,
        default: builtins.int | None = None,
        minimum: builtins.int | None = None,
        maximum: builtins.int | None = None,
    ) -> builtins.int:
        raw = self._args.get(key)
        if raw is None:
            if default is None:
                raise RenderError(f"missing argument {key}=")
            return default
        try:
            value = int(raw)
        except ValueError:
            raise RenderError(f"{key}={raw} is not an integer") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise RenderError(f"{key}={raw} is out of range [{minimum}, {maximum}]")
        return value

    def ints(self, key: builtins.str, minimum: builtins.int = 1) -> list[builtins.int]:
        values = []
        for raw in self.str(key).split(","):
            try:
                value = int(raw)
            except ValueError:
                raise RenderError(f"{key}: {raw!r} is not an integer") from None
            if value < minimum:
                raise RenderError(f"{key}: {value} is out of range (minimum {minimum})")
            values.append(value)
        return values
