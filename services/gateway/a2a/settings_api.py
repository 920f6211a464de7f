"""`/api/a2a/settings`: A2A on or off per user on the default server and per named server,
with the surface's credential and model (the Heym Agent's, which A2A rides on: turning A2A on
turns the agent on; turning the agent off turns A2A off as well)."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, get, patch
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import NotFoundException

from libs.accounts import AccountUser
from services.gateway.a2a.card import card_path, endpoint
from services.gateway.auth import required_user
from services.gateway.bodies import json_object
from services.gateway.mcp import servers_store
from services.gateway.mcp.settings_api import _chat_changes


def _origin(request: Request[Any, Any, State]) -> str:
    origin: str = request.app.state.a2a.origin({k.lower(): v for k, v in request.headers.items()})
    return origin


def _surface(
    origin: str, server_id: str | None, a2a: Any, agent: Any, cred: Any, model: Any
) -> dict[str, Any]:
    return {
        "enabled": bool(a2a) and bool(agent),
        "a2a_enabled": bool(a2a),
        "agent_enabled": bool(agent),
        "credential_id": str(cred) if cred else None,
        "model": model,
        "agent_card_url": origin + card_path(server_id),
        "endpoint": endpoint(origin, server_id),
    }


class A2ASettingsController(Controller):
    path = "/api/a2a"
    tags = ["a2a"]
    dependencies = {"user": Provide(required_user)}

    @get("/settings", summary="A2A on the default server and on your named servers")
    async def read(self, request: Request[Any, Any, State], user: AccountUser) -> dict[str, Any]:
        pool = request.app.state.ctx.pool
        origin = _origin(request)
        row = await pool.fetchrow(
            """SELECT a2a_enabled, mcp_chat_enabled, mcp_chat_credential_id, mcp_chat_model
               FROM assistant_settings WHERE user_id = $1""",
            uuid.UUID(user.id),
        )
        default = _surface(
            origin,
            None,
            row and row["a2a_enabled"],
            row and row["mcp_chat_enabled"],
            row["mcp_chat_credential_id"] if row else None,
            row["mcp_chat_model"] if row else None,
        )
        servers = await pool.fetch(
            """SELECT id, name, a2a_enabled, chat_enabled, chat_credential_id, chat_model
               FROM mcp_servers WHERE owner_id = $1 ORDER BY name""",
            uuid.UUID(user.id),
        )
        return {
            **default,
            "servers": [
                {
                    "id": str(s["id"]),
                    "name": s["name"],
                    **_surface(
                        origin,
                        str(s["id"]),
                        s["a2a_enabled"],
                        s["chat_enabled"],
                        s["chat_credential_id"],
                        s["chat_model"],
                    ),
                }
                for s in servers
            ],
        }

    @patch("/settings", summary="A2A on the default server: {enabled, credential_id, model}")
    async def update(self, request: Request[Any, Any, State], user: AccountUser) -> dict[str, Any]:
        changes = await _chat_changes(request, user, await json_object(request))
        enabled = changes.pop("enabled", None)
        row = await request.app.state.ctx.pool.fetchrow(
            """INSERT INTO assistant_settings (user_id, a2a_enabled, mcp_chat_enabled,
                                               mcp_chat_credential_id, mcp_chat_model)
               VALUES ($1, COALESCE($2, false), COALESCE($2, false), $3, $4)
               ON CONFLICT (user_id) DO UPDATE SET
                   a2a_enabled = COALESCE($2, assistant_settings.a2a_enabled),
                   mcp_chat_enabled = assistant_settings.mcp_chat_enabled OR COALESCE($2, false),
                   mcp_chat_credential_id = CASE WHEN $5 THEN $3
                       ELSE assistant_settings.mcp_chat_credential_id END,
                   mcp_chat_model = CASE WHEN $6 THEN $4 ELSE assistant_settings.mcp_chat_model END,
                   updated_at = now()
               RETURNING a2a_enabled, mcp_chat_enabled, mcp_chat_credential_id, mcp_chat_model""",
            uuid.UUID(user.id),
            enabled,
            changes.get("credential_id"),
            changes.get("model"),
            "credential_id" in changes,
            "model" in changes,
        )
        assert row is not None
        return _surface(
            _origin(request),
            None,
            row["a2a_enabled"],
            row["mcp_chat_enabled"],
            row["mcp_chat_credential_id"],
            row["mcp_chat_model"],
        )

    @patch("/servers/{server_id:str}/settings", summary="A2A on a named server")
    async def update_server(
        self, request: Request[Any, Any, State], server_id: str, user: AccountUser
    ) -> dict[str, Any]:
        pool = request.app.state.ctx.pool
        found = await servers_store.get(pool, user.id, server_id)
        if found is None:
            raise NotFoundException(detail=f"MCP server {server_id} not found")
        changes = await _chat_changes(request, user, await json_object(request))
        enabled = changes.pop("enabled", None)
        row = await pool.fetchrow(
            """UPDATE mcp_servers SET a2a_enabled = COALESCE($2, a2a_enabled),
                   chat_enabled = chat_enabled OR COALESCE($2, false),
                   chat_credential_id = CASE WHEN $5 THEN $3 ELSE chat_credential_id END,
                   chat_model = CASE WHEN $6 THEN $4 ELSE chat_model END, updated_at = now()
               WHERE id = $1
               RETURNING a2a_enabled, chat_enabled, chat_credential_id, chat_model""",
            found["id"],
            enabled,
            changes.get("credential_id"),
            changes.get("model"),
            "credential_id" in changes,
            "model" in changes,
        )
        assert row is not None
        return _surface(
            _origin(request),
            str(found["id"]),
            row["a2a_enabled"],
            row["chat_enabled"],
            row["chat_credential_id"],
            row["chat_model"],
        )
