"""Work retried through an outage keeps its deliveries: a handler failing because NATS or
Postgres is away is tried again in place, so the message is not dropped as poison."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import nats.js.errors
import pytest
from nats.aio.msg import Msg

from contracts.base import Envelope
from contracts.runs import RunStarted
from libs.eventlog import ConcurrencyConflict, EventLog, EventLogError
from libs.service.outage import is_outage
from libs.service.work import WorkConsumer
from libs.testing.eventually import eventually

pytestmark = pytest.mark.integration


def test_what_counts_as_an_outage() -> None:
    assert is_outage(EventLogError("append to heym.run.x.cmd timed out after 10.0s"))
    assert is_outage(asyncpg.exceptions.CannotConnectNowError("the database is starting up"))
    assert is_outage(ConnectionRefusedError())
    assert is_outage(nats.js.errors.NoStreamResponseError())  # no stream leader just now
    assert not is_outage(ConcurrencyConflict("heym.run.x.cmd", 1, 2))
    assert not is_outage(ValueError("a bad message"))
    assert not is_outage(TimeoutError())  # a handler's own deadline is not an outage


async def test_a_handler_failing_through_an_outage_is_not_dropped_as_poison(
    event_log: EventLog,
) -> None:
    purpose = f"t{uuid.uuid4().hex[:10]}"
    attempts: list[int] = []
    poisoned: list[str] = []

    async def handle(envelopes: list[Envelope], msg: Msg) -> None:
        attempts.append(msg.metadata.num_delivered)
        if len(attempts) <= 4:  # more failures than the message has deliveries
            raise EventLogError("append timed out after 10.0s")

    async def on_poison(envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        poisoned.append(why)

    consumer = WorkConsumer(
        service="scheduler",
        purpose=purpose,
        subject=f"heym.work.*.{purpose}",
        handle=handle,
        max_deliver=2,
        on_poison=on_poison,
    )
    consumer.backoff_s = 0.05
    await consumer.start(event_log)
    try:
        await event_log.append(
            f"heym.work.{uuid.uuid4().hex}.{purpose}",
            [RunStarted(workflow_id="w", started_at_ms=0)],
        )

        async def handled() -> bool:
            assert len(attempts) == 5, attempts
            return True

        await eventually(handled, timeout=30, message="handled once the outage ended")
        await asyncio.sleep(0.2)
        assert attempts == [1] * 5  # one delivery, retried in place
        assert not poisoned
    finally:
        await consumer.stop()
