"""Request bodies: JSON parsing with clear 400s (not JSON, not an object)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request
from litestar.datastructures import State
from litestar.exceptions import ClientException

_decode = msgspec.json.decode


async def json_body(request: Request[Any, Any, State], *, empty: Any = None) -> Any:
    raw = await request.body()
    if not raw.strip():
        if empty is not None:
            return empty
        raise ClientException(detail="the request body is empty; send a JSON object")
    try:
        return _decode(raw)
    except msgspec.DecodeError as exc:
        raise ClientException(detail=f"the request body is not valid JSON: {exc}") from None


async def json_object(request: Request[Any, Any, State]) -> dict[str, Any]:
    body = await json_body(request)
    if not isinstance(body, dict):
        raise ClientException(detail="the request body must be a JSON object")
    return body
