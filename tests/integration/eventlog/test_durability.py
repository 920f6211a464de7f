"""Acknowledged appends survive kill -9 of nats-server (file storage, sync_interval always)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import nats
import pytest

from contracts import subjects
from contracts.runs import RunStarted
from libs.embedded import EmbeddedNats
from libs.eventlog import EventLog, EventLogError, provision_run_stream

pytestmark = pytest.mark.integration


async def test_acknowledged_appends_survive_kill_9(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path / "nats")
    server.start()
    run_ids = [uuid.uuid4().hex for _ in range(8)]
    acked: list[tuple[str, int]] = []
    try:
        nc = await nats.connect(server.url, max_reconnect_attempts=0)
        await provision_run_stream(nc)
        log = EventLog(nc, publish_timeout=2.0)

        async def writer(run_id: str) -> None:
            for i in range(60):
                try:
                    await log.append(
                        subjects.node(run_id, "n1"),
                        [RunStarted(workflow_id=run_id, started_at_ms=i)],
                        expected_sequence=None,
                    )
                except EventLogError:
                    return
                acked.append((run_id, i))
                if len(acked) >= 200:
                    enough.set()

        enough = asyncio.Event()
        tasks = [asyncio.create_task(writer(r)) for r in run_ids]
        # kill while the eight writers are mid-stream
        await asyncio.wait_for(enough.wait(), 30)
        server.kill()
        await asyncio.gather(*tasks, return_exceptions=True)
        await nc.close()

        server.start()
        nc = await nats.connect(server.url)
        await provision_run_stream(nc)
        log = EventLog(nc)
        stored: set[tuple[str, int]] = set()
        for run_id in run_ids:
            for env in await log.replay(run_id):
                assert isinstance(env.event, RunStarted)
                stored.add((env.event.workflow_id, env.event.started_at_ms))
        missing = set(acked) - stored
        assert not missing, f"{len(missing)} acknowledged appends lost, e.g. {sorted(missing)[:3]}"
        assert len(acked) >= 200
        await nc.close()
    finally:
        server.stop()
