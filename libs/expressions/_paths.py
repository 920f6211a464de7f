"""Fallback resolver for `a.b[0]["x-y"].method(args)` paths the evaluator rejected."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from libs.expressions._attributes import resolve_attribute
from libs.expressions._rewrite import rewrite_code
from libs.expressions._runtime import MissingAttributeError, Runtime
from libs.expressions._scanner import QUOTES, is_ident_char, skip_group, skip_string
from libs.expressions.errors import ExpressionError

_NAMED_LITERALS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "None": None,
    "undefined": None,
}


class _Unresolvable(Exception):
    """The text is not a path this resolver understands."""


def resolve_path(text: str, runtime: Runtime) -> Any:
    """Walk a dotted/bracketed path with method calls; anything unresolvable is null.

    Engine errors (a misused function, an over-long expression) still propagate.
    """
    try:
        return _walk(text.strip(), runtime)
    except ExpressionError:
        raise
    except Exception:
        return None


def _read_name(text: str, i: int) -> tuple[str, int]:
    start = i
    while i < len(text) and is_ident_char(text[i]):
        i += 1
    if i == start:
        raise _Unresolvable(text)
    return text[start:i], i


def _walk(text: str, runtime: Runtime) -> Any:
    head, i = _read_name(text, 1 if text.startswith("$") else 0)
    try:
        value = runtime.lookup(head)
    except MissingAttributeError:
        return None
    n = len(text)
    while i < n:
        if value is None:
            return None
        ch = text[i]
        if ch == ".":
            name, i = _read_name(text, i + 1)
            value = resolve_attribute(value, name, runtime)
        elif ch in "[(":
            end = skip_group(text, i)
            if end is None:
                raise _Unresolvable(text)
            inner = text[i + 1 : end - 1]
            value = _subscript(value, inner, runtime) if ch == "[" else _call(value, inner, runtime)
            i = end
        else:
            raise _Unresolvable(text)
    return value


def _subscript(value: Any, inner: str, runtime: Runtime) -> Any:
    key = _argument(inner, runtime)
    if isinstance(value, Mapping):
        return value.get(key)
    if isinstance(value, list | str) and isinstance(key, int) and not isinstance(key, bool):
        return value[key] if -len(value) <= key < len(value) else None
    return None


def _call(value: Any, inner: str, runtime: Runtime) -> Any:
    args = [_argument(part, runtime) for part in _split_arguments(inner)]
    if callable(value):
        return value(*args)
    # `.length()` and friends: calling a plain property with no arguments reads it.
    if not args:
        return value
    raise _Unresolvable(inner)


def _argument(text: str, runtime: Runtime) -> Any:
    text = text.strip()
    if text in _NAMED_LITERALS:
        return _NAMED_LITERALS[text]
    try:
        return ast.literal_eval(rewrite_code(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _walk(text, runtime)


def _split_arguments(text: str) -> list[str]:
    parts: list[str] = []
    i = last = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in QUOTES:
            i = skip_string(text, i)
            continue
        if ch in "([{":
            end = skip_group(text, i)
            if end is None:
                raise _Unresolvable(text)
            i = end
            continue
        if ch == ",":
            parts.append(text[last:i])
            last = i + 1
        i += 1
    tail = text[last:]
    if tail.strip() or parts:
        parts.append(tail)
    return [p for p in parts if p.strip()]
