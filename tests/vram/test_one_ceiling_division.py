"""Ceiling division has one name in vram/: ``vram.units.ceil_div`` (it had four: ``_ceil_div``,
``_ceil``, ``_shard``, ``_shard_elements``). Read from the syntax tree: no other function of
vram/ is a ceiling division, and ``ceil_div`` agrees with exact rational arithmetic."""

from __future__ import annotations

import ast
from fractions import Fraction
from math import ceil
from pathlib import Path

from hypothesis import given, strategies as st

import vram
from vram.units import ceil_div

VRAM = Path(vram.__file__).parent


def is_ceiling_division(node: ast.AST) -> bool:
    """``-(-a // b)``, the integer idiom for ceil(a / b)."""
    return (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.BinOp)
        and isinstance(node.operand.op, ast.FloorDiv)
        and isinstance(node.operand.left, ast.UnaryOp)
        and isinstance(node.operand.left.op, ast.USub)
    )


def ceiling_functions() -> list[str]:
    """``module.function`` of every function of vram/ whose whole body returns ``-(-a // b)``."""
    found = []
    for path in sorted(VRAM.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.FunctionDef):
                body = [
                    statement
                    for statement in node.body
                    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
                ]
                if (
                    len(body) == 1
                    and isinstance(body[0], ast.Return)
                    and body[0].value is not None
                    and is_ceiling_division(body[0].value)
                ):
                    found.append(f"{path.stem}.{node.name}")
    return found


def test_one_function_divides_rounding_up():
    assert ceiling_functions() == ["units.ceil_div"]


@given(st.integers(min_value=0, max_value=10**30), st.integers(min_value=1, max_value=10**6))
def test_ceil_div_is_exact(numerator, denominator):
    assert ceil_div(numerator, denominator) == ceil(Fraction(numerator, denominator))
