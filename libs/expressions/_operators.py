"""Binary operators with the evaluation budget: sizes are checked before a result is built."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from simpleeval import DEFAULT_OPERATORS, safe_rshift

from libs.expressions._budget import active
from libs.expressions._percent import format_percent

_SEQUENCES = (str, list, tuple)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checked(value: Any) -> Any:
    if _is_int(value):
        bits = value.bit_length()
        if bits > 64:  # the common case costs one comparison
            active().bits(bits)
    return value


def _size(value: str | list[Any] | tuple[Any, ...], count: int, what: str) -> None:
    budget = active()
    if isinstance(value, str):
        budget.chars(count, what)
    else:
        budget.items(count, what)


def add(a: Any, b: Any) -> Any:
    if isinstance(a, _SEQUENCES) and isinstance(b, _SEQUENCES):
        _size(a, len(a) + len(b), "the joined value")
    return _checked(a + b)


def mult(a: Any, b: Any) -> Any:
    if isinstance(a, _SEQUENCES) and isinstance(b, int):
        _size(a, len(a) * max(b, 0), "the repeated value")
    elif isinstance(b, _SEQUENCES) and isinstance(a, int):
        _size(b, len(b) * max(a, 0), "the repeated value")
    elif _is_int(a) and _is_int(b):
        active().bits(a.bit_length() + b.bit_length(), "the product")
    return a * b


def power(base: Any, exponent: Any) -> Any:
    if _is_int(base) and _is_int(exponent) and exponent > 0 and abs(base) > 1:
        # Estimated before computing: the exponent alone may be a million.
        active().bits(exponent * (abs(base).bit_length() - 1) + 1, "the power")
    return _checked(base**exponent)


def modulo(a: Any, b: Any) -> Any:
    if isinstance(a, str):
        return format_percent(a, b)
    return _checked(a % b)


def lshift(a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b) and b > 0:
        active().bits(a.bit_length() + b, "the shifted number")
    return a << b


def _numeric(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def op(a: Any, b: Any) -> Any:
        return _checked(fn(a, b))

    return op


OPERATORS: dict[type[ast.AST], Callable[..., Any]] = {
    **DEFAULT_OPERATORS,
    ast.Add: add,
    ast.Sub: _numeric(operator.sub),
    ast.Mult: mult,
    ast.Div: operator.truediv,
    ast.FloorDiv: _numeric(operator.floordiv),
    ast.Pow: power,
    ast.Mod: modulo,
    ast.LShift: lshift,
    ast.RShift: safe_rshift,
}
