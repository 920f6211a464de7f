"""`/api/mcp/...`: the MCP server's settings (Heym §6.4, §12.10): which workflows are tools,
the chat tool's switch, credential and model per surface, and named servers."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, delete, get, patch, post, put
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ClientException, NotFoundException

from libs.accounts import AccountUser
from libs.workflow import store
from services.gateway.auth import required_user
from services.gateway.bodies import json_object
from services.gateway.chat_log import ChatError, checked_credential
from services.gateway.mcp import servers_store
from services.gateway.mcp.catalog import (
    CHAT_DESCRIPTION,
    CHAT_SCHEMA,
    CHAT_TOOL,
    chat_surface,
    workflow_tools,
)
from services.gateway.mcp.principals import Principal


async def _tools(request: Request[Any, Any, State], principal: Principal) -> list[dict[str, Any]]:
    pool = request.app.state.ctx.pool
    tools: list[dict[str, Any]] = [
        {
            "name": t.name,
            "description": t.description,
            "input_schema": t.schema(),
            "workflow_id": t.workflow_id,
        }
        for t in await workflow_tools(pool, principal)
    ]
    if (await chat_surface(pool, principal)).enabled:
        tools.append(
            {"name": CHAT_TOOL, "description": CHAT_DESCRIPTION, "input_schema": CHAT_SCHEMA}
        )
    return tools


async def _chat_changes(
    request: Request[Any, Any, State], user: AccountUser, body: dict[str, Any]
) -> dict[str, Any]:
    """A partial chat-tool update: `enabled`, `credential_id` (null clears it), `model`."""
    unknown = set(body) - {"enabled", "credential_id", "model"}
    if unknown:
        raise ClientException(detail=f"unknown fields: {sorted(unknown)}")
    changes: dict[str, Any] = {}
    if "enabled" in body:
        if not isinstance(body["enabled"], bool):
            raise ClientException(detail="enabled must be a boolean")
        changes["enabled"] = body["enabled"]
    if "credential_id" in body:
        cred = body["credential_id"]
        if cred is not None:
            try:
                await checked_credential(request.app.state.ctx.pool, user.id, str(cred))
            except ChatError as exc:
                if exc.status == 404:
                    raise NotFoundException(detail=str(exc)) from None
                raise ClientException(detail=str(exc)) from None
            cred = uuid.UUID(str(cred))
        changes["credential_id"] = cred
    if "model" in body:
        model = body["model"]
        if model is not None and (not isinstance(model, str) or len(model) > 200):
            raise ClientException(detail="model must be a string (max 200)")
        changes["model"] = model.strip() if isinstance(model, str) and model.strip() else None
    return changes


def _chat_json(enabled: Any, cred: Any, model: Any) -> dict[str, Any]:
    return {"enabled": bool(enabled), "credential_id": str(cred) if cred else None, "model": model}


class McpSettingsController(Controller):
    path = "/api/mcp"
    tags = ["mcp"]
    dependencies = {"user": Provide(required_user)}

    @get("/config", summary="The default MCP server: endpoints, auth, chat tool")
    async def config(self, request: Request[Any, Any, State], user: AccountUser) -> dict[str, Any]:
        surface = await chat_surface(request.app.state.ctx.pool, Principal(user_id=user.id))
        row = await request.app.state.ctx.pool.fetchrow(
            "SELECT mcp_chat_enabled, mcp_chat_credential_id, mcp_chat_model "
            "FROM assistant_settings WHERE user_id = $1",
            uuid.UUID(user.id),
        )
        return {
            "endpoint": "/api/mcp",
            "sse_endpoint": "/api/mcp/sse",
            "message_endpoint": "/api/mcp/message",
            "auth": "X-MCP-Key: <your API key> or Authorization: Bearer <your API key>",
            "chat_tool": _chat_json(
                surface.enabled,
                row["mcp_chat_credential_id"] if row else None,
                row["mcp_chat_model"] if row else None,
            ),
            "tools": [t["name"] for t in await _tools(request, Principal(user_id=user.id))],
        }

    @get("/tools", summary="The default server's tools")
    async def tools(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> list[dict[str, Any]]:
        return await _tools(request, Principal(user_id=user.id))

    @patch("/workflows/{workflow_id:str}", summary="Offer a workflow as an MCP tool, or stop")
    async def toggle(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser
    ) -> dict[str, Any]:
        body = await json_object(request)
        enabled = body.get("mcp_enabled")
        if not isinstance(enabled, bool):
            raise ClientException(detail="mcp_enabled must be a boolean")
        row = await store.get_workflow(request.app.state.ctx.pool, workflow_id)
        if row is None or row.owner_id != user.id:
            raise NotFoundException(detail=f"workflow {workflow_id} not found")
        await request.app.state.ctx.pool.execute(
            "UPDATE workflows SET mcp_enabled = $2 WHERE id = $1", uuid.UUID(row.id), enabled
        )
        return {"id": row.id, "mcp_enabled": enabled}

    @patch("/chat-tool", summary="The default server's heym_chat tool (partial update)")
    async def chat_tool(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> dict[str, Any]:
        changes = await _chat_changes(request, user, await json_object(request))
        row = await request.app.state.ctx.pool.fetchrow(
            """INSERT INTO assistant_settings (user_id, mcp_chat_enabled, mcp_chat_credential_id,
                                               mcp_chat_model)
               VALUES ($1, COALESCE($2, false), $3, $4)
               ON CONFLICT (user_id) DO UPDATE SET
                   mcp_chat_enabled = COALESCE($2, assistant_settings.mcp_chat_enabled),
                   mcp_chat_credential_id = CASE WHEN $5 THEN $3
                       ELSE assistant_settings.mcp_chat_credential_id END,
                   mcp_chat_model = CASE WHEN $6 THEN $4 ELSE assistant_settings.mcp_chat_model END,
                   updated_at = now()
               RETURNING mcp_chat_enabled, mcp_chat_credential_id, mcp_chat_model""",
            uuid.UUID(user.id),
            changes.get("enabled"),
            changes.get("credential_id"),
            changes.get("model"),
            "credential_id" in changes,
            "model" in changes,
        )
        assert row is not None
        return _chat_json(
            row["mcp_chat_enabled"], row["mcp_chat_credential_id"], row["mcp_chat_model"]
        )

    @patch("/preferred-model", summary="The model the Heym Agent uses when a surface names none")
    async def preferred(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> dict[str, Any]:
        body = await json_object(request)
        changes = await _chat_changes(
            request, user, {k: v for k, v in body.items() if k != "enabled"}
        )
        row = await request.app.state.ctx.pool.fetchrow(
            """INSERT INTO assistant_settings (user_id, preferred_credential_id, preferred_model)
               VALUES ($1, $2, $3)
               ON CONFLICT (user_id) DO UPDATE SET
                   preferred_credential_id = CASE WHEN $4 THEN $2
                       ELSE assistant_settings.preferred_credential_id END,
                   preferred_model = CASE WHEN $5 THEN $3
                       ELSE assistant_settings.preferred_model END,
                   updated_at = now()
               RETURNING preferred_credential_id, preferred_model""",
            uuid.UUID(user.id),
            changes.get("credential_id"),
            changes.get("model"),
            "credential_id" in changes,
            "model" in changes,
        )
        assert row is not None
        cred = row["preferred_credential_id"]
        return {"credential_id": str(cred) if cred else None, "model": row["preferred_model"]}

    # -- named servers -------------------------------------------------------------------------
    async def _server(self, request: Request[Any, Any, State], user: AccountUser, sid: str) -> Any:
        row = await servers_store.get(request.app.state.ctx.pool, user.id, sid)
        if row is None:
            raise NotFoundException(detail=f"MCP server {sid} not found")
        return row

    async def _server_json(self, request: Request[Any, Any, State], row: Any) -> dict[str, Any]:
        return servers_store.server_json(
            row, await servers_store.workflow_ids(request.app.state.ctx.pool, row["id"])
        )

    @get("/servers", summary="Your named MCP servers")
    async def servers(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> list[dict[str, Any]]:
        rows = await servers_store.list_servers(request.app.state.ctx.pool, user.id)
        return [await self._server_json(request, r) for r in rows]

    @post("/servers", summary="Create a named MCP server (its key is shown once)", status_code=201)
    async def create_server(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> dict[str, Any]:
        body = await json_object(request)
        name, description = body.get("name"), body.get("description", "")
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise ClientException(detail="name must be a non-empty string (max 100)")
        if not isinstance(description, str) or len(description) > 1000:
            raise ClientException(detail="description must be a string (max 1000)")
        pool = request.app.state.ctx.pool
        if await pool.fetchval(
            "SELECT 1 FROM mcp_servers WHERE owner_id = $1 AND name = $2",
            uuid.UUID(user.id),
            name.strip(),
        ):
            raise ClientException(detail=f"an MCP server named {name.strip()!r} already exists")
        row, key = await servers_store.create(pool, user.id, name.strip(), description)
        return {**await self._server_json(request, row), "key": key}

    @get("/servers/{server_id:str}", summary="One named MCP server")
    async def read_server(
        self, request: Request[Any, Any, State], server_id: str, user: AccountUser
    ) -> dict[str, Any]:
        return await self._server_json(request, await self._server(request, user, server_id))

    @put("/servers/{server_id:str}", summary="Rename or describe a named MCP server")
    async def update_server(
        self, request: Request[Any, Any, State], server_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await self._server(request, user, server_id)
        body = await json_object(request)
        name = body.get("name", row["name"])
        description = body.get("description", row["description"])
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise ClientException(detail="name must be a non-empty string (max 100)")
        if not isinstance(description, str) or len(description) > 1000:
            raise ClientException(detail="description must be a string (max 1000)")
        await request.app.state.ctx.pool.execute(
            "UPDATE mcp_servers SET name = $2, description = $3, updated_at = now() WHERE id = $1",
            row["id"],
            name.strip(),
            description,
        )
        return await self._server_json(request, await self._server(request, user, server_id))

    @delete("/servers/{server_id:str}", summary="Delete a named MCP server", status_code=204)
    async def delete_server(
        self, request: Request[Any, Any, State], server_id: str, user: AccountUser
    ) -> None:
        row = await self._server(request, user, server_id)
        await request.app.state.ctx.pool.execute("DELETE FROM mcp_servers WHERE id = $1", row["id"])

    @post(
        "/servers/{server_id:str}/regenerate-key", summary="A new key (the old one stops working)"
    )
    async def regenerate(
        self, request: Request[Any, Any, State], server_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await self._server(request, user, server_id)
        key = await servers_store.regenerate_key(request.app.state.ctx.pool, row["id"])
        return {
            **await self._server_json(request, await self._server(request, user, server_id)),
            "key": key,
        }

    @put("/servers/{server_id:str}/workflows", summary="The workflows a named server offers")
    async def assign(
        self, request: Request[Any, Any, State], server_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await self._server(request, user, server_id)
        ids = (await json_object(request)).get("workflow_ids")
        if not isinstance(ids, list) or len(ids) > 500 or not all(isinstance(i, str) for i in ids):
            raise ClientException(detail="workflow_ids must be a list of workflow ids (max 500)")
        pool = request.app.state.ctx.pool
        wanted: list[uuid.UUID] = []
        for wid in dict.fromkeys(ids):
            found = await store.get_workflow(pool, wid)
            if found is None or found.owner_id != user.id:
                raise NotFoundException(detail=f"workflow {wid} not found")
            wanted.append(uuid.UUID(found.id))
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("DELETE FROM mcp_server_workflows WHERE server_id = $1", row["id"])
            await conn.executemany(
                "INSERT INTO mcp_server_workflows (server_id, workflow_id) VALUES ($1, $2)",
                [(row["id"], w) for w in wanted],
            )
        return await self._server_json(request, row)

    @patch("/servers/{server_id:str}/chat-tool", summary="A named server's heym_chat tool")
    async def server_chat_tool(
        self, request: Request[Any, Any, State], server_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await self._server(request, user, server_id)
        changes = await _chat_changes(request, user, await json_object(request))
        updated = await request.app.state.ctx.pool.fetchrow(
            """UPDATE mcp_servers SET chat_enabled = COALESCE($2, chat_enabled),
                   chat_credential_id = CASE WHEN $5 THEN $3 ELSE chat_credential_id END,
                   chat_model = CASE WHEN $6 THEN $4 ELSE chat_model END, updated_at = now()
               WHERE id = $1 RETURNING chat_enabled, chat_credential_id, chat_model""",
            row["id"],
            changes.get("enabled"),
            changes.get("credential_id"),
            changes.get("model"),
            "credential_id" in changes,
            "model" in changes,
        )
        assert updated is not None
        return _chat_json(
            updated["chat_enabled"], updated["chat_credential_id"], updated["chat_model"]
        )

    @get("/servers/{server_id:str}/tools", summary="A named server's tools")
    async def server_tools(
        self, request: Request[Any, Any, State], server_id: str, user: AccountUser
    ) -> list[dict[str, Any]]:
        row = await self._server(request, user, server_id)
        return await _tools(request, Principal(user_id=user.id, server_id=str(row["id"])))
