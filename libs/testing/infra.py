"""Real infrastructure for tests and benchmarks: NATS JetStream and Postgres, never mocks.

Order of preference: servers named by `HEYM_TEST_NATS_URL` / `HEYM_TEST_DATABASE_URL`; for
Postgres, a testcontainers container when `HEYM_TEST_CONTAINERS=1` and a Docker engine runs;
otherwise the embedded servers from the wheels (the default here and in CI).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import nats
from nats.aio.client import Client as NATS

from libs.db import apply_migrations
from libs.db.urls import with_database
from libs.embedded import EmbeddedNats, EmbeddedPostgres
from libs.eventlog import provision_run_stream


@contextlib.contextmanager
def nats_server(directory: Path) -> Iterator[str]:
    """A JetStream server URL for a test session."""
    url = os.environ.get("HEYM_TEST_NATS_URL")
    if url:
        yield url
        return
    server = EmbeddedNats(directory)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def _docker_available() -> bool:
    return os.path.exists("/var/run/docker.sock") or bool(os.environ.get("DOCKER_HOST"))


@contextlib.contextmanager
def postgres_server(directory: Path) -> Iterator[str]:
    """An admin URL (database `postgres`) of a Postgres server for a test session."""
    url = os.environ.get("HEYM_TEST_DATABASE_URL")
    if url:
        yield url
        return
    if os.environ.get("HEYM_TEST_CONTAINERS") == "1" and _docker_available():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:17-alpine", driver=None) as pg:
            yield pg.get_connection_url()
        return
    server = EmbeddedPostgres(directory, database="postgres")
    server.start()
    try:
        yield server.admin_url
    finally:
        server.stop()


async def create_template(admin_url: str, name: str = "heym_template") -> str:
    """A database with every migration applied, to copy per test (CREATE DATABASE … TEMPLATE)."""
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(with_database(admin_url, name))
    try:
        await apply_migrations(conn)
    finally:
        await conn.close()
    return name


@contextlib.asynccontextmanager
async def fresh_database(admin_url: str, template: str) -> AsyncIterator[str]:
    """A new database copied from `template`, dropped afterwards; yields its URL."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    finally:
        await admin.close()
    try:
        yield with_database(admin_url, name)
    finally:
        admin = await asyncpg.connect(admin_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@contextlib.asynccontextmanager
async def connected(url: str, **options: Any) -> AsyncIterator[NATS]:
    """A NATS connection with the run stream provisioned."""
    nc = await nats.connect(url, **options)
    try:
        await provision_run_stream(nc)
        yield nc
    finally:
        await nc.drain()
