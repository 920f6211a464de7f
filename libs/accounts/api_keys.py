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


async def create_user(
    conn: Conn, *, email: str, name: str = "", is_admin: bool = False
) -> AccountUser:
    uid = uuid.uuid4()
    await conn.execute(
        "INSERT INTO users (id, email, name, is_admin) VALUES ($1, $2, $3, $4)",
        uid,
        email,
        name,
        is_admin,
    )
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
