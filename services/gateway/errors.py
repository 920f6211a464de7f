"""The gateway's error edge: request ids, input no handler should see, and logged 500s.

Every response carries `X-Request-Id` (the caller's, when it is a short plain token, else a
new one). A request whose path or query holds a NUL character is refused with 400 before
routing: no handler, filter or SQL statement ever sees one. Anything unexpected becomes a
500 that names the request id, and is logged with it and its traceback, so a caller's report
can be matched to the log line.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from typing import Any

from litestar import Request, Response
from litestar.datastructures import State
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Message,
    Receive,
    Scope,
    Send,
)

log = logging.getLogger(__name__)

REQUEST_ID_HEADER = "x-request-id"
_ACCEPTED_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def request_id(request: Request[Any, Any, State]) -> str:
    rid = request.scope.get("state", {}).get("request_id")
    return str(rid) if rid else "-"


def _has_nul(scope: Scope) -> bool:
    raw_query = scope.get("query_string", b"")
    path = scope.get("path", "")
    return "\x00" in path or b"\x00" in raw_query or b"%00" in raw_query.lower()


async def _refuse(send: Send, rid: str) -> None:
    body = json.dumps(
        {
            "status_code": 400,
            "detail": "the path or query contains a NUL character (%00)",
            "request_id": rid,
        }
    ).encode()
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": 400,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (REQUEST_ID_HEADER.encode(), rid.encode()),
        ],
    }
    end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
    await send(start)
    await send(end)


class RequestGuard(ASGIMiddleware):
    """Request ids on every response; NUL in the path or query refused before routing."""

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        if scope["type"] != ScopeType.HTTP:
            await next_app(scope, receive, send)
            return
        sent = dict(scope.get("headers", [])).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        rid = sent if _ACCEPTED_ID.fullmatch(sent) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        if _has_nul(scope):
            await _refuse(send, rid)
            return

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER.encode(), rid.encode()))
                message["headers"] = headers
            await send(message)

        await next_app(scope, receive, send_with_id)


def internal_error(request: Request[Any, Any, State], exc: Exception) -> Response[Any]:
    """A 500 for anything no handler expected: logged with its request id and traceback."""
    rid = request_id(request)
    log.error(
        "request %s: %s %s failed: %s: %s",
        rid,
        request.method,
        request.url.path,
        type(exc).__name__,
        exc,
        exc_info=exc,
    )
    return Response(
        {"status_code": 500, "detail": "internal server error", "request_id": rid},
        status_code=500,
    )
