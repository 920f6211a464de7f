"""The MCP transports in front of the gateway's Litestar app.

`/api/mcp` (streamable HTTP; also `POST /api/mcp/sse`), `GET /api/mcp/sse` + `POST
/api/mcp/message` (legacy SSE), and the same under `/api/mcp/servers/<id>/mcp|sse|message`
for named servers are answered here, on the `mcp` SDK's low-level server; every other path
goes to Litestar (whose router cannot mount an ASGI app under a path with parameters).

Each request is authenticated first (headers only). Its principal goes into the ASGI scope:
`user` binds the SDK's sessions to it (a session only serves the credential that opened
it), and the handlers read it back from the request that carried the message.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
from litestar import Litestar
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel.server import Server
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, METHOD_NOT_FOUND
from starlette.types import Receive, Scope, Send

from libs.config import Settings
from libs.eventlog import EventLogError
from libs.service import ServiceContext
from services.gateway.mcp.calls import call_chat, call_workflow
from services.gateway.mcp.catalog import (
    CHAT_DESCRIPTION,
    CHAT_SCHEMA,
    CHAT_TOOL,
    chat_surface,
    workflow_tools,
)
from services.gateway.mcp.principals import AuthFailure, Principal, authenticate

log = logging.getLogger(__name__)

SCOPE_KEY = "heym.principal"
MAX_CONCURRENT_POSTS = 64
_PATH = re.compile(r"^/api/mcp(?:/servers/(?P<sid>[^/]+))?(?:/(?P<leaf>mcp|sse|message))?/?$")


def _security(settings: Settings) -> TransportSecuritySettings:
    hosts = ["127.0.0.1", "localhost", "[::1]", settings.http_host, *settings.mcp_allowed_hosts]
    unique = list(dict.fromkeys(h for h in hosts if h and h != "0.0.0.0"))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*unique, *(f"{h}:*" for h in unique)],
        allowed_origins=[
            f"{scheme}://{h}{port}"
            for h in unique
            for scheme in ("http", "https")
            for port in ("", ":*")
        ],
    )


def principal_of(request: Any) -> Principal:
    scope = getattr(request, "scope", None)
    found = scope.get(SCOPE_KEY) if isinstance(scope, dict) else None
    if not isinstance(found, Principal):
        raise MCPError(code=INTERNAL_ERROR, message="request without a caller")
    return found


class McpEndpoints:
    """The MCP server: one low-level server and session manager for every endpoint."""

    def __init__(self, settings: Settings) -> None:
        self._ctx: ServiceContext | None = None
        self._security = _security(settings)
        self.server: Server[Any] = Server(
            "heym-mcp",
            version="1.0.0",
            instructions="Heym workflows as tools, and heym_chat to talk to the Heym Agent.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.manager = StreamableHTTPSessionManager(
            app=self.server, security_settings=self._security, session_idle_timeout=1800
        )
        self._sse: dict[str, SseServerTransport] = {}
        self._posts = 0

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Litestar) -> AsyncIterator[None]:
        self._ctx = app.state.ctx
        async with self.manager.run():
            yield

    @property
    def ctx(self) -> ServiceContext:
        if self._ctx is None:
            raise MCPError(code=INTERNAL_ERROR, message="the gateway is starting")
        return self._ctx

    def wrap(self, litestar: Litestar) -> Any:
        app: Any = litestar

        async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                found = _PATH.match(scope["path"])
                if found and not (found.group("sid") and not found.group("leaf")):
                    await self._http(scope, receive, send, found.group("sid"), found.group("leaf"))
                    return
            await app(scope, receive, send)

        return asgi

    # -- HTTP --------------------------------------------------------------------------------
    async def _http(
        self, scope: Scope, receive: Receive, send: Send, sid: str | None, leaf: str | None
    ) -> None:
        method = scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = scope.get("query_string", b"").decode("latin-1")
        if sid is not None and leaf is None:
            await _json(send, 404, {"error": "not found"})
            return
        try:
            principal = await authenticate(self.ctx.pool, headers, query, sid)
        except AuthFailure as exc:
            await _json(send, exc.status, {"error": str(exc)})
            return
        except MCPError:
            await _json(send, 503, {"error": "the gateway is starting"})
            return
        scope[SCOPE_KEY] = principal
        token = hashlib.sha256(principal.client_id.encode()).hexdigest()
        scope["user"] = AuthenticatedUser(
            AccessToken(
                token=token, client_id=principal.client_id, scopes=[], subject=principal.user_id
            )
        )
        if method == "POST" and self._posts >= MAX_CONCURRENT_POSTS:
            await _json(send, 429, {"error": "too many concurrent MCP requests; retry shortly"})
            return
        self._posts += method == "POST"
        try:
            if leaf == "message":
                await self._legacy(sid).handle_post_message(scope, receive, send)
            elif leaf == "sse" and method == "GET":
                await self._legacy_stream(sid, scope, receive, send)
            else:
                await self.manager.handle_request(scope, receive, send)
        finally:
            self._posts -= method == "POST"

    def _legacy(self, sid: str | None) -> SseServerTransport:
        key = sid or ""
        transport = self._sse.get(key)
        if transport is None:
            endpoint = f"/api/mcp/servers/{sid}/message" if sid else "/api/mcp/message"
            transport = SseServerTransport(endpoint, security_settings=self._security)
            self._sse[key] = transport
        return transport

    async def _legacy_stream(
        self, sid: str | None, scope: Scope, receive: Receive, send: Send
    ) -> None:
        async with self._legacy(sid).connect_sse(scope, receive, send) as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    # -- MCP handlers ------------------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        principal = principal_of(ctx.request)
        tools = [
            types.Tool(name=t.name, description=t.description, input_schema=t.schema())
            for t in await workflow_tools(self.ctx.pool, principal)
        ]
        if (await chat_surface(self.ctx.pool, principal)).enabled:
            tools.append(
                types.Tool(name=CHAT_TOOL, description=CHAT_DESCRIPTION, input_schema=CHAT_SCHEMA)
            )
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        principal = principal_of(ctx.request)
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        try:
            if params.name == CHAT_TOOL:
                surface = await chat_surface(self.ctx.pool, principal)
                if not surface.enabled:
                    raise MCPError(code=METHOD_NOT_FOUND, message="Tool not found")

                async def progress(n: float, message: str) -> None:
                    with contextlib.suppress(Exception):
                        await ctx.session.report_progress(n, None, message)

                return await call_chat(self.ctx, principal, surface, arguments, progress)
            tools = {t.name: t for t in await workflow_tools(self.ctx.pool, principal)}
            tool = tools.get(params.name)
            if tool is None:
                raise MCPError(code=METHOD_NOT_FOUND, message=f"Tool not found: {params.name}")
            return await call_workflow(self.ctx, principal, tool, arguments)
        except MCPError:
            raise
        except EventLogError as exc:
            log.error("MCP call %s: the event log is unavailable: %s", params.name, exc)
            raise MCPError(code=INTERNAL_ERROR, message="the event log is unavailable") from None
        except Exception:
            log.exception("MCP call %s failed", params.name)
            raise MCPError(code=INTERNAL_ERROR, message="internal error") from None


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
