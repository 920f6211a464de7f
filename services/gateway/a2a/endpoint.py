"""The A2A transport in front of the gateway's Litestar app: the Agent Cards and the JSON-RPC
endpoints (`/api/a2a` and `/api/a2a/servers/<id>`, with or without a trailing slash).

Answered here, on plain ASGI, because every refusal must be a JSON-RPC error (a body too
large, the wrong content type, a batch) and the two streaming methods write SSE as events
arrive. Checks run in the order the A2A reference gives: auth (HTTP 401/403), content type
(-32005), JSON (-32700), envelope (-32600), method (-32009 for 0.3 names, -32601), version
header (-32009), params (-32602). Nothing that goes wrong is a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any

from litestar import Litestar
from starlette.types import Receive, Scope, Send

from libs.a2a import wire
from libs.config import Settings
from libs.eventlog import EventLogError
from libs.projection import ProjectionRunner
from libs.service import ServiceContext
from services.gateway.a2a import store
from services.gateway.a2a.bus import TurnBus
from services.gateway.a2a.card import etag, public_card
from services.gateway.a2a.jsonrpc import (
    PUSH_METHODS,
    RpcError,
    check_method,
    check_version,
    parse,
    result_body,
)
from services.gateway.a2a.methods import Caller, Methods
from services.gateway.a2a.projection import TaskProjector
from services.gateway.mcp.principals import AuthFailure, authenticate

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
CARD_MAX_AGE_S = 60
DOMAIN_CARD = "/.well-known/agent-card.json"
_RPC = re.compile(r"^/api/a2a(?:/servers/(?P<sid>[^/]+))?/?$")
_CARD = re.compile(r"^/api/a2a/servers/(?P<sid>[^/]+)/agent-card\.json$")
_ORIGIN = re.compile(r"^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$")


class A2AEndpoints:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.conformance = settings.a2a_conformance
        self.bus = TurnBus()
        self._ctx: ServiceContext | None = None
        self._methods: Methods | None = None
        # The card changes only with a new version: it is as old as this process.
        self.started_http = formatdate(usegmt=True)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Litestar) -> AsyncIterator[None]:
        ctx: ServiceContext = app.state.ctx
        self._ctx = ctx
        self._methods = Methods(ctx, self.bus, conformance=self.conformance)
        await self.bus.start(ctx.event_log)
        runner = ProjectionRunner(ctx.nc, ctx.pool, TaskProjector(), event_log=ctx.event_log)
        projection = asyncio.create_task(runner.run(), name="a2a-task-store")
        if self.conformance:
            count = await store.enable_for_admins(ctx.pool)
            log.warning("A2A conformance mode: the scripted TCK agent answers (%d admin(s))", count)
        try:
            yield
        finally:
            runner.stop()
            await self.bus.stop()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(projection, 10)

    def wrap(self, inner: Any) -> Any:
        async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                path = scope["path"]
                if path == DOMAIN_CARD:
                    await self._card(scope, send, None)
                    return
                found = _CARD.match(path)
                if found:
                    await self._card(scope, send, found.group("sid"))
                    return
                found = _RPC.match(path)
                if found:
                    await self._rpc(scope, receive, send, found.group("sid"))
                    return
            await inner(scope, receive, send)

        return asgi

    def origin(self, headers: dict[str, str]) -> str:
        if self.settings.public_url:
            return self.settings.public_url
        host = headers.get("host", "")
        scheme = "https" if headers.get("x-forwarded-proto", "").strip() == "https" else "http"
        if _ORIGIN.match(host):
            return f"{scheme}://{host}"
        return f"http://{self.settings.http_host}:{self.settings.http_port}"

    # -- the cards ---------------------------------------------------------------------------
    async def _card(self, scope: Scope, send: Send, sid: str | None) -> None:
        ctx = self._ctx
        if scope["method"] not in ("GET", "HEAD"):
            await _json(send, 405, {"error": "use GET"})
            return
        if ctx is None or ctx.pool is None:
            await _json(send, 503, {"error": "the gateway is starting"})
            return
        on = await (
            store.domain_card_on(ctx.pool) if sid is None else store.server_card_on(ctx.pool, sid)
        )
        if not on:
            await _json(send, 404, {"error": "not found: A2A is off"})
            return
        headers = _headers(scope)
        card = public_card(self.origin(headers), sid)
        tag = etag(card)
        extra = [
            (b"etag", tag.encode()),
            (b"last-modified", self.started_http.encode()),
            (b"cache-control", f"public, max-age={CARD_MAX_AGE_S}".encode()),
        ]
        if headers.get("if-none-match") == tag:
            await send({"type": "http.response.start", "status": 304, "headers": extra})
            await send({"type": "http.response.body", "body": b""})
            return
        await _json(send, 200, card, extra)

    # -- JSON-RPC ------------------------------------------------------------------------------
    async def _rpc(self, scope: Scope, receive: Receive, send: Send, sid: str | None) -> None:
        if scope["method"] != "POST":
            await _json(
                send, 405, RpcError(wire.INVALID_REQUEST, "Invalid Request: use POST").body(None)
            )
            return
        ctx, methods = self._ctx, self._methods
        if ctx is None or methods is None:
            await _json(
                send, 503, RpcError(wire.INTERNAL_ERROR, "the gateway is starting").body(None)
            )
            return
        headers = _headers(scope)
        query = scope.get("query_string", b"").decode("latin-1")
        try:
            principal = await authenticate(ctx.pool, headers, query, sid)
        except AuthFailure as exc:
            error = RpcError(wire.AUTH_ERROR, str(exc))
            extra = [(b"www-authenticate", b'Bearer realm="heym"')] if exc.status == 401 else []
            await _json(send, exc.status, error.body(None), extra)
            return
        surface = await store.a2a_surface(ctx.pool, principal)
        if surface is None:
            error = RpcError(
                wire.AUTH_ERROR,
                "A2A is not enabled on this server: turn on the Heym Agent and Enable A2A in "
                "the MCP / A2A tab",
            )
            await _json(send, 403, error.body(None))
            return
        caller = Caller(principal=principal, origin=self.origin(headers), surface=surface)
        request_id: Any = None
        try:
            content_type = headers.get("content-type", "").split(";")[0].strip().lower()
            if content_type != "application/json":
                raise RpcError(
                    wire.CONTENT_TYPE_NOT_SUPPORTED,
                    "Content-Type must be application/json (A2A JSON-RPC binding)",
                )
            body = await _body(receive)
            call = parse(body)
            request_id = call.request_id
            check_method(call.method)
            check_version(headers.get("a2a-version") or _query_version(query))
            if call.method in PUSH_METHODS:
                raise RpcError(
                    wire.PUSH_NOT_SUPPORTED,
                    "Push notifications are not supported (the card says pushNotifications: false)",
                )
            if call.method == "SendStreamingMessage":
                results = await methods.send_streaming(caller, call.params)
                await _sse(send, receive, request_id, results)
                return
            if call.method == "SubscribeToTask":
                results = await methods.subscribe(caller, call.params)
                await _sse(send, receive, request_id, results)
                return
            result = await _dispatch(methods, caller, call.method, call.params)
            await _json(send, 200, result_body(request_id, result))
        except RpcError as exc:
            rid = exc.request_id if exc.request_id is not None else request_id
            await _json(send, exc.http_status, exc.body(rid))
        except EventLogError as exc:
            log.error("A2A %s: the event log is unavailable: %s", scope["path"], exc)
            error = RpcError(wire.INTERNAL_ERROR, "the event log is unavailable; try again")
            await _json(send, 200, error.body(request_id))
        except _TooLarge:
            error = RpcError(
                wire.INVALID_REQUEST,
                f"Invalid Request: the body is larger than {MAX_BODY_BYTES:,} bytes",
            )
            await _json(send, 200, error.body(None))
        except Exception:
            log.exception("A2A request on %s failed", scope["path"])
            await _json(send, 200, RpcError(wire.INTERNAL_ERROR, "internal error").body(request_id))


async def _dispatch(methods: Methods, caller: Caller, name: str, params: dict[str, Any]) -> Any:
    if name == "SendMessage":
        return await methods.send_message(caller, params)
    if name == "GetTask":
        return await methods.get_task(caller, params)
    if name == "ListTasks":
        return await methods.list_tasks(caller, params)
    if name == "CancelTask":
        return await methods.cancel_task(caller, params)
    if name == "GetExtendedAgentCard":
        return await methods.extended_card(caller, params)
    raise RpcError(wire.METHOD_NOT_FOUND, f"Method not found: {name}")


class _TooLarge(Exception):
    pass


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _query_version(query: str) -> str | None:
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key.lower() == "a2a-version":
            return value
    return None


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _json(
    send: Send, status: int, body: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *(extra or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def _sse(
    send: Send, receive: Receive, request_id: Any, results: AsyncIterator[dict[str, Any]]
) -> None:
    """One `data:` line per result (compact JSON: the TCK reads single lines), a comment as
    keep-alive, an `event: error` for a failure after the first event; ends with the task or
    when the client leaves."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-store"),
                (b"x-accel-buffering", b"no"),
            ],
        }
    )

    async def pump() -> None:
        try:
            async for result in results:
                if not result:
                    chunk = b": ping\n\n"
                else:
                    body = json.dumps(result_body(request_id, result), separators=(",", ":"))
                    chunk = f"data: {body}\n\n".encode()
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except RpcError as exc:
            body = json.dumps(exc.body(request_id), separators=(",", ":"))
            await send(
                {
                    "type": "http.response.body",
                    "body": f"event: error\ndata: {body}\n\n".encode(),
                    "more_body": True,
                }
            )
        except Exception:
            log.exception("A2A stream failed")
            error = RpcError(
                wire.INTERNAL_ERROR, "the stream failed; resubscribe with SubscribeToTask"
            )
            body = json.dumps(error.body(request_id), separators=(",", ":"))
            await send(
                {
                    "type": "http.response.body",
                    "body": f"event: error\ndata: {body}\n\n".encode(),
                    "more_body": True,
                }
            )

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    pumping = asyncio.create_task(pump())
    watching = asyncio.create_task(gone())
    try:
        await asyncio.wait({pumping, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pumping, watching):
            task.cancel()
        for task in (pumping, watching):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await results.aclose()  # type: ignore[attr-defined]
    if pumping.done() and not pumping.cancelled():
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
