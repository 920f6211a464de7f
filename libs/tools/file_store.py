"""Files written by skills: stored with an unguessable token, served only with it."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from typing import Any

import asyncpg
import msgspec

from libs.db.types import Conn

MAX_FILES_PER_CALL = 20
MAX_FILE_BYTES = 10 * 1024 * 1024


class GeneratedFile(msgspec.Struct, frozen=True, kw_only=True):
    """What a tool result says about one stored file (`_generated_files` items)."""

    id: str
    filename: str
    mime_type: str
    size_bytes: int
    download_url: str


class StoredFile(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    filename: str
    mime_type: str
    content: bytes


def download_url(file_id: str, token: str) -> str:
    return f"/api/files/{file_id}?token={token}"


def _hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", errors="replace")).digest()


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


async def store_file(
    conn: Conn | asyncpg.Pool[Any],
    *,
    owner_id: str,
    filename: str,
    mime_type: str,
    content: bytes,
    run_id: str = "",
    tool_call_id: str = "",
) -> GeneratedFile:
    file_id = uuid.uuid4()
    token = secrets.token_urlsafe(32)
    await conn.execute(
        """INSERT INTO generated_files
               (id, owner_id, token_hash, filename, mime_type, size_bytes, content, run_id,
                tool_call_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)""",
        file_id,
        _uuid(owner_id),
        _hash(token),
        filename,
        mime_type,
        len(content),
        content,
        run_id,
        tool_call_id,
    )
    return GeneratedFile(
        id=str(file_id),
        filename=filename,
        mime_type=mime_type,
        size_bytes=len(content),
        download_url=download_url(str(file_id), token),
    )


async def load_file(conn: Conn | asyncpg.Pool[Any], file_id: str, token: str) -> StoredFile | None:
    """The file when `token` is its token; None otherwise (unknown and wrong look the same)."""
    fid = _uuid(file_id)
    if fid is None or not token or len(token) > 200:
        return None
    r = await conn.fetchrow(
        "SELECT id, token_hash, filename, mime_type, content FROM generated_files WHERE id = $1",
        fid,
    )
    if r is None or not hmac.compare_digest(bytes(r["token_hash"]), _hash(token)):
        return None
    return StoredFile(
        id=str(r["id"]),
        filename=r["filename"],
        mime_type=r["mime_type"],
        content=bytes(r["content"]),
    )
