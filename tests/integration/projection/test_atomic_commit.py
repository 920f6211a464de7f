"""A projector's rows and its stream position commit in one transaction, proven with a
projector that is not idempotent: killed with SIGKILL mid-projection and restarted, it must
count every event exactly once (a row written twice or a batch skipped would show)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid

import asyncpg
import pytest

from contracts import subjects
from contracts.runs import RunStarted
from libs.eventlog import EventLog
from libs.projection import projection_position
from libs.testing.eventually import eventually
from tests.integration.projection.counting_projector import TABLE

pytestmark = pytest.mark.integration

ARGV = [sys.executable, "-m", "tests.integration.projection.counting_projector"]


async def test_killed_counting_projector_counts_every_event_once(
    nats_url: str, event_log: EventLog, database_url: str
) -> None:
    for i in range(300):
        await event_log.append(
            subjects.run_decisions(uuid.uuid4().hex, "none"),
            [RunStarted(workflow_id="w", started_at_ms=i)],
        )
    last = await event_log.last_sequence(subjects.ALL_RUN_EVENTS)
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(TABLE)
    finally:
        await conn.close()
    name = f"count-{uuid.uuid4().hex[:8]}"

    async def state() -> tuple[int, int]:
        c = await asyncpg.connect(database_url)
        try:
            counted = await c.fetchval("SELECT events FROM projection_counts WHERE name = $1", name)
            return await projection_position(c, name), int(counted or 0)
        finally:
            await c.close()

    proc = await asyncio.create_subprocess_exec(*ARGV, nats_url, database_url, name)
    await eventually(lambda: _started(state), timeout=30, interval=0.005)
    os.kill(proc.pid, signal.SIGKILL)
    await proc.wait()
    position, _ = await state()
    assert 0 < position < last, "the kill should land mid-projection"

    proc = await asyncio.create_subprocess_exec(*ARGV, nats_url, database_url, name)
    try:
        await eventually(lambda: _done(state, last), timeout=60, message="restarted projector")
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.wait()
    position, counted = await state()
    # Every message of the stream up to `last` is one event here: counted exactly once.
    events = await event_log.read(subjects.ALL_RUN_EVENTS)
    assert counted == len([e for e in events if e.sequence <= position])


async def _started(state: object) -> bool:
    position, _ = await state()  # type: ignore[operator]
    return bool(position > 0)


async def _done(state: object, last: int) -> bool:
    position, _ = await state()  # type: ignore[operator]
    return bool(position >= last)


FAIL_ONCE = """
CREATE TABLE IF NOT EXISTS fail_once (armed boolean NOT NULL);
INSERT INTO fail_once VALUES (true);
CREATE OR REPLACE FUNCTION fail_position_once() RETURNS trigger AS $$
BEGIN
    IF NEW.position > 0 AND (SELECT armed FROM fail_once LIMIT 1) THEN
        UPDATE fail_once SET armed = false;
        RAISE EXCEPTION 'the position write fails once';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER fail_position BEFORE UPDATE ON projection_positions
    FOR EACH ROW EXECUTE FUNCTION fail_position_once();
"""


async def test_a_failed_position_write_takes_the_batch_rows_with_it(
    nats_url: str, event_log: EventLog, database_url: str
) -> None:
    """Deterministic: the position update of one batch fails (a trigger raises once). Were the
    rows committed apart from the position, that batch would be counted twice on the retry."""
    for i in range(100):
        await event_log.append(
            subjects.run_decisions(uuid.uuid4().hex, "none"),
            [RunStarted(workflow_id="w", started_at_ms=i)],
        )
    last = await event_log.last_sequence(subjects.ALL_RUN_EVENTS)
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(TABLE)
        # the fail_once table is armed only now: the trigger's exception also rolls back
        # its own `armed = false`, so disarm it in a table the trigger's failure cannot undo
        await conn.execute(FAIL_ONCE.replace("UPDATE fail_once SET armed = false;", ""))
    finally:
        await conn.close()
    name = f"count-{uuid.uuid4().hex[:8]}"

    async def state() -> tuple[int, int]:
        c = await asyncpg.connect(database_url)
        try:
            counted = await c.fetchval("SELECT events FROM projection_counts WHERE name = $1", name)
            return await projection_position(c, name), int(counted or 0)
        finally:
            await c.close()

    async def disarm_after_first_failure() -> None:
        # the runner logs the failed batch and rebuilds; let it fail once, then disarm
        c = await asyncpg.connect(database_url)
        try:
            await c.execute("UPDATE fail_once SET armed = false")
        finally:
            await c.close()

    proc = await asyncio.create_subprocess_exec(
        *ARGV, nats_url, database_url, name, stderr=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stderr is not None
        line = b""
        while b"failed a batch" not in line:
            line = await asyncio.wait_for(proc.stderr.readline(), 30)
            assert line, "the projector never hit the failing position write"
        await disarm_after_first_failure()
        await eventually(lambda: _done(state, last), timeout=60, message="projector")
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.communicate()
    position, counted = await state()
    events = await event_log.read(subjects.ALL_RUN_EVENTS)
    assert counted == len([e for e in events if e.sequence <= position])
