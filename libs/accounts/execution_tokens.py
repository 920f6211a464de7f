"""Workflow-scoped execution tokens: HS256 JWTs (`scope: workflow:execute`, `wid`, `jti`) whose
`jti` is a row in `execution_tokens`, so deleting the row revokes the token at once."""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from datetime import UTC, datetime
from typing import Any, Final

import asyncpg
import jwt

from libs.db.types import Conn

SCOPE: Final = "workflow:execute"
ISSUER: Final = "heym"
_ALGORITHM: Final = "HS256"


def signing_key(secret_key: str) -> bytes:
    """A key for token signatures only, derived from the instance secret (never reused raw)."""
    return hmac.new(secret_key.encode(), b"heym execution tokens v1", hashlib.sha256).digest()


def looks_like_token(value: str) -> bool:
    return value.count(".") == 2 and len(value) < 4096


async def issue(
    conn: Conn | asyncpg.Pool[Any],
    key: bytes,
    *,
    workflow_id: str,
    owner_id: str,
    name: str,
    expires_in_s: int | None,
) -> tuple[dict[str, Any], str]:
    """Store a token's row and return it with the signed token (shown to the caller once)."""
    token_id = uuid.uuid4()
    now = int(time.time())
    expires = now + expires_in_s if expires_in_s else None
    row = await conn.fetchrow(
        """INSERT INTO execution_tokens (id, workflow_id, owner_id, name, expires_at)
           VALUES ($1, $2, $3, $4, $5)
           RETURNING id, workflow_id, name, created_at, expires_at, revoked_at""",
        token_id,
        uuid.UUID(workflow_id),
        uuid.UUID(owner_id),
        name,
        datetime.fromtimestamp(expires, UTC) if expires else None,
    )
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "sub": owner_id,
        "scope": SCOPE,
        "wid": workflow_id,
        "jti": str(token_id),
        "iat": now,
    }
    if expires:
        claims["exp"] = expires
    return token_json(row), jwt.encode(claims, key, algorithm=_ALGORITHM)


def token_json(r: Any) -> dict[str, Any]:
    return {
        "id": str(r["id"]),
        "workflow_id": str(r["workflow_id"]),
        "name": r["name"],
        "scope": SCOPE,
        "created_at": r["created_at"].isoformat(),
        "expires_at": r["expires_at"].isoformat() if r["expires_at"] else None,
        "revoked": r["revoked_at"] is not None,
    }


async def list_tokens(conn: Conn | asyncpg.Pool[Any], workflow_id: str) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        """SELECT id, workflow_id, name, created_at, expires_at, revoked_at
           FROM execution_tokens WHERE workflow_id = $1 ORDER BY created_at DESC""",
        uuid.UUID(workflow_id),
    )
    return [token_json(r) for r in rows]


async def revoke(conn: Conn | asyncpg.Pool[Any], workflow_id: str, token_id: str) -> bool:
    try:
        tid = uuid.UUID(token_id)
    except ValueError:
        return False
    done = await conn.execute(
        """UPDATE execution_tokens SET revoked_at = now()
           WHERE id = $1 AND workflow_id = $2 AND revoked_at IS NULL""",
        tid,
        uuid.UUID(workflow_id),
    )
    return str(done).endswith(" 1")


async def verify(conn: Conn | asyncpg.Pool[Any], key: bytes, token: str, workflow_id: str) -> bool:
    """True when `token` is a live execution token for `workflow_id` (signature, scope,
    workflow, expiry, and its row neither revoked nor deleted)."""
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[_ALGORITHM],
            issuer=ISSUER,
            options={"require": ["jti", "wid", "scope", "iat"]},
        )
    except jwt.PyJWTError:
        return False
    if claims.get("scope") != SCOPE or claims.get("wid") != workflow_id:
        return False
    try:
        tid = uuid.UUID(str(claims["jti"]))
    except ValueError:
        return False
    live = await conn.fetchval(
        """SELECT 1 FROM execution_tokens WHERE id = $1 AND workflow_id = $2
           AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())""",
        tid,
        uuid.UUID(workflow_id),
    )
    return bool(live)
