"""Files written by skills: kept in a JetStream object store, served only with their token.

The tool sandbox holds no database URL (least privilege), so a skill's output files go to the
object store bucket `HEYM_FILES` on the same NATS as the event log; the gateway serves them.
Each object's description holds its metadata: the owner, the file name and type, and the
SHA-256 of its unguessable token (the token itself is only in the download URL).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.js.api import ObjectMeta, ObjectStoreConfig, StorageType
from nats.js.errors import BucketNotFoundError, NotFoundError, ObjectNotFoundError
from nats.js.object_store import ObjectStore

BUCKET = "HEYM_FILES"
MAX_FILES_PER_CALL = 20
MAX_FILE_BYTES = 10 * 1024 * 1024
# Generated files are kept 30 days, then JetStream removes them.
TTL_S = 30 * 24 * 3600.0


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


class _Meta(msgspec.Struct, frozen=True, kw_only=True):
    owner_id: str
    token_sha256: str
    filename: str
    mime_type: str
    run_id: str = ""
    tool_call_id: str = ""


def download_url(file_id: str, token: str) -> str:
    return f"/api/files/{file_id}?token={token}"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", errors="replace")).hexdigest()


def _file_id(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        return None


class FileStore:
    def __init__(self, nc: NATS) -> None:
        self._nc = nc
        self._store: ObjectStore | None = None

    async def _bucket(self) -> ObjectStore:
        if self._store is None:
            js = self._nc.jetstream()
            try:
                self._store = await js.object_store(BUCKET)
            except (BucketNotFoundError, NotFoundError):
                self._store = await js.create_object_store(
                    BUCKET,
                    config=ObjectStoreConfig(
                        description="files written by skills (served with their token)",
                        ttl=TTL_S,
                        storage=StorageType.FILE,
                    ),
                )
        return self._store

    async def put(
        self,
        *,
        owner_id: str,
        filename: str,
        mime_type: str,
        content: bytes,
        run_id: str = "",
        tool_call_id: str = "",
    ) -> GeneratedFile:
        file_id = str(uuid.uuid4())
        token = secrets.token_urlsafe(32)
        meta = _Meta(
            owner_id=owner_id,
            token_sha256=_hash(token),
            filename=filename,
            mime_type=mime_type,
            run_id=run_id,
            tool_call_id=tool_call_id,
        )
        store = await self._bucket()
        await store.put(
            file_id,
            content,
            meta=ObjectMeta(name=file_id, description=msgspec.json.encode(meta).decode()),
        )
        return GeneratedFile(
            id=file_id,
            filename=filename,
            mime_type=mime_type,
            size_bytes=len(content),
            download_url=download_url(file_id, token),
        )

    async def get(self, file_id: str, token: str) -> StoredFile | None:
        """The file when `token` is its token; None otherwise (unknown and wrong look alike)."""
        fid = _file_id(file_id)
        if fid is None or not token or len(token) > 200:
            return None
        store = await self._bucket()
        try:
            info: Any = await store.get_info(fid)
        except (ObjectNotFoundError, NotFoundError):
            return None
        try:
            meta = msgspec.json.decode(info.description or "", type=_Meta)
        except msgspec.DecodeError:
            return None
        if not hmac.compare_digest(meta.token_sha256, _hash(token)):
            return None
        found = await store.get(fid)
        return StoredFile(
            id=fid,
            filename=meta.filename,
            mime_type=meta.mime_type,
            content=bytes(found.data or b""),
        )
