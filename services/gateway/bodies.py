"""Request bodies: JSON parsing with clear 400s (not JSON, not an object, nested too deep, NUL)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request
from litestar.datastructures import State
from litestar.exceptions import ClientException

_decode = msgspec.json.decode
# Deeper than any workflow or input needs; deep enough nesting crashes recursive code.
MAX_DEPTH = 64


def _too_deep(value: Any) -> bool:
    """True when containers nest more than MAX_DEPTH levels (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def has_nul(value: Any) -> bool:
    """True when any string (or object key) in ``value`` holds a NUL character."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            if "\x00" in current:
                return True
        elif isinstance(current, dict):
            stack.extend(current.keys())
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return False


def refuse_nul(value: Any, what: str) -> None:
    """Configuration is stored in Postgres, which cannot hold NUL characters: a clear 400."""
    if has_nul(value):
        raise ClientException(detail=f"{what} must not contain NUL characters (\\u0000)")


async def json_body(request: Request[Any, Any, State], *, empty: Any = None) -> Any:
    raw = await request.body()
    if not raw.strip():
        if empty is not None:
            return empty
        raise ClientException(detail="the request body is empty; send a JSON object")
    try:
        value = _decode(raw)
    except msgspec.DecodeError as exc:
        raise ClientException(detail=f"the request body is not valid JSON: {exc}") from None
    except RecursionError:
        value = None
        deep = True
    else:
        deep = _too_deep(value)
    if deep:
        raise ClientException(detail=f"the request body nests more than {MAX_DEPTH} levels deep")
    return value


async def json_object(request: Request[Any, Any, State]) -> dict[str, Any]:
    body = await json_body(request)
    if not isinstance(body, dict):
        raise ClientException(detail="the request body must be a JSON object")
    return body
