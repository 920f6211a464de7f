"""Systems with tracing on, each on a NATS server of its own (durable consumers are named per
service, so two systems on one server would share their work), exporting to a real OTLP/HTTP
receiver in the test."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from libs.testing import infra
from libs.testing.otlp_receiver import OtlpReceiver
from tests.e2e.system import System

# Sent to the collector; must never be shown by the status API.
HEADER_SECRET = "tok-e2e-5b1f0c9a7d"


def otel_env(endpoint: str, **extra: str) -> dict[str, str]:
    return {
        "HEYM_OTEL_ENABLED": "true",
        "HEYM_OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "HEYM_OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {HEADER_SECRET},x-team=e2e",
        "HEYM_OTEL_EXPORT_DELAY_MS": "100",
        **extra,
    }


@contextlib.asynccontextmanager
async def traced_system(
    directory: Path,
    admin_url: str,
    template: str,
    env: dict[str, str],
    names: tuple[str, ...] | None = None,
) -> AsyncIterator[System]:
    with infra.nats_server(directory / "nats") as nats_url:
        async with infra.fresh_database(admin_url, template) as db:
            system = System(
                nats_url,
                db,
                directory / "logs",
                HEYM_EXECUTE_TIMEOUT_S="60",
                HEYM_MODEL_TIMEOUT_S="3",
                HEYM_MODEL_RETRIES="1",
                HEYM_REDELIVERY_BACKOFF_S="0.2",
                **env,
            )
            (directory / "logs").mkdir(parents=True, exist_ok=True)
            try:
                if names is None:
                    await system.start()
                else:
                    await system.start(names)
                yield system
            finally:
                await system.stop()


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as r:
        yield r


@pytest.fixture(scope="module")
async def traced(
    receiver: OtlpReceiver,
    pg_admin_url: str,
    pg_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[System]:
    """All five services, tracing at ratio 1.0 with node I/O captured and metrics on."""
    env = otel_env(
        receiver.url,
        HEYM_OTEL_CAPTURE_NODE_IO="true",
        HEYM_OTEL_METRICS_ENABLED="true",
        HEYM_OTEL_METRICS_INTERVAL_S="0.5",
    )
    directory = tmp_path_factory.mktemp("traced")
    async with traced_system(directory, pg_admin_url, pg_template, env) as system:
        yield system
