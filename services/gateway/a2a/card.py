"""The Agent Card (public: no credentials, no user, server or workflow named) and the
extended card (authenticated: the server's name and its workflows as skills)."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import asyncpg

from libs.a2a import wire
from services.gateway.mcp.catalog import workflow_tools
from services.gateway.mcp.principals import Principal

VERSION = "0.1.0"
GENERIC_SKILL = {
    "id": "heym-agent",
    "name": "Heym Agent",
    "description": "The Chat tab's abilities: list, run, build and test workflows.",
    "tags": ["workflows", "automation"],
    "examples": ["List my workflows"],
}


def endpoint(origin: str, server_id: str | None) -> str:
    return f"{origin}/api/a2a/servers/{server_id}" if server_id else f"{origin}/api/a2a"


def card_path(server_id: str | None) -> str:
    return (
        f"/api/a2a/servers/{server_id}/agent-card.json"
        if server_id
        else "/.well-known/agent-card.json"
    )


def public_card(origin: str, server_id: str | None) -> dict[str, Any]:
    return {
        "name": "Heym Agent",
        "description": "Builds, runs and tests Heym workflows, and answers from them.",
        "version": VERSION,
        "supportedInterfaces": [
            {
                "url": endpoint(origin, server_id),
                "protocolBinding": "JSONRPC",
                "protocolVersion": wire.PROTOCOL_VERSION,
            }
        ],
        "provider": {"organization": "Heym", "url": origin},
        "capabilities": {"streaming": True, "pushNotifications": False, "extendedAgentCard": True},
        "securitySchemes": {
            "mcpKey": {
                "apiKeySecurityScheme": {
                    "location": "header",
                    "name": "X-MCP-Key",
                    "description": "The MCP key of this server (or your Heym API key)",
                }
            },
            "bearer": {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "description": "Authorization: Bearer with the same key",
                }
            },
        },
        "securityRequirements": [
            {"schemes": {"mcpKey": {"list": []}}},
            {"schemes": {"bearer": {"list": []}}},
        ],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [GENERIC_SKILL],
    }


def etag(card: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(card, sort_keys=True).encode()).hexdigest()[:32]
    return f'W/"{digest}"'


async def extended_card(
    pool: asyncpg.Pool[Any], principal: Principal, origin: str
) -> dict[str, Any]:
    card = public_card(origin, principal.server_id)
    if principal.server_id is not None:
        name = await pool.fetchval(
            "SELECT name FROM mcp_servers WHERE id = $1", uuid.UUID(principal.server_id)
        )
        card["name"] = f"Heym Agent · {name}"
    skills = [GENERIC_SKILL] + [
        {
            "id": f"workflow-{t.workflow_id}",
            "name": t.name,
            "description": t.description,
            "tags": ["workflow"],
            "examples": [f"Run {t.name}"],
        }
        for t in await workflow_tools(pool, principal)
    ]
    card["skills"] = skills
    return card
