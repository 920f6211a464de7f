"""What an MCP caller may call: the workflows of its server as tools (Heym §6.4 naming and
input schema) and, when the surface has it on, `heym_chat` (§12.10), with the surface's
chat credential and model."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from contracts.chat import MAX_MESSAGE_CHARS
from services.gateway.mcp.principals import Principal

CHAT_TOOL = "heym_chat"
_NOT_ALNUM = re.compile(r"[^a-z0-9_]")


@dataclass(frozen=True)
class WorkflowTool:
    name: str
    workflow_id: str
    description: str
    inputs: tuple[str, ...]

    def schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {k: {"type": "string"} for k in self.inputs},
            "required": list(self.inputs),
        }


@dataclass(frozen=True)
class ChatSurface:
    enabled: bool
    credential_id: str | None
    model: str | None


CHAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "minLength": 1, "maxLength": MAX_MESSAGE_CHARS},
        "conversation_id": {
            "type": "string",
            "description": "Continue this conversation (from an earlier reply); omit to start one.",
        },
    },
    "required": ["message"],
}
CHAT_DESCRIPTION = (
    "Talk to the Heym Agent: it lists, runs and builds your Heym workflows. Send a message; "
    "pass the conversation_id from a reply to continue the same conversation."
)


def tool_name(workflow_name: str) -> str:
    """Lowercased, spaces and `-` as `_`, other characters dropped (Heym's rule)."""
    lowered = workflow_name.lower().replace(" ", "_").replace("-", "_")
    return _NOT_ALNUM.sub("", lowered)


def root_inputs(nodes: list[dict[str, Any]]) -> tuple[str, ...]:
    """Each root textInput field, as a required string."""
    keys: list[str] = []
    for node in nodes:
        if isinstance(node, dict) and node.get("type") == "textInput":
            fields = (node.get("data") or {}).get("inputFields") or []
            found = [str(f["key"]) for f in fields if isinstance(f, dict) and f.get("key")]
            for key in found or ["text"]:
                if key not in keys:
                    keys.append(key)
    return tuple(keys)


async def _rows(pool: asyncpg.Pool[Any], principal: Principal) -> list[Any]:
    """The server's workflows (id, name, description, nodes), in one query."""
    owner = uuid.UUID(principal.user_id)
    if principal.server_id is None:
        return list(
            await pool.fetch(
                """SELECT id, name, description, nodes FROM workflows
                   WHERE owner_id = $1 AND mcp_enabled ORDER BY lower(name), id""",
                owner,
            )
        )
    return list(
        await pool.fetch(
            """SELECT w.id, w.name, w.description, w.nodes
               FROM mcp_server_workflows s JOIN workflows w ON w.id = s.workflow_id
               WHERE s.server_id = $1 AND w.owner_id = $2 ORDER BY lower(w.name), w.id""",
            uuid.UUID(principal.server_id),
            owner,
        )
    )


async def workflow_tools(pool: asyncpg.Pool[Any], principal: Principal) -> list[WorkflowTool]:
    tools: list[WorkflowTool] = []
    taken = {CHAT_TOOL}
    for row in await _rows(pool, principal):
        wid = str(row["id"])
        base = tool_name(row["name"]) or f"workflow_{wid[:8]}"
        name, n = base, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        tools.append(
            WorkflowTool(
                name=name,
                workflow_id=wid,
                description=row["description"] or f"Execute workflow: {row['name']}",
                inputs=root_inputs(row["nodes"]),
            )
        )
    return tools


async def chat_surface(pool: asyncpg.Pool[Any], principal: Principal) -> ChatSurface:
    """The surface's chat-tool switch, credential and model; the credential falls back to the
    user's preferred one, the model to the preferred model only with that credential."""
    owner = uuid.UUID(principal.user_id)
    if principal.server_id is None:
        row = await pool.fetchrow(
            """SELECT mcp_chat_enabled AS enabled, mcp_chat_credential_id AS cred,
                      mcp_chat_model AS model FROM assistant_settings WHERE user_id = $1""",
            owner,
        )
    else:
        row = await pool.fetchrow(
            """SELECT chat_enabled AS enabled, chat_credential_id AS cred, chat_model AS model
               FROM mcp_servers WHERE id = $1 AND owner_id = $2""",
            uuid.UUID(principal.server_id),
            owner,
        )
    pref = await pool.fetchrow(
        """SELECT preferred_credential_id AS cred, preferred_model AS model
           FROM assistant_settings WHERE user_id = $1""",
        owner,
    )
    enabled = bool(row["enabled"]) if row else False
    cred = str(row["cred"]) if row and row["cred"] else None
    model = row["model"] if row and row["model"] else None
    if cred is None and pref is not None and pref["cred"]:
        cred = str(pref["cred"])
        model = model or pref["model"]
    return ChatSurface(enabled=enabled, credential_id=cred, model=model)
