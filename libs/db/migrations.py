"""Versioned SQL migrations (`NNNN_name.sql` beside this module), applied in order at start.

Each file runs in its own transaction and is recorded in `schema_migrations`; an advisory
lock makes concurrent starters (several services at once) apply each file exactly once. No
migration library fits asyncpg without a second, synchronous driver, so this is a small runner.
"""

from __future__ import annotations

import hashlib
import logging
import re
from importlib import resources

from libs.db.types import Conn

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_KEY = 0x4E59_4D00_0001  # any constant unique to Heym's migration runner


class MigrationError(RuntimeError):
    """A migration file is malformed, or an applied file was edited afterwards."""


def _files() -> list[tuple[int, str, str]]:
    found: list[tuple[int, str, str]] = []
    for entry in resources.files("libs.db").joinpath("migrations").iterdir():
        m = _NAME.match(entry.name)
        if m:
            found.append((int(m.group(1)), entry.name, entry.read_text(encoding="utf-8")))
        elif entry.name.endswith(".sql"):
            raise MigrationError(f"migration file name must be NNNN_name.sql: {entry.name}")
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise MigrationError("two migration files share a version number")
    return found


async def apply_migrations(conn: Conn) -> list[str]:
    """Apply every migration not yet applied; returns the names applied now."""
    applied_now: list[str] = []
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   checksum text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {
            r["version"]: r["checksum"]
            for r in await conn.fetch("SELECT version, checksum FROM schema_migrations")
        }
        for version, name, sql in _files():
            checksum = hashlib.sha256(sql.encode()).hexdigest()
            if version in done:
                if done[version] != checksum:
                    raise MigrationError(
                        f"migration {name} was changed after it was applied; "
                        "add a new migration instead of editing an old one"
                    )
                continue
            async with conn.transaction():
                await conn.execute(sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    version,
                    name,
                    checksum,
                )
            log.info("applied migration %s", name)
            applied_now.append(name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    return applied_now


async def applied_versions(conn: Conn) -> list[int]:
    rows = await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")
    return [int(r["version"]) for r in rows]
