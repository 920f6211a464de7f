"""Conversion of evaluation results to plain JSON-able Python and to template text."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Any

from libs.expressions._dates import DotDateTime
from libs.expressions._runtime import BoundMethod
from libs.expressions.errors import ExpressionError

_SURROGATES = range(0xD800, 0xE000)


def storable(text: str) -> str:
    """``text`` with lone surrogates (which no JSON encoder or database accepts) replaced."""
    if text.isascii():  # O(1) in CPython
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if ord(c) in _SURROGATES else c for c in text)
    return text


def to_plain(value: Any) -> Any:
    """Unwrap engine values into dict / list / str / int / float / bool / None.

    Dates become ISO-8601 strings, tuples and sets become lists, mapping keys become
    strings, an uncalled zero-argument method is called, other callables become None.
    Every result can be stored and sent as JSON: NaN and infinities become None, lone
    surrogates U+FFFD. A value of any other Python type is an error, so no Python repr
    ever reaches a result.
    """
    kind = type(value)
    if value is None or kind is int or kind is bool:
        return value
    if kind is str:
        return storable(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return storable(str(value))
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return to_plain(float(value))
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else stringify(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [to_plain(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, DotDateTime):
        return value.iso()
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if (
        isinstance(value, BoundMethod)
        and value.takes_no_arguments()
        and not value.is_container_attribute()
    ):
        # `$s.upper` without parentheses reads as the zero-argument call; `$obj.items` on an
        # object without an `items` key is null, never the container's own method.
        return to_plain(value())
    if callable(value):
        return None
    raise ExpressionError(f"an expression cannot produce a {type(value).__name__} value")


def to_json(value: Any) -> str:
    """JSON text of a value, as used for objects inside templates and ``toString()``."""
    return json.dumps(to_plain(value), ensure_ascii=False)


def stringify(value: Any) -> str:
    """The string form of a value in templates, ``str()`` and ``concat``-like joins.

    Follows JSON spelling for the JSON types (``true``, ``null``, objects as JSON) so a
    rendered template reads the same as the data it came from.
    """
    if isinstance(value, str):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # JavaScript's spelling, never Python's "nan" / "inf".
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return str(value)
    if isinstance(value, DotDateTime):
        return value.iso()
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        return to_json(value)
    plain = to_plain(value)
    return "" if plain is None else str(plain)
