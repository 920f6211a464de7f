"""Stored MCP connections: headers and env sealed like model credentials, names in the clear.

Reads for the API never return header or env values; only the tool sandbox loads a
connection with its secrets (`load_server`), for the owner that dispatched the call.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import msgspec

from libs.db.types import Conn
from libs.secrets import SecretBox, credential_aad
from libs.tools.mcp_config import McpServer

_COLUMNS = (
    "id, owner_id, label, transport, url, command, args, timeout_seconds, header_names, "
    "env_names, created_at, updated_at"
)


class ConnectionRow(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    owner_id: str
    label: str
    transport: str
    url: str | None
    command: str | None
    args: list[str]
    timeout_seconds: float | None
    header_names: list[str]
    env_names: list[str]
    created_at: str
    updated_at: str


class ConnectionFields(msgspec.Struct, frozen=True, kw_only=True):
    """Validated values; `headers`/`env` None on update means "keep the stored ones"."""

    label: str
    transport: str
    url: str | None
    command: str | None
    args: list[str]
    timeout_seconds: float | None
    headers: dict[str, str] | None
    env: dict[str, str] | None

    def __repr__(self) -> str:
        return f"ConnectionFields(label={self.label!r}, transport={self.transport!r}, <secrets>)"


def _row(r: asyncpg.Record) -> ConnectionRow:
    return ConnectionRow(
        id=str(r["id"]),
        owner_id=str(r["owner_id"]),
        label=r["label"],
        transport=r["transport"],
        url=r["url"],
        command=r["command"],
        args=_jsonb(r["args"]),
        timeout_seconds=r["timeout_seconds"],
        header_names=_jsonb(r["header_names"]),
        env_names=_jsonb(r["env_names"]),
        created_at=r["created_at"].isoformat(),
        updated_at=r["updated_at"].isoformat(),
    )


def _jsonb(value: Any) -> list[Any]:
    """A jsonb list, from a pool with Heym's JSON codec (a value) or a plain connection (text)."""
    if isinstance(value, str):
        value = json.loads(value)
    return list(value) if isinstance(value, list) else []


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


def _seal(box: SecretBox, cid: uuid.UUID, headers: dict[str, str], env: dict[str, str]) -> bytes:
    return box.encrypt(json.dumps({"headers": headers, "env": env}), aad=credential_aad(cid))


def _open(
    box: SecretBox, cid: uuid.UUID, blob: bytes | None
) -> tuple[dict[str, str], dict[str, str]]:
    if blob is None:
        return {}, {}
    data = json.loads(box.decrypt(bytes(blob), aad=credential_aad(cid)))
    return dict(data.get("headers") or {}), dict(data.get("env") or {})


async def insert_connection(
    conn: Conn | asyncpg.Pool[Any], box: SecretBox, owner_id: str, fields: ConnectionFields
) -> ConnectionRow:
    cid = uuid.uuid4()
    headers, env = fields.headers or {}, fields.env or {}
    r = await conn.fetchrow(
        f"""INSERT INTO mcp_connections (id, owner_id, label, transport, url, command, args,
                timeout_seconds, secret, header_names, env_names)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING {_COLUMNS}""",
        cid,
        uuid.UUID(owner_id),
        fields.label,
        fields.transport,
        fields.url,
        fields.command,
        fields.args,
        fields.timeout_seconds,
        _seal(box, cid, headers, env),
        sorted(headers),
        sorted(env),
    )
    assert r is not None
    return _row(r)


async def list_connections(conn: Conn | asyncpg.Pool[Any], owner_id: str) -> list[ConnectionRow]:
    oid = _uuid(owner_id)
    if oid is None:
        return []
    rows = await conn.fetch(
        f"SELECT {_COLUMNS} FROM mcp_connections WHERE owner_id = $1 ORDER BY lower(label), id",
        oid,
    )
    return [_row(r) for r in rows]


