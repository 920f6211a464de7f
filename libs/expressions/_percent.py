"""`"text %s" % value`: printf-style formatting with bounded widths and no Python reprs.

Python's own `%` would build a string of any width it is given (`"%2000000000d" % 1`) and
print any object's repr (`"%r" % f` shows a function address). Here each conversion is
checked against the evaluation budget before it is formatted, `%s` uses the language's
string form (JSON spelling), and `%r` / `%a` are refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from libs.expressions._budget import active
from libs.expressions._plain import stringify
from libs.expressions.errors import ExpressionFunctionError

_SPEC = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?"
    r"(?:\.(?P<precision>\*|\d*))?[hlL]?(?P<conversion>.?)",
    re.DOTALL,
)
_NUMERIC = frozenset("diouxXeEfFgG")


class _Arguments:
    """The right-hand side of `%`: one value, a tuple/list of values, or a mapping."""

    def __init__(self, value: Any) -> None:
        self.mapping = value if isinstance(value, Mapping) else None
        self.values = list(value) if isinstance(value, tuple) else [value]
        self.used = 0

    def next(self) -> Any:
        if self.used >= len(self.values):
            raise TypeError("not enough arguments for format string")
        self.used += 1
        return self.values[self.used - 1]

    def named(self, key: str) -> Any:
        if self.mapping is None:
            raise TypeError("format requires a mapping")
        if key not in self.mapping:
            raise KeyError(key)
        return self.mapping[key]


def _number(spec: str, value: Any, limit: int) -> int:
    """A width or precision: digits from the format, or `*` taken from the arguments."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"* wants an integer, not {type(value).__name__}")
    amount = abs(value)
    if amount > limit:
        active().chars(amount, f"the {spec} of a % conversion")
    return value


def _argument(conversion: str, value: Any) -> Any:
    if conversion in ("r", "a"):
        raise ExpressionFunctionError(f"%{conversion} is not supported; use %s")
    if conversion == "s":
        return stringify(value)
    if conversion == "c":
        if isinstance(value, str) and len(value) == 1:
            return value
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 0x110000:
            return value
        raise TypeError("%c requires an integer or a single character")
    if conversion in _NUMERIC:
        if not isinstance(value, int | float):
            raise TypeError(f"%{conversion} requires a number, not {type(value).__name__}")
        return value
    raise ValueError(f"unsupported format character {conversion!r}")


def format_percent(template: str, right: Any) -> str:
    """``template % right`` under the budget; raises TypeError/ValueError like Python."""
    budget = active()
    limit = budget.limits.chars
    args = _Arguments(right)
    pieces: list[str] = []
    size = 0
    last = 0
    for match in _SPEC.finditer(template):
        pieces.append(template[last : match.start()])
        size += match.start() - last
        last = match.end()
        conversion = match.group("conversion")
        if conversion == "%":
            pieces.append("%")
            size += 1
            continue
        if not conversion:
            raise ValueError("incomplete format")
        key = match.group("key")
        width_text, precision_text = match.group("width"), match.group("precision")
        width = precision = None
        if width_text is not None:
            width = _number("width", args.next() if width_text == "*" else int(width_text), limit)
        if precision_text is not None:
            raw = args.next() if precision_text == "*" else int(precision_text or "0")
            precision = _number("precision", raw, limit)
        value = _argument(conversion, args.named(key) if key is not None else args.next())
        spec = "%" + match.group("flags")
        spec += "" if width is None else str(width)
        spec += "" if precision is None else f".{precision}"
        piece = (spec + conversion) % (value,)
        size += len(piece)
        if size > limit:
            budget.chars(size, "the formatted string")  # raises
        pieces.append(piece)
    if args.mapping is None and args.used < len(args.values):
        raise TypeError("not all arguments converted during string formatting")
    pieces.append(template[last:])
    budget.chars(size + len(template) - last, "the formatted string")
    return "".join(pieces)
