"""Stored skills (the skills library): Heym's skill shape, owned by one user."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import msgspec

from libs.db.types import Conn

_SUMMARY = "id, owner_id, name, content, timeout_seconds, created_at, updated_at, files"


class SkillRow(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    owner_id: str
    name: str
    content: str
    files: list[dict[str, Any]]
    timeout_seconds: float | None
    created_at: str
    updated_at: str

    def as_skill(self) -> dict[str, Any]:
        """Heym's `AgentSkill`: `{id, name, content, files, timeoutSeconds?}`."""
        skill: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "content": self.content,
            "files": self.files,
        }
        if self.timeout_seconds is not None:
            skill["timeoutSeconds"] = self.timeout_seconds
        return skill


def _row(r: asyncpg.Record) -> SkillRow:
    return SkillRow(
        id=str(r["id"]),
        owner_id=str(r["owner_id"]),
        name=r["name"],
        content=r["content"],
        files=_jsonb(r["files"]),
        timeout_seconds=r["timeout_seconds"],
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


async def insert_skill(
    conn: Conn | asyncpg.Pool[Any],
    owner_id: str,
    *,
    name: str,
    content: str,
    files: list[dict[str, Any]],
    timeout_seconds: float | None,
) -> SkillRow:
    r = await conn.fetchrow(
        f"""INSERT INTO skills (id, owner_id, name, content, files, timeout_seconds)
            VALUES ($1, $2, $3, $4, $5, $6) RETURNING {_SUMMARY}""",
        uuid.uuid4(),
        uuid.UUID(owner_id),
        name,
        content,
        files,
        timeout_seconds,
    )
    assert r is not None
    return _row(r)


async def list_skills(conn: Conn | asyncpg.Pool[Any], owner_id: str) -> list[SkillRow]:
    oid = _uuid(owner_id)
    if oid is None:
        return []
    rows = await conn.fetch(
        f"SELECT {_SUMMARY} FROM skills WHERE owner_id = $1 ORDER BY lower(name), id", oid
    )
    return [_row(r) for r in rows]


async def get_skill(
    conn: Conn | asyncpg.Pool[Any], owner_id: str, skill_id: str
) -> SkillRow | None:
    """The owner's skill, or None (another user's skill is indistinguishable from none)."""
    sid, oid = _uuid(skill_id), _uuid(owner_id)
    if sid is None or oid is None:
        return None
    r = await conn.fetchrow(
        f"SELECT {_SUMMARY} FROM skills WHERE id = $1 AND owner_id = $2", sid, oid
    )
    return _row(r) if r else None


async def get_skills(
    conn: Conn | asyncpg.Pool[Any], owner_id: str, skill_ids: list[str]
) -> dict[str, SkillRow]:
    oid = _uuid(owner_id)
    ids = [u for u in (_uuid(s) for s in skill_ids) if u is not None]
    if oid is None or not ids:
        return {}
    rows = await conn.fetch(
        f"SELECT {_SUMMARY} FROM skills WHERE owner_id = $1 AND id = ANY($2::uuid[])", oid, ids
    )
    return {str(r["id"]): _row(r) for r in rows}


async def delete_skill(conn: Conn | asyncpg.Pool[Any], owner_id: str, skill_id: str) -> bool:
    sid, oid = _uuid(skill_id), _uuid(owner_id)
    if sid is None or oid is None:
        return False
    deleted = await conn.fetchval(
        "DELETE FROM skills WHERE id = $1 AND owner_id = $2 RETURNING id", sid, oid
    )
    return deleted is not None
