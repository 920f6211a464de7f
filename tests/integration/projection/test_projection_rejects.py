"""Issue #7 item 1: one bad event never stalls a projection.

What Postgres cannot store (NUL in text and jsonb, lone surrogates) is stored sanitised; an
event that still fails is parked in `projection_rejects` with its error, counted, and the
projector goes on with the next one.
"""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.runs import RunCompleted, RunRequested, RunStarted
from libs.db import create_pool
from libs.eventlog import EventLog
from libs.projection import ProjectionRunner
from libs.testing.eventually import eventually
from services.scheduler.projection import HistoryProjector

pytestmark = pytest.mark.integration


class Named(HistoryProjector):
    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]


async def caught_up(nc: NATS, url: str, log: EventLog) -> ProjectionRunner:
    pool = await create_pool(url)
    name = f"test-{uuid.uuid4().hex[:8]}"
    runner = ProjectionRunner(nc, pool, Named(name), event_log=log, batch=32, idle_wait=0.1)
    task = asyncio.create_task(runner.run())
    last = await log.last_sequence("heym.run.>")
    try:
        await eventually(lambda: runner.position >= last, timeout=60, message="projector stalled")
    finally:
        runner.stop()
        await task
        await pool.close()
    return runner


async def a_run(
    log: EventLog, *, name: str = "ok", error: str | None = None, **done: object
) -> str:
    run_id = uuid.uuid4().hex
    await log.append(
        subjects.run_commands(run_id),
        [RunRequested(workflow_id="wf", workflow_name=name, inputs={"body": {"text": name}})],
    )
    await log.append(
        subjects.run_decisions(run_id, "none"),
        [
            RunStarted(workflow_id="wf", started_at_ms=1_700_000_000_000),
            RunCompleted(status="error" if error else "success", error=error, **done),  # type: ignore[arg-type]
        ],
    )
    return run_id


async def test_nul_characters_are_stored_sanitised_and_history_goes_on(
    nc: NATS, event_log: EventLog, database_url: str
) -> None:
    poisoned = await a_run(
        event_log, name="a\x00b", error="bad \x00 error", outputs={"k\x00": ["x\u0000y"]}
    )
    after = await a_run(event_log)
    await caught_up(nc, database_url, event_log)
    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow(
            "SELECT workflow_name, inputs, outputs::text, error, status FROM runs "
            "WHERE run_id = $1",
            poisoned,
        )
        later = await conn.fetchval("SELECT status FROM runs WHERE run_id = $1", after)
    finally:
        await conn.close()
    assert row is not None
    assert row["workflow_name"] == "a\ufffdb"
    assert row["error"] == "bad \ufffd error"
    assert "\\u0000" not in row["outputs"]
    assert "x\ufffdy" in row["outputs"]
    assert row["status"] == "error"
    assert later == "success"


async def test_an_event_that_still_fails_is_parked_and_counted(
    nc: NATS, event_log: EventLog, database_url: str
) -> None:
    # http_status is an integer column: no sanitising makes 10**12 fit.
    parked = await a_run(event_log, http_status=10**12)
    after = await a_run(event_log)
    runner = await caught_up(nc, database_url, event_log)
    conn = await asyncpg.connect(database_url)
    try:
        status = await conn.fetchval("SELECT status FROM runs WHERE run_id = $1", parked)
        started = await conn.fetchval("SELECT started_at FROM runs WHERE run_id = $1", parked)
        later = await conn.fetchval("SELECT status FROM runs WHERE run_id = $1", after)
        rejects = await conn.fetch(
            "SELECT subject, error, event_index FROM projection_rejects "
            "WHERE projector = $1 AND subject LIKE $2",
            runner.name,
            f"%{parked}%",
        )
    finally:
        await conn.close()
    assert later == "success"
    # The message's other event (RunStarted) still applied; only RunCompleted was parked.
    assert started is not None
    assert status == "running"
    assert [(r["subject"], r["event_index"]) for r in rejects] == [
        (subjects.run_decisions(parked, "none"), 1)
    ]
    assert "out of int32 range" in rejects[0]["error"]
    assert runner.rejected_events >= 1
