"""API keys: `heym_` + 43 random URL-safe characters; only their SHA-256 is stored."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import Any

import asyncpg
import msgspec

from libs.db.types import Conn

ADMIN_EMAIL = "admin@heym.local"
KEY_PREFIX = "heym_"


class AccountUser(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    email: str
    name: str
    is_admin: bool


def generate_api_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


async def user_for_api_key(conn: Conn | asyncpg.Pool[Any], key: str) -> AccountUser | None:
    if not key or len(key) > 256:
        return None
    row = await conn.fetchrow(
        """SELECT u.id, u.email, u.name, u.is_admin
           FROM api_keys k JOIN users u ON u.id = k.user_id
           WHERE k.key_hash = $1 AND k.revoked_at IS NULL""",
        hash_api_key(key),
    )
    if row is None:
        return None
    return AccountUser(
        id=str(row["id"]), email=row["email"], name=row["name"], is_admin=row["is_admin"]
    )


class EmailTaken(Exception):
    """Another user already has this email."""


async def create_user(
    conn: Conn | asyncpg.Pool[Any], *, email: str, name: str = "", is_admin: bool = False
) -> AccountUser:
    uid = uuid.uuid4()
    try:
        await conn.execute(
            "INSERT INTO users (id, email, name, is_admin) VALUES ($1, $2, $3, $4)",
            uid,
            email,
            name,
            is_admin,
        )
    except asyncpg.UniqueViolationError:
        raise EmailTaken(email) from None
    return AccountUser(id=str(uid), email=email, name=name, is_admin=is_admin)


async def add_api_key(conn: Conn, user_id: str, key: str, *, name: str = "default") -> None:
    await conn.execute(
        """INSERT INTO api_keys (id, user_id, name, key_hash, key_prefix)
           VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key_hash) DO NOTHING""",
        uuid.uuid4(),
        uuid.UUID(user_id),
        name,
        hash_api_key(key),
        key[:9],
    )


async def ensure_admin(conn: Conn, configured_key: str | None) -> str | None:
    """Make sure the admin user exists; returns a newly generated key to print once, else None.

    With `configured_key` (HEYM_ADMIN_API_KEY) that key is made valid for the admin. Without
    it, a key is generated only when the admin user is first created.
    """
    async with conn.transaction():
        row = await conn.fetchrow("SELECT id FROM users WHERE email = $1", ADMIN_EMAIL)
        if row is None:
            admin = await create_user(conn, email=ADMIN_EMAIL, name="Admin", is_admin=True)
            admin_id = admin.id
            created = True
        else:
            admin_id = str(row["id"])
            created = False
        if configured_key:
            await add_api_key(conn, admin_id, configured_key, name="HEYM_ADMIN_API_KEY")
            return None
        if created:
            key = generate_api_key()
            await add_api_key(conn, admin_id, key, name="generated at first start")
            return key
        return None


class ApiKeyRow(msgspec.Struct, frozen=True, kw_only=True):
    """An API key as the users API shows it: never the key, only its first characters."""

    id: str
    user_id: str
    name: str
    key_prefix: str
    created_at: str
    revoked_at: str | None


def _key_row(r: asyncpg.Record) -> ApiKeyRow:
    return ApiKeyRow(
        id=str(r["id"]),
        user_id=str(r["user_id"]),
        name=r["name"],
        key_prefix=r["key_prefix"],
        created_at=r["created_at"].isoformat(),
        revoked_at=r["revoked_at"].isoformat() if r["revoked_at"] else None,
    )


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


async def list_users(conn: Conn | asyncpg.Pool[Any]) -> list[AccountUser]:
    rows = await conn.fetch(
        "SELECT id, email, name, is_admin FROM users ORDER BY created_at, email"
    )
    return [
        AccountUser(id=str(r["id"]), email=r["email"], name=r["name"], is_admin=r["is_admin"])
        for r in rows
    ]


async def get_user(conn: Conn | asyncpg.Pool[Any], user_id: str) -> AccountUser | None:
    uid = _uuid(user_id)
    if uid is None:
        return None
    r = await conn.fetchrow("SELECT id, email, name, is_admin FROM users WHERE id = $1", uid)
    if r is None:
        return None
    return AccountUser(id=str(r["id"]), email=r["email"], name=r["name"], is_admin=r["is_admin"])


async def issue_api_key(
    conn: Conn | asyncpg.Pool[Any], user_id: str, *, name: str
) -> tuple[ApiKeyRow, str]:
    """A new key for the user: its row and the key itself, which is never stored or shown again."""
    key = generate_api_key()
    r = await conn.fetchrow(
        """INSERT INTO api_keys (id, user_id, name, key_hash, key_prefix)
           VALUES ($1, $2, $3, $4, $5)
           RETURNING id, user_id, name, key_prefix, created_at, revoked_at""",
        uuid.uuid4(),
        uuid.UUID(user_id),
        name,
        hash_api_key(key),
        key[:9],
    )
    assert r is not None
    return _key_row(r), key


async def list_api_keys(conn: Conn | asyncpg.Pool[Any], user_id: str) -> list[ApiKeyRow]:
    uid = _uuid(user_id)
    if uid is None:
        return []
    rows = await conn.fetch(
        """SELECT id, user_id, name, key_prefix, created_at, revoked_at FROM api_keys
           WHERE user_id = $1 ORDER BY created_at""",
        uid,
    )
    return [_key_row(r) for r in rows]


async def revoke_api_key(conn: Conn | asyncpg.Pool[Any], user_id: str, key_id: str) -> bool:
    """Revoke the user's key; False when there is no such key. Effective at once everywhere:
    keys are checked against Postgres on every request, no gateway keeps a copy."""
    uid, kid = _uuid(user_id), _uuid(key_id)
    if uid is None or kid is None:
        return False
    found = await conn.fetchval(
        """UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now())
           WHERE id = $1 AND user_id = $2 RETURNING id""",
        kid,
        uid,
    )
    return found is not None
