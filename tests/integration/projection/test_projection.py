"""Projection runner: exactly-once effect across redelivery, replay, restart and kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.runs import RunCompleted, RunRequested, RunStarted
from libs.db import create_pool
from libs.eventlog import EventLog
from libs.projection import ProjectionRunner, projection_position
from libs.testing import infra
from libs.testing.eventually import eventually
from services.scheduler.projection import HistoryProjector

pytestmark = pytest.mark.integration


class Named(HistoryProjector):
    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]


async def write_runs(log: EventLog, count: int) -> list[str]:
    run_ids = [uuid.uuid4().hex for _ in range(count)]
    for i, run_id in enumerate(run_ids):
        await log.append(
            subjects.run_commands(run_id),
            [RunRequested(workflow_id=f"wf-{i % 3}", inputs={"i": i})],
        )
        await log.append(
            subjects.run_decisions(run_id, "none"),
            [
                RunStarted(workflow_id=f"wf-{i % 3}", started_at_ms=1_700_000_000_000 + i),
                RunCompleted(status="success" if i % 4 else "error", outputs={"n": i}),
            ],
        )
    return run_ids


async def rows(url: str) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(url)
    try:
        found = await conn.fetch(
            "SELECT run_id, workflow_id, status, inputs::text, outputs::text, started_at "
            "FROM runs ORDER BY run_id"
        )
        return [dict(r) for r in found]
    finally:
        await conn.close()


async def run_until_caught_up(nc: NATS, url: str, name: str, log: EventLog) -> None:
    pool = await create_pool(url)
    runner = ProjectionRunner(nc, pool, Named(name), event_log=log, batch=32, idle_wait=0.1)
    task = asyncio.create_task(runner.run())
    last = await log.last_sequence("heym.run.>")
    try:
        await eventually(lambda: runner.position >= last, timeout=30, message="projector lag")
    finally:
        runner.stop()
        await task
        await pool.close()


async def test_projection_is_idempotent_across_restart_and_reset(
    nc: NATS, event_log: EventLog, database_url: str
) -> None:
    run_ids = await write_runs(event_log, 20)
    name = f"test-{uuid.uuid4().hex[:8]}"
    await run_until_caught_up(nc, database_url, name, event_log)
    first = await rows(database_url)
    ours = [r for r in first if r["run_id"] in run_ids]
    assert len(ours) == 20
    assert {r["status"] for r in ours} == {"success", "error"}

    # a restarted projector resumes where it stopped: nothing new, nothing changes
    await run_until_caught_up(nc, database_url, name, event_log)
    assert await rows(database_url) == first

    # Postgres is the authority: rewind the stored position (as a restore from an older
    # backup would) and the runner replays from there; the replayed events change nothing.
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("UPDATE projection_positions SET position = 0 WHERE name = $1", name)
    finally:
        await conn.close()
    await run_until_caught_up(nc, database_url, name, event_log)
    assert await rows(database_url) == first


async def test_malformed_message_is_set_aside_not_fatal(
    nc: NATS, event_log: EventLog, database_url: str
) -> None:
    run_id = uuid.uuid4().hex
    await nc.jetstream().publish(subjects.run_commands(run_id), b"{not json")
    good = await write_runs(event_log, 1)
    name = f"test-{uuid.uuid4().hex[:8]}"
    await run_until_caught_up(nc, database_url, name, event_log)
    projected = {r["run_id"] for r in await rows(database_url)}
    assert set(good) <= projected
    assert run_id not in projected
    conn = await asyncpg.connect(database_url)
    try:
        rejects = await conn.fetch("SELECT subject, error FROM projection_rejects")
    finally:
        await conn.close()
    assert subjects.run_commands(run_id) in [r["subject"] for r in rejects]


async def test_projector_killed_mid_batch_gives_the_same_rows(
    nats_url: str, nc: NATS, event_log: EventLog, pg_admin_url: str, pg_template: str
) -> None:
    await write_runs(event_log, 150)  # 300 messages, batches of 16
    async with (
        infra.fresh_database(pg_admin_url, pg_template) as crashed,
        infra.fresh_database(pg_admin_url, pg_template) as clean,
    ):
        name = f"crash-{uuid.uuid4().hex[:8]}"
        last = await event_log.last_sequence("heym.run.>")
        argv = [sys.executable, "-m", "tests.integration.projection.crashable_projector"]
        proc = await asyncio.create_subprocess_exec(*argv, nats_url, crashed, name)

        async def position() -> int:
            conn = await asyncpg.connect(crashed)
            try:
                return await projection_position(conn, name)
            finally:
                await conn.close()

        # kill -9 once it has committed some batches but not all
        await eventually(position, timeout=30, interval=0.005, message="projector progress")
        os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
        killed_at = await position()
        assert 0 < killed_at < last, "the kill should land mid-projection"

        proc = await asyncio.create_subprocess_exec(*argv, nats_url, crashed, name)
        try:
            await eventually(
                lambda: _reached(position, last), timeout=60, message="restarted projector"
            )
        finally:
            proc.send_signal(signal.SIGTERM)
            await proc.wait()

        await run_until_caught_up(nc, clean, f"clean-{uuid.uuid4().hex[:8]}", event_log)
        crashed_rows = await rows(crashed)
        assert crashed_rows == await rows(clean)
        assert len(crashed_rows) >= 150


async def _reached(position: Any, last: int) -> bool:
    return bool(await position() >= last)


async def test_a_delivery_lost_on_the_way_is_applied_not_skipped(
    nc: NATS,
    event_log: EventLog,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A push delivery lost between server and client (a NATS node dying under the consumer)
    leaves a gap in the consumer's delivery sequence. Applying what came after it would move the
    position past the lost message and its redelivery would be skipped: the runner rebuilds
    from its position instead, and every run's row is there."""
    from libs.projection import runner as runner_module

    run_ids = await write_runs(event_log, 12)
    replay = await event_log.replay(run_ids[5])
    lost_seq = replay[-1].sequence  # the 6th run's RunStarted + RunCompleted message
    original = runner_module._Feed.on_msg
    dropped: list[int] = []

    async def lossy(self: Any, msg: Any) -> None:
        status = (msg.headers or {}).get("Status")
        delivery = bool(msg.data) or status != "100"
        if delivery and msg.metadata.sequence.stream == lost_seq and not dropped:
            dropped.append(lost_seq)
            return  # lost on the way
        await original(self, msg)

    monkeypatch.setattr(runner_module._Feed, "on_msg", lossy)
    name = f"test-{uuid.uuid4().hex[:8]}"
    await run_until_caught_up(nc, database_url, name, event_log)
    assert dropped == [lost_seq]
    conn = await asyncpg.connect(database_url)
    try:
        status = await conn.fetchval("SELECT status FROM runs WHERE run_id = $1", run_ids[5])
    finally:
        await conn.close()
    assert status in ("success", "error"), status  # not left "running"


async def test_a_consumer_gone_silent_is_rebuilt(
    nc: NATS, event_log: EventLog, database_url: str
) -> None:
    """A push consumer that says nothing, not even its heartbeat (gone with a NATS node, or
    stuck on a flow-control answer lost on the way), would leave the read model behind for ever:
    the runner rebuilds it from its position."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    pool = await create_pool(database_url)
    runner = ProjectionRunner(
        nc, pool, Named(name), event_log=event_log, idle_wait=0.1, silent_s=2.0
    )
    task = asyncio.create_task(runner.run())
    try:
        first = await write_runs(event_log, 2)
        last = await event_log.last_sequence("heym.run.>")
        await eventually(lambda: runner.position >= last, timeout=30, message="projector lag")
        await nc.jetstream().delete_consumer(subjects.RUN_STREAM, name)  # gone under it
        later = await write_runs(event_log, 2)
        last = await event_log.last_sequence("heym.run.>")
        await eventually(lambda: runner.position >= last, timeout=30, message="not rebuilt")
    finally:
        runner.stop()
        await task
        await pool.close()
    assert {*first, *later} <= {r["run_id"] for r in await rows(database_url)}
