"""The base of human review links a run records (Heym §5.3): the request's `Origin`, else
`X-Forwarded-Proto` + `X-Forwarded-Host`, else the request's own base URL.

These headers are the caller's, so only a bare `http(s)://host[:port]` is taken; a deployment
reachable from outside sets `HEYM_PUBLIC_URL`, which the review service prefers.
"""

from __future__ import annotations

import re
from typing import Any

from litestar import Request
from litestar.datastructures import State

_BASE = re.compile(
    r"^https?://[A-Za-z0-9.-]{1,253}(:\d{1,5})?$|^https?://\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$"
)


def _clean(candidate: str | None) -> str | None:
    if not candidate:
        return None
    candidate = candidate.strip().rstrip("/")
    return candidate if _BASE.match(candidate) else None


def public_base_url(request: Request[Any, Any, State]) -> str:
    origin = _clean(request.headers.get("origin"))
    if origin:
        return origin
    proto = (request.headers.get("x-forwarded-proto") or "").split(",")[0].strip()
    host = (request.headers.get("x-forwarded-host") or "").split(",")[0].strip()
    if proto in ("http", "https") and host:
        forwarded = _clean(f"{proto}://{host}")
        if forwarded:
            return forwarded
    return _clean(str(request.base_url)) or ""
