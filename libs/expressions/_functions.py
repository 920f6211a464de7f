"""Built-in functions callable in expressions (`$range(1, 5)`, `str(x)`, `Date()`, ...)."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import tzinfo
from typing import Any

from libs.expressions._budget import active
from libs.expressions._builders import join_texts, regex_replace, replace_all, split_text, to_list
from libs.expressions._dates import DotDateTime, parse_date
from libs.expressions._plain import stringify
from libs.expressions.errors import ExpressionFunctionError

Function = Callable[..., Any]

# `$range` materialises a list; the cap keeps `$range(0, 10**9)` from exhausting memory.
MAX_RANGE_LENGTH = 100_000
_ITEM_REF_RE = re.compile(r"^\s*item(?:\s*$|[.\[])")
_UNSET: Any = object()


def _strict_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ExpressionFunctionError(f"{what} must be an integer, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ExpressionFunctionError(f"{what} must be an integer, got {stringify(value)!r}")


def range_list(a: Any, b: Any = _UNSET) -> list[int]:
    """``range(a, b)``: integers from a up to b, b excluded; a > b is an error."""
    if b is _UNSET:
        a, b = 0, a
    start = _strict_int(a, "$range(a, b): a")
    end = _strict_int(b, "$range(a, b): b")
    if start > end:
        raise ExpressionFunctionError(f"$range(a, b) requires a <= b, got a={start}, b={end}")
    if end - start > MAX_RANGE_LENGTH:
        raise ExpressionFunctionError(
            f"$range(a, b) would produce {end - start} items; the maximum is {MAX_RANGE_LENGTH}"
        )
    return list(range(start, end))


def _to_int(value: Any) -> int:
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            number = int(float(text))
    else:
        number = int(value)
    return active().sized(number)  # type: ignore[no-any-return]


def _to_list(value: Any = _UNSET) -> list[Any]:
    if value is _UNSET or value is None:
        return []
    if isinstance(value, Mapping):
        return list(value.keys())
    if isinstance(value, str | list | tuple | set | frozenset):
        return to_list(value)
    return [value]


def _str_only(method: Callable[[str], str]) -> Function:
    def fn(value: Any) -> Any:
        return method(value) if isinstance(value, str) else value

    return fn


def _split(value: Any, separator: str | None = None) -> Any:
    if not isinstance(value, str):
        return value
    return split_text(value, separator)


def _join(separator: Any, items: Any) -> str:
    # Accept join(list, sep) too: the JS spelling people reach for first.
    if isinstance(separator, list) and isinstance(items, str):
        separator, items = items, separator
    values: Iterable[Any] = items if isinstance(items, list | tuple) else [items]
    return join_texts(separator, values)


def _sum(items: Any, start: Any = 0) -> Any:
    # Numbers only: `sum(lists, [])` would copy quadratically.
    if isinstance(start, bool) or not isinstance(start, int | float):
        raise TypeError("sum() adds numbers only")
    total = start
    for value in items:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError("sum() adds numbers only")
        total = active().sized(total + value)
    return total


def _round(value: Any, digits: Any = None) -> Any:
    # round(5, -10**9) would compute 10**(10**9) first.
    if digits is not None and (not isinstance(digits, int) or abs(digits) > 400):
        raise ValueError("round() digits must be an integer between -400 and 400")
    return round(value) if digits is None else round(value, digits)


def _not_null(items: Any) -> Any:
    return [v for v in items if v is not None] if isinstance(items, list) else items


def concat(*args: Any) -> str:
    """Join the arguments' string forms; null contributes nothing."""
    return join_texts("", args)


def item_concat(resolve: Callable[[str], Any]) -> Function:
    """``concat`` inside `.map` / `.filter` strings, where ``'item.x'`` args are references.

    The documented idiom ``map("concat('item.key', '=', 'item.value')")`` quotes the item
    paths, so quoted arguments that start with ``item`` are resolved against the item.
    """

    def fn(*args: Any) -> str:
        parts = [resolve(a) if isinstance(a, str) and _ITEM_REF_RE.match(a) else a for a in args]
        return concat(*parts)

    return fn


# Functions that depend on nothing of the context: one table for every context.
_SHARED: dict[str, Function] = {
    "str": lambda value="": active().sized(stringify(value)),
    "int": _to_int,
    "float": float,
    "bool": bool,
    "list": _to_list,
    "dict": lambda *args, **kwargs: active().sized(dict(*args, **kwargs)),
    "len": len,
    "abs": abs,
    "min": min,
    "max": max,
    "round": _round,
    "sum": _sum,
    "sorted": lambda items, reverse=False: sorted(items, reverse=bool(reverse)),
    "array": lambda *args: list(args),
    "range": range_list,
    "notNull": _not_null,
    "upper": _str_only(str.upper),
    "lower": _str_only(str.lower),
    "strip": _str_only(str.strip),
    "capitalize": _str_only(str.capitalize),
    "title": _str_only(str.title),
    "split": _split,
    "join": _join,
    "replace": lambda s, old, new: replace_all(s, old, new) if isinstance(s, str) else s,
    "regexReplace": lambda s, pattern, repl: (
        regex_replace(s, pattern, repl) if isinstance(s, str) else s
    ),
    "hash": lambda s: hashlib.md5(stringify(s).encode("utf-8")).hexdigest(),
    "concat": concat,
}


def build_functions(tz: tzinfo, rng: random.Random, now: DotDateTime) -> dict[str, Function]:
    """The function table for one context: `Date()` and randomness bind its clock and RNG
    (the rest is shared: building it per node was a measurable part of a decision)."""

    def date(value: Any = _UNSET) -> DotDateTime | None:
        return now if value is _UNSET else parse_date(value, tz)

    def random_int(low: Any = 0, high: Any = 100) -> int:
        start = _strict_int(low, "randomInt(a, b): a")
        end = _strict_int(high, "randomInt(a, b): b")
        if start > end:
            raise ExpressionFunctionError(f"randomInt(a, b) requires a <= b, got {start}, {end}")
        return rng.randint(start, end)

    return {**_SHARED, "Date": date, "randomInt": random_int}


# The "tiny builtin set" conditions are evaluated with (spec §3.3, condition mode).
CONDITION_FUNCTIONS: dict[str, Function] = {
    "len": len,
    "str": stringify,
    "int": _to_int,
    "float": float,
    "bool": bool,
}
