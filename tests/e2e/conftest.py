"""The running system shared by the end-to-end tests of one session."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from libs.testing import infra
from tests.e2e import artifacts
from tests.e2e.system import System


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if artifacts.SAVED:
        terminalreporter.section("test artifacts")
        for path in artifacts.SAVED:
            terminalreporter.write_line(str(path))


@pytest.fixture(scope="session")
async def system(
    nats_url: str, pg_admin_url: str, pg_template: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[System]:
    async with infra.fresh_database(pg_admin_url, pg_template) as db:
        sys_ = System(
            nats_url,
            db,
            tmp_path_factory.mktemp("logs"),
            HEYM_EXECUTE_TIMEOUT_S="60",
            HEYM_MODEL_TIMEOUT_S="3",
            HEYM_MODEL_RETRIES="2",
            HEYM_REDELIVERY_BACKOFF_S="0.2",
            HEYM_SWEEP_INTERVAL_S="1",
            HEYM_SWEEP_QUIET_S="3",
        )
        await sys_.start()
        try:
            yield sys_
        finally:
            await sys_.stop()
