"""Attribute lookup on values: object keys, properties like `.length`, and methods."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from libs.expressions._collections import (
    ARRAY_METHODS,
    ARRAY_PROPERTIES,
    OBJECT_METHODS,
)
from libs.expressions._dates import DATE_METHODS, DATE_PROPERTIES, DotDateTime
from libs.expressions._plain import stringify
from libs.expressions._rewrite import unalias
from libs.expressions._runtime import BoundMethod, MethodImpl, MissingAttributeError, Runtime
from libs.expressions._strings import STRING_METHODS, STRING_PROPERTIES

_SCALAR_METHODS: dict[str, MethodImpl] = {"toString": lambda _rt, value: stringify(value)}
_NO_PROPERTIES: dict[str, Callable[[Any], Any]] = {}


def _snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _with_snake_aliases(methods: dict[str, MethodImpl]) -> dict[str, MethodImpl]:
    """Add ``to_iso`` style spellings next to ``toISO`` ones, as the original engine had."""
    aliased = dict(methods)
    for name, impl in methods.items():
        aliased.setdefault(_snake_case(name), impl)
    return aliased


_TABLES: list[tuple[type, dict[str, Callable[[Any], Any]], dict[str, MethodImpl]]] = [
    # bool before int/float: bool is an int subclass but has its own string form.
    (bool, _NO_PROPERTIES, _with_snake_aliases(_SCALAR_METHODS)),
    (str, STRING_PROPERTIES, _with_snake_aliases(STRING_METHODS)),
    (list, ARRAY_PROPERTIES, _with_snake_aliases(ARRAY_METHODS)),
    (tuple, ARRAY_PROPERTIES, _with_snake_aliases(ARRAY_METHODS)),
    (int, _NO_PROPERTIES, _with_snake_aliases(_SCALAR_METHODS)),
    (float, _NO_PROPERTIES, _with_snake_aliases(_SCALAR_METHODS)),
    (DotDateTime, DATE_PROPERTIES, _with_snake_aliases(DATE_METHODS)),
]
_OBJECT_METHODS = _with_snake_aliases(OBJECT_METHODS)


def method_names(kind: type) -> frozenset[str]:
    """Method names available on values of ``kind`` (used by tests and tooling)."""
    if issubclass(kind, Mapping):
        return frozenset(_OBJECT_METHODS)
    for cls, _props, methods in _TABLES:
        if issubclass(kind, cls):
            return frozenset(methods)
    return frozenset()


def resolve_attribute(value: Any, name: str, runtime: Runtime) -> Any:
    """``value.name`` in the expression language.

    Objects: a present key always wins over a method of the same name (so `$d.items`,
    `$d.keys` and `$video.length` read the data), a missing key that is not a method is
    null. Other values expose only the documented properties and methods; anything
    else raises MissingAttributeError, which the caller turns into a null fallback.
    """
    name = unalias(name)
    if name.startswith("_"):
        raise MissingAttributeError(f"private attribute {name!r} is not accessible")
    if isinstance(value, Mapping):
        if name in value:
            return value[name]
        if name == "length":
            return len(value)
        impl = _OBJECT_METHODS.get(name)
        return BoundMethod(name, impl, value, runtime) if impl else None
    for cls, properties, methods in _TABLES:
        if isinstance(value, cls):
            getter = properties.get(name)
            if getter is not None:
                return getter(value)
            method = methods.get(name)
            if method is not None:
                return BoundMethod(name, method, value, runtime)
            break
    if isinstance(value, list) and name.isdigit():
        index = int(name)
        return value[index] if index < len(value) else None
    raise MissingAttributeError(f"{type(value).__name__} has no attribute {name!r}")
