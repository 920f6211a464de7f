"""Work retried through an outage keeps its deliveries: a handler failing because NATS or
Postgres is away is tried again in place, so the message is not dropped as poison; and a
message given up is terminated only once its failure is recorded."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import nats.js.errors
import pytest
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig

from contracts.base import Envelope
from contracts.runs import RunStarted
from libs.eventlog import ConcurrencyConflict, EventLog, EventLogError
from libs.service import work
from libs.service.membership import Membership
from libs.service.outage import is_outage
from libs.service.partitioned import PartitionedConsumer
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


class _Flaky:
    """A handler that always fails, and a failure record that fails `record_failures` times
    (a bug or an outage past its budget at that moment)."""

    def __init__(self, record_failures: int) -> None:
        self.handled: list[int] = []
        self.records: list[int] = []
        self.record_failures = record_failures

    async def handle(self, envelopes: list[Envelope], msg: Msg) -> None:
        self.handled.append(msg.metadata.num_delivered)
        raise ValueError("this message always fails")

    async def on_poison(self, envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        self.records.append(len(self.records) + 1)
        if len(self.records) <= self.record_failures:
            raise RuntimeError("the failure cannot be recorded just now")


async def _given_up_once_recorded(flaky: _Flaky, event_log: EventLog, subject: str) -> None:
    await event_log.append(subject, [RunStarted(workflow_id="w", started_at_ms=0)])

    async def recorded() -> bool:
        assert len(flaky.records) == flaky.record_failures + 1, flaky.records
        return True

    # Before the fix the message was terminated after the first failed record: never recorded.
    await eventually(recorded, timeout=30, message="the give-up recorded on a later delivery")
    await asyncio.sleep(1.0)
    assert len(flaky.records) == flaky.record_failures + 1  # terminated once recorded
    # past its deliveries the handler is not run again: only the record is retried
    assert flaky.handled == [1, 2], flaky.handled


async def test_a_give_up_that_cannot_be_recorded_keeps_the_message(
    event_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(work, "GIVE_UP_RETRY_S", 0.2)
    purpose = f"t{uuid.uuid4().hex[:10]}"
    flaky = _Flaky(record_failures=2)
    consumer = WorkConsumer(
        service="scheduler",
        purpose=purpose,
        subject=f"heym.work.*.{purpose}",
        handle=flaky.handle,
        max_deliver=2,
        on_poison=flaky.on_poison,
    )
    consumer.backoff_s = 0.05
    await consumer.start(event_log)
    try:
        await _given_up_once_recorded(flaky, event_log, f"heym.work.{uuid.uuid4().hex}.{purpose}")
    finally:
        await consumer.stop()


async def test_a_partitioned_give_up_that_cannot_be_recorded_keeps_the_message(
    event_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(work, "GIVE_UP_RETRY_S", 0.2)
    purpose = f"t{uuid.uuid4().hex[:10]}"
    flaky = _Flaky(record_failures=2)
    membership = Membership(
        "scheduler", f"only-{purpose}", subject=f"heym.svc.scheduler.members.{purpose}"
    )
    consumer = PartitionedConsumer(
        service="scheduler",
        purpose=purpose,
        subject=f"heym.work.*.{purpose}",
        handle=flaky.handle,
        membership=membership,
        partitions=2,
        max_deliver=2,
        on_poison=flaky.on_poison,
        pull_expires_s=0.5,
    )
    consumer.backoff_s = 0.05
    await consumer.start(event_log)
    try:
        await _given_up_once_recorded(flaky, event_log, f"heym.work.{uuid.uuid4().hex}.{purpose}")
    finally:
        await membership.stop()
        await consumer.stop(2)


async def test_an_existing_consumer_gets_the_delivery_headroom(event_log: EventLog) -> None:
    """A work consumer created before the headroom (max_deliver 5) is brought up to date when
    a service starts, so an upgraded deployment keeps unrecorded give-ups too."""
    purpose = f"t{uuid.uuid4().hex[:10]}"
    js = event_log.nc.jetstream()
    durable = f"scheduler-{purpose}"
    await js.add_consumer(
        "HEYM_RUNS",
        ConsumerConfig(
            durable_name=durable,
            deliver_subject=event_log.nc.new_inbox(),
            deliver_group=durable,
            filter_subject=f"heym.work.*.{purpose}",
            ack_policy=AckPolicy.EXPLICIT,
            max_deliver=5,
        ),
    )
    flaky = _Flaky(record_failures=0)
    consumer = WorkConsumer(
        service="scheduler",
        purpose=purpose,
        subject=f"heym.work.*.{purpose}",
        handle=flaky.handle,
        max_deliver=5,
    )
    await consumer.start(event_log)
    try:
        info = await js.consumer_info("HEYM_RUNS", durable)
        assert info.config.max_deliver == work.server_max_deliver(5) == 15
    finally:
        await consumer.stop()
