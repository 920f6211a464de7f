"""Session fixtures: a real nats-server (JetStream) and a real Postgres, per-test isolation."""

from __future__ import annotations

import hashlib
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from libs.eventlog import EventLog
from libs.testing import infra


def pytest_configure(config: pytest.Config) -> None:
    """One temp root per checkout: pytest's shared `/tmp/pytest-of-<user>` lets a session in
    another checkout remove this one's directories (and its NATS and Postgres with them)."""
    if config.option.basetemp is None:
        checkout = hashlib.sha1(str(config.rootpath).encode()).hexdigest()[:10]
        config.option.basetemp = str(Path(tempfile.gettempdir()) / f"heym-pytest-{checkout}")


@pytest.fixture(scope="session")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with infra.nats_server(tmp_path_factory.mktemp("nats")) as url:
        yield url


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NATS]:
    async with infra.connected(nats_url) as conn:
        yield conn


@pytest.fixture
def event_log(nc: NATS) -> EventLog:
    return EventLog(nc)


@pytest.fixture
def run_id() -> str:
    return uuid.uuid4().hex


@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with infra.postgres_server(tmp_path_factory.mktemp("pg")) as url:
        yield url


@pytest.fixture(scope="session")
async def pg_template(pg_admin_url: str) -> str:
    return await infra.create_template(pg_admin_url)


@pytest.fixture
async def database_url(pg_admin_url: str, pg_template: str) -> AsyncIterator[str]:
    async with infra.fresh_database(pg_admin_url, pg_template) as url:
        yield url


@pytest.fixture
def short_tmp(tmp_path: Path) -> Path:
    return tmp_path
