"""`/api/mcp/connections`: reusable MCP connections; header and env values are stored sealed
and never returned (only their names), and `POST …/{id}/tools` previews a connection's tools."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, post, put
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException, NotFoundException

from libs.accounts import AccountUser
from libs.secrets import SecretBox
from libs.tools import connection_store as store
from libs.tools.agent_tools import list_mcp_tools
from libs.tools.mcp_config import McpConfigError, McpServer, normalise
from services.gateway.auth import required_user
from services.gateway.bodies import json_object

MAX_LABEL = 200
PREVIEW_TIMEOUT_S = 30.0


def connection_json(row: store.ConnectionRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "label": row.label,
        "transport": row.transport,
        "url": row.url,
        "command": row.command,
        "args": row.args,
        "timeoutSeconds": row.timeout_seconds,
        "header_names": row.header_names,
        "env_names": row.env_names,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def _invalid(message: str) -> HTTPException:
    return HTTPException(status_code=422, detail=f"invalid MCP connection: {message}")


def _fields(body: dict[str, Any], current: store.ConnectionRow | None) -> store.ConnectionFields:
    """Validate a body (a PUT merges over `current`; absent headers/env keep the stored ones)."""
    base: dict[str, Any] = {}
    if current is not None:
        base = {
            "label": current.label,
            "transport": current.transport,
            "url": current.url,
            "command": current.command,
            "args": current.args,
            "timeoutSeconds": current.timeout_seconds,
        }
    merged = {**base, **{k: v for k, v in body.items() if k not in ("headers", "env")}}
    label = merged.get("label")
    if not isinstance(label, str) or not label.strip() or len(label) > MAX_LABEL:
        raise _invalid(f"label must be a non-empty string (max {MAX_LABEL})")
    for key in ("headers", "env"):
        if key in body and body[key] is not None and not isinstance(body[key], dict | str):
            raise _invalid(f"{key} must be an object")
    try:
        server: McpServer = normalise(
            {**merged, "headers": body.get("headers"), "env": body.get("env")}
        )
    except McpConfigError as exc:
        raise _invalid(str(exc)) from None
    return store.ConnectionFields(
        label=label.strip(),
        transport=server.transport,
        url=server.url or None,
        command=server.command or None,
        args=list(server.args),
        timeout_seconds=server.timeout_s,
        headers=server.headers if "headers" in body or current is None else None,
        env=server.env if "env" in body or current is None else None,
    )


def _box(request: Request[Any, Any, State]) -> SecretBox:
    box: SecretBox = request.app.state.secrets
    return box


def _not_found(connection_id: str) -> NotFoundException:
    return NotFoundException(detail=f"MCP connection {connection_id} not found")


class McpConnectionController(Controller):
    path = "/api/mcp/connections"
    tags = ["mcp"]
    dependencies = {"user": Provide(required_user)}

    @post("", summary="Store an MCP connection (headers and env are encrypted)", status_code=201)
    async def create(self, request: Request[Any, Any, State], user: AccountUser) -> dict[str, Any]:
        fields = _fields(await json_object(request), None)
        row = await store.insert_connection(
            request.app.state.ctx.pool, _box(request), user.id, fields
        )
        return connection_json(row)

    @get("", summary="Your MCP connections (header and env values are never returned)")
    async def list_all(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> list[dict[str, Any]]:
        rows = await store.list_connections(request.app.state.ctx.pool, user.id)
        return [connection_json(r) for r in rows]

    @get("/{connection_id:str}", summary="One MCP connection")
    async def read(
        self, request: Request[Any, Any, State], connection_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await store.get_connection(request.app.state.ctx.pool, user.id, connection_id)
        if row is None:
            raise _not_found(connection_id)
        return connection_json(row)

    @put("/{connection_id:str}", summary="Change an MCP connection (omit headers/env to keep)")
    async def update(
        self, request: Request[Any, Any, State], connection_id: str, user: AccountUser
    ) -> dict[str, Any]:
        pool = request.app.state.ctx.pool
        current = await store.get_connection(pool, user.id, connection_id)
        if current is None:
            raise _not_found(connection_id)
        fields = _fields(await json_object(request), current)
        row = await store.update_connection(pool, _box(request), user.id, connection_id, fields)
        if row is None:
            raise _not_found(connection_id)
        return connection_json(row)

    @delete("/{connection_id:str}", summary="Delete an MCP connection", status_code=204)
    async def remove(
        self, request: Request[Any, Any, State], connection_id: str, user: AccountUser
    ) -> None:
        if not await store.delete_connection(request.app.state.ctx.pool, user.id, connection_id):
            raise _not_found(connection_id)

    @post("/{connection_id:str}/tools", summary="List the connection's tools", status_code=200)
    async def tools(
        self, request: Request[Any, Any, State], connection_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await store.get_connection(request.app.state.ctx.pool, user.id, connection_id)
        if row is None:
            raise _not_found(connection_id)
        ref = McpServer(
            id=row.id, label=row.label, transport=row.transport, stored=True
        ).dispatch_form()
        listing = await list_mcp_tools(
            request.app.state.ctx.nc,
            user.id,
            [ref],
            timeout_s=row.timeout_seconds or PREVIEW_TIMEOUT_S,
        )
        return {
            "tools": [
                {k: t.get(k) for k in ("name", "description", "parameters")} for t in listing.tools
            ],
            "errors": listing.errors,
            "elapsed_ms": listing.elapsed_ms,
        }
