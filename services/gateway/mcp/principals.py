"""Who is calling an MCP endpoint: a user's API key (default endpoint, or a named server of
theirs) or a named server's own key (only that server). Headers only: `X-MCP-Key` or
`Authorization: Bearer`; credentials in the URL are refused."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from libs.accounts import user_for_api_key
from libs.accounts.api_keys import hash_api_key

URL_CREDENTIALS = ("key", "token", "api_key", "apikey", "access_token")


@dataclass(frozen=True)
class Principal:
    user_id: str
    # None: the default server (all of the user's MCP-enabled workflows).
    server_id: str | None = None
    # True when the caller holds the named server's own key (not the user's).
    server_key: bool = False

    @property
    def client_id(self) -> str:
        return f"{self.user_id}:{self.server_id or 'default'}"


class AuthFailure(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def presented_key(headers: dict[str, str]) -> str | None:
    key = headers.get("x-mcp-key", "").strip()
    if key:
        return key
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


async def authenticate(
    pool: asyncpg.Pool[Any], headers: dict[str, str], query: str, server_id: str | None
) -> Principal:
    if any(f"{name}=" in query.lower() for name in URL_CREDENTIALS):
        raise AuthFailure("credentials in the URL are refused; send an X-MCP-Key header", 400)
    key = presented_key(headers)
    if key is None or len(key) > 256:
        raise AuthFailure(
            "send your key as 'X-MCP-Key: <key>' or 'Authorization: Bearer <key>'", 401
        )
    if server_id is None:
        user = await user_for_api_key(pool, key)
        if user is None:
            raise AuthFailure("the key is not valid for this endpoint", 401)
        return Principal(user_id=user.id)
    try:
        sid = uuid.UUID(server_id)
    except ValueError:
        raise AuthFailure("MCP server not found", 404) from None
    row = await pool.fetchrow("SELECT owner_id, key_hash FROM mcp_servers WHERE id = $1", sid)
    if row is not None and bytes(row["key_hash"]) == hash_api_key(key):
        return Principal(user_id=str(row["owner_id"]), server_id=str(sid), server_key=True)
    user = await user_for_api_key(pool, key)
    if user is None:
        raise AuthFailure("the key is not valid for this endpoint", 401)
    if row is None or str(row["owner_id"]) != user.id:
        raise AuthFailure("MCP server not found", 404)
    return Principal(user_id=user.id, server_id=str(sid))
