"""Web sign-in sessions: opened with an API key, stored hashed in Postgres (`ui_sessions`).

The session token is 256 random bits; only its SHA-256 is stored, so a copy of the table
signs nobody in. Every gateway replica reads the same rows, so a session works on all of
them. A session ends at its expiry, at sign-out, or as soon as the API key it was opened
with is revoked (checked on every lookup, like the key itself).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from typing import Any

import asyncpg
import msgspec

from libs.accounts.api_keys import AccountUser, hash_api_key
from libs.db.types import Conn

MAX_TOKEN_CHARS = 128
# Expired rows are removed a few at a time by each sign-in (nothing else writes the table).
_SWEEP_BATCH = 100


class Session(msgspec.Struct, frozen=True, kw_only=True):
    user: AccountUser
    expires_at: datetime


def _hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


async def open_session(
    conn: Conn | asyncpg.Pool[Any], api_key: str, *, ttl_s: float
) -> tuple[str, Session] | None:
    """A new session for the key's user (None if the key is not valid): the token (for the
    cookie, never stored) and the session."""
    if not api_key or len(api_key) > 256:
        return None
    row = await conn.fetchrow(
        """SELECT k.id AS key_id, u.id, u.email, u.name, u.is_admin
           FROM api_keys k JOIN users u ON u.id = k.user_id
           WHERE k.key_hash = $1 AND k.revoked_at IS NULL""",
        hash_api_key(api_key),
    )
    if row is None:
        return None
    await conn.execute(
        """DELETE FROM ui_sessions WHERE token_hash IN (
               SELECT token_hash FROM ui_sessions WHERE expires_at < now() LIMIT $1)""",
        _SWEEP_BATCH,
    )
    token = secrets.token_urlsafe(32)
    expires_at = await conn.fetchval(
        """INSERT INTO ui_sessions (token_hash, user_id, api_key_id, expires_at)
           VALUES ($1, $2, $3, now() + make_interval(secs => $4))
           RETURNING expires_at""",
        _hash(token),
        row["id"],
        row["key_id"],
        float(ttl_s),
    )
    user = AccountUser(
        id=str(row["id"]), email=row["email"], name=row["name"], is_admin=row["is_admin"]
    )
    return token, Session(user=user, expires_at=expires_at)


async def session_for(conn: Conn | asyncpg.Pool[Any], token: str | None) -> Session | None:
    """The live session this token opens, or None (unknown, expired, or its key revoked)."""
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    row = await conn.fetchrow(
        """SELECT u.id, u.email, u.name, u.is_admin, s.expires_at
           FROM ui_sessions s
           JOIN users u ON u.id = s.user_id
           JOIN api_keys k ON k.id = s.api_key_id
           WHERE s.token_hash = $1 AND s.expires_at > now() AND k.revoked_at IS NULL""",
        _hash(token),
    )
    if row is None:
        return None
    user = AccountUser(
        id=str(row["id"]), email=row["email"], name=row["name"], is_admin=row["is_admin"]
    )
    return Session(user=user, expires_at=row["expires_at"])


async def close_session(conn: Conn | asyncpg.Pool[Any], token: str) -> None:
    if token and len(token) <= MAX_TOKEN_CHARS:
        await conn.execute("DELETE FROM ui_sessions WHERE token_hash = $1", _hash(token))
