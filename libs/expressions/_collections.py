"""Methods available on arrays and objects (`$a.filter("item > 1")`, `$o.keys()`, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from libs.expressions._budget import active
from libs.expressions._builders import join_texts
from libs.expressions._plain import to_json
from libs.expressions._runtime import MethodImpl, Runtime

_SORT_ORDERS = ("asc", "desc")


def _flat(_rt: Runtime, items: list[Any], depth: int = 1) -> list[Any]:
    budget = active()
    out: list[Any] = []

    def walk(values: list[Any], level: int) -> None:
        for value in values:
            if isinstance(value, list) and level > 0:
                budget.spend()
                walk(value, level - 1)
            else:
                out.append(value)
        budget.items(len(out), "the flattened list")

    walk(items, int(depth))
    return out


def _identity(value: Any) -> Any:
    """A hashable stand-in with the same equality as the value (lists and objects by JSON)."""
    try:
        hash(value)
    except TypeError:
        return ("json", to_json(value))
    return value


def _distinct_keys(keys: list[Any], values: list[Any]) -> list[Any]:
    # A set of identities, not list membership: `value not in out` was quadratic.
    seen: set[Any] = set()
    out: list[Any] = []
    for key, value in zip(keys, values, strict=True):
        identity = _identity(key)
        if identity not in seen:
            seen.add(identity)
            out.append(value)
    return out


def _distinct(_rt: Runtime, items: list[Any]) -> list[Any]:
    return _distinct_keys(items, items)


def _distinct_by(rt: Runtime, items: list[Any], expr: str = "item") -> list[Any]:
    return _distinct_keys([rt.eval_item(expr, value) for value in items], items)


def _join(_rt: Runtime, items: list[Any], separator: str = ",") -> str:
    return join_texts(separator, items)


def _filter(rt: Runtime, items: list[Any], expr: str) -> list[Any]:
    return [value for value in items if rt.eval_item(expr, value)]


def _map(rt: Runtime, items: list[Any], expr: str) -> list[Any]:
    return [rt.eval_item(expr, value) for value in items]


def _sort(rt: Runtime, items: list[Any], expr: str = "item", order: str = "asc") -> list[Any]:
    if order not in _SORT_ORDERS:
        raise ValueError(f"sort order must be 'asc' or 'desc', not {order!r}")
    keyed = [(rt.eval_item(expr, value), value) for value in items]
    present = [pair for pair in keyed if pair[0] is not None]
    missing = [value for key, value in keyed if key is None]
    try:
        present.sort(key=lambda pair: pair[0], reverse=order == "desc")
    except TypeError:
        # Keys of mixed, incomparable types: keep the original order, as the original did.
        return list(items)
    # Null keys go last whichever the direction.
    return [value for _key, value in present] + missing


def _take(_rt: Runtime, items: list[Any], count: int) -> list[Any]:
    count = int(count)
    return items[:count] if count >= 0 else items[count:]


def _random(rt: Runtime, items: list[Any]) -> Any:
    return rt.rng.choice(items) if items else None


ARRAY_PROPERTIES = {"length": len}

ARRAY_METHODS: dict[str, MethodImpl] = {
    "first": lambda _rt, items: items[0] if items else None,
    "last": lambda _rt, items: items[-1] if items else None,
    "random": _random,
    "reverse": lambda _rt, items: items[::-1],
    "flat": _flat,
    "distinct": _distinct,
    "distinctBy": _distinct_by,
    "notNull": lambda _rt, items: [v for v in items if v is not None],
    # Returns a new list: evaluation never mutates run state (inputs, $vars).
    "add": lambda _rt, items, value: active().sized([*items, value]),
    "contains": lambda _rt, items, value: value in items,
    "includes": lambda _rt, items, value: value in items,
    "indexOf": lambda _rt, items, value: items.index(value) if value in items else -1,
    "join": _join,
    "filter": _filter,
    "map": _map,
    "sort": _sort,
    "take": _take,
    "toString": lambda _rt, items: active().sized(to_json(items)),
}


def entries(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": v} for k, v in obj.items()]


OBJECT_METHODS: dict[str, MethodImpl] = {
    "get": lambda _rt, obj, key, default=None: obj.get(key, default),
    "keys": lambda _rt, obj: list(obj.keys()),
    "values": lambda _rt, obj: list(obj.values()),
    "entries": lambda _rt, obj: entries(obj),
    "items": lambda _rt, obj: [[k, v] for k, v in obj.items()],
    "map": lambda rt, obj, expr: _map(rt, entries(obj), expr),
    "filter": lambda rt, obj, expr: _filter(rt, entries(obj), expr),
    "contains": lambda _rt, obj, key: key in obj,
    "toString": lambda _rt, obj: active().sized(to_json(obj)),
}