async def get_connection(
    conn: Conn | asyncpg.Pool[Any], owner_id: str, connection_id: str
) -> ConnectionRow | None:
    """The owner's connection, or None (another user's is indistinguishable from none)."""
    cid, oid = _uuid(connection_id), _uuid(owner_id)
    if cid is None or oid is None:
        return None
    r = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM mcp_connections WHERE id = $1 AND owner_id = $2", cid, oid
    )
    return _row(r) if r else None


async def update_connection(
    conn: Conn | asyncpg.Pool[Any],
    box: SecretBox,
    owner_id: str,
    connection_id: str,
    fields: ConnectionFields,
) -> ConnectionRow | None:
    cid, oid = _uuid(connection_id), _uuid(owner_id)
    if cid is None or oid is None:
        return None
    async with _transaction(conn) as tx:
        current = await tx.fetchrow(
            "SELECT secret FROM mcp_connections WHERE id = $1 AND owner_id = $2 FOR UPDATE",
            cid,
            oid,
        )
        if current is None:
            return None
        old_headers, old_env = _open(box, cid, current["secret"])
        headers = old_headers if fields.headers is None else fields.headers
        env = old_env if fields.env is None else fields.env
        r = await tx.fetchrow(
            f"""UPDATE mcp_connections SET label = $3, transport = $4, url = $5, command = $6,
                       args = $7, timeout_seconds = $8, secret = $9, header_names = $10,
                       env_names = $11, updated_at = now()
                WHERE id = $1 AND owner_id = $2 RETURNING {_COLUMNS}""",
            cid,
            oid,
            fields.label,
            fields.transport,
            fields.url,
            fields.command,
            fields.args,
            fields.timeout_seconds,
            _seal(box, cid, headers, env),
            sorted(headers),
            sorted(env),
        )
    return _row(r) if r else None


async def delete_connection(
    conn: Conn | asyncpg.Pool[Any], owner_id: str, connection_id: str
) -> bool:
    cid, oid = _uuid(connection_id), _uuid(owner_id)
    if cid is None or oid is None:
        return False
    deleted = await conn.fetchval(
        "DELETE FROM mcp_connections WHERE id = $1 AND owner_id = $2 RETURNING id", cid, oid
    )
    return deleted is not None


async def load_server(
    conn: Conn | asyncpg.Pool[Any], box: SecretBox, owner_id: str, connection_id: str
) -> McpServer | None:
    """The owner's stored connection with its headers and env (for the sandbox only)."""
    cid, oid = _uuid(connection_id), _uuid(owner_id)
    if cid is None or oid is None:
        return None
    r = await conn.fetchrow(
        f"SELECT {_COLUMNS}, secret FROM mcp_connections WHERE id = $1 AND owner_id = $2",
        cid,
        oid,
    )
    if r is None:
        return None
    headers, env = _open(box, cid, r["secret"])
    return McpServer(
        id=str(r["id"]),
        label=r["label"],
        transport=r["transport"],
        command=r["command"] or "",
        args=tuple(_jsonb(r["args"])),
        env=env,
        url=r["url"] or "",
        headers=headers,
        timeout_s=r["timeout_seconds"],
        stored=True,
    )


class _transaction:
    """A transaction on a connection, or on one acquired from a pool for the block."""

    def __init__(self, conn: Conn | asyncpg.Pool[Any]) -> None:
        self._conn = conn
        self._acquired: Any = None
        self._tx: Any = None

    async def __aenter__(self) -> Conn:
        target: Any = self._conn
        if isinstance(self._conn, asyncpg.Pool):
            self._acquired = self._conn.acquire()
            target = await self._acquired.__aenter__()
        self._tx = target.transaction()
        await self._tx.__aenter__()
        return target  # type: ignore[no-any-return]

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._tx.__aexit__(*exc)
        finally:
            if self._acquired is not None:
                await self._acquired.__aexit__(*exc)
