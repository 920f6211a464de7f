"""Named MCP servers in Postgres: their hashed keys, assigned workflows and chat-tool settings."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

import asyncpg

from libs.accounts.api_keys import hash_api_key

KEY_PREFIX = "heym_mcp_"
_COLUMNS = """id, name, description, key_prefix, chat_enabled, chat_credential_id, chat_model,
              created_at, updated_at"""


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def server_json(r: Any, workflow_ids: list[str]) -> dict[str, Any]:
    sid = str(r["id"])
    return {
        "id": sid,
        "name": r["name"],
        "description": r["description"],
        "key_prefix": r["key_prefix"],
        "endpoint": f"/api/mcp/servers/{sid}/mcp",
        "sse_endpoint": f"/api/mcp/servers/{sid}/sse",
        "workflow_ids": workflow_ids,
        "chat_tool": {
            "enabled": r["chat_enabled"],
            "credential_id": str(r["chat_credential_id"]) if r["chat_credential_id"] else None,
            "model": r["chat_model"],
        },
        "created_at": r["created_at"].isoformat(),
        "updated_at": r["updated_at"].isoformat(),
    }


async def workflow_ids(pool: asyncpg.Pool[Any], server_id: uuid.UUID) -> list[str]:
    rows = await pool.fetch(
        "SELECT workflow_id FROM mcp_server_workflows WHERE server_id = $1 ORDER BY workflow_id",
        server_id,
    )
    return [str(r["workflow_id"]) for r in rows]


async def get(pool: asyncpg.Pool[Any], owner_id: str, server_id: str) -> Any:
    try:
        sid = uuid.UUID(server_id)
    except ValueError:
        return None
    return await pool.fetchrow(
        f"SELECT {_COLUMNS} FROM mcp_servers WHERE id = $1 AND owner_id = $2",
        sid,
        uuid.UUID(owner_id),
    )


async def list_servers(pool: asyncpg.Pool[Any], owner_id: str) -> list[Any]:
    return list(
        await pool.fetch(
            f"SELECT {_COLUMNS} FROM mcp_servers WHERE owner_id = $1 ORDER BY name",
            uuid.UUID(owner_id),
        )
    )


async def create(
    pool: asyncpg.Pool[Any], owner_id: str, name: str, description: str
) -> tuple[Any, str]:
    key = new_key()
    row = await pool.fetchrow(
        f"""INSERT INTO mcp_servers (id, owner_id, name, description, key_hash, key_prefix)
            VALUES ($1, $2, $3, $4, $5, $6) RETURNING {_COLUMNS}""",
        uuid.uuid4(),
        uuid.UUID(owner_id),
        name,
        description,
        hash_api_key(key),
        key[: len(KEY_PREFIX) + 4],
    )
    return row, key


async def regenerate_key(pool: asyncpg.Pool[Any], server_id: uuid.UUID) -> str:
    key = new_key()
    await pool.execute(
        """UPDATE mcp_servers SET key_hash = $2, key_prefix = $3, updated_at = now()
           WHERE id = $1""",
        server_id,
        hash_api_key(key),
        key[: len(KEY_PREFIX) + 4],
    )
    return key
