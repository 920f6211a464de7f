"""asyncpg pools with JSON codecs (jsonb in and out as Python values via msgspec)."""

from __future__ import annotations

from typing import Any

import asyncpg
import msgspec

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode


async def init_connection(conn: asyncpg.Connection[Any]) -> None:
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(
            typ,
            encoder=lambda v: _encode(v).decode(),
            decoder=_decode,
            schema="pg_catalog",
        )


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool[Any]:
    pool = await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=init_connection
    )
    if pool is None:  # pragma: no cover - asyncpg returns None only when not awaited
        raise RuntimeError("asyncpg did not create a pool")
    return pool
