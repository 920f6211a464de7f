"""Model credentials in Postgres: rows without their secret, which is sealed before it is stored."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import msgspec

from libs.db.types import Conn
from libs.secrets import SecretBox, credential_aad, key_hint

# Every read returns these columns; `secret` is deliberately absent so it never leaves the store.
_COLUMNS = "id, owner_id, name, type, base_url, key_hint, created_at, updated_at"


class CredentialNameTaken(Exception):
    """The owner already has a credential with this name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a credential named {name!r} already exists")
        self.name = name


class CredentialRow(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    owner_id: str
    name: str
    type: str
    base_url: str | None
    key_hint: str
    created_at: str
    updated_at: str


def _row(r: asyncpg.Record) -> CredentialRow:
    return CredentialRow(
        id=str(r["id"]),
        owner_id=str(r["owner_id"]),
        name=r["name"],
        type=r["type"],
        base_url=r["base_url"],
        key_hint=r["key_hint"],
        created_at=r["created_at"].isoformat(),
        updated_at=r["updated_at"].isoformat(),
    )


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


async def insert_credential(
    conn: Conn | asyncpg.Pool[Any],
    box: SecretBox,
    owner_id: str,
    *,
    name: str,
    type: str,
    base_url: str | None,
    api_key: str,
) -> CredentialRow:
    """Store a new credential; raises `CredentialNameTaken` when the owner has the name."""
    cid = uuid.uuid4()
    try:
        r = await conn.fetchrow(
            f"""INSERT INTO credentials (id, owner_id, name, type, base_url, secret, key_hint)
                VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {_COLUMNS}""",
            cid,
            uuid.UUID(owner_id),
            name,
            type,
            base_url,
            box.encrypt(api_key, aad=credential_aad(cid)),
            key_hint(api_key),
        )
    except asyncpg.UniqueViolationError:
        raise CredentialNameTaken(name) from None
    assert r is not None
    return _row(r)


async def list_credentials(conn: Conn | asyncpg.Pool[Any], owner_id: str) -> list[CredentialRow]:
    oid = _uuid(owner_id)
    if oid is None:
        return []
    rows = await conn.fetch(
        f"SELECT {_COLUMNS} FROM credentials WHERE owner_id = $1 ORDER BY lower(name), name", oid
    )
    return [_row(r) for r in rows]


async def get_credential(
    conn: Conn | asyncpg.Pool[Any], owner_id: str, credential_id: str
) -> CredentialRow | None:
    """The owner's credential, or None (also for another user's: its existence stays hidden)."""
    cid, oid = _uuid(credential_id), _uuid(owner_id)
    if cid is None or oid is None:
        return None
    r = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM credentials WHERE id = $1 AND owner_id = $2", cid, oid
    )
    return _row(r) if r else None


async def update_credential(
    conn: Conn | asyncpg.Pool[Any],
    box: SecretBox,
    owner_id: str,
    credential_id: str,
    *,
    name: str,
    base_url: str | None,
    api_key: str | None,
) -> CredentialRow | None:
    """Replace name and base URL, and the secret when `api_key` is given; None if not found."""
    cid, oid = _uuid(credential_id), _uuid(owner_id)
    if cid is None or oid is None:
        return None
    secret = None if api_key is None else box.encrypt(api_key, aad=credential_aad(cid))
    hint = None if api_key is None else key_hint(api_key)
    try:
        r = await conn.fetchrow(
            f"""UPDATE credentials SET name = $3, base_url = $4,
                       secret = COALESCE($5, secret), key_hint = COALESCE($6, key_hint),
                       updated_at = now()
                WHERE id = $1 AND owner_id = $2 RETURNING {_COLUMNS}""",
            cid,
            oid,
            name,
            base_url,
            secret,
            hint,
        )
    except asyncpg.UniqueViolationError:
        raise CredentialNameTaken(name) from None
    return _row(r) if r else None


async def delete_credential(
    conn: Conn | asyncpg.Pool[Any], owner_id: str, credential_id: str
) -> bool:
    """Delete the owner's credential; False when there was none to delete."""
    cid, oid = _uuid(credential_id), _uuid(owner_id)
    if cid is None or oid is None:
        return False
    deleted = await conn.fetchval(
        "DELETE FROM credentials WHERE id = $1 AND owner_id = $2 RETURNING id", cid, oid
    )
    return deleted is not None
