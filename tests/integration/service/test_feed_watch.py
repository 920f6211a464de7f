"""A feed that stops sourcing the run stream (its source lost with a killed stream leader) is
restarted by the replica watching it, instead of waiting for nats-server's own 10 s check (a
new feed leader sometimes never set its source up for over 30 s)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import nats
import pytest
from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from contracts.runs import RunStarted
from libs.embedded import EmbeddedNatsCluster
from libs.eventlog import EventLog, provision_run_stream
from libs.service.membership import Membership
from libs.service.partitioned import PartitionedConsumer
from libs.testing.eventually import eventually

pytestmark = pytest.mark.integration


async def _append(log: EventLog, i: int) -> None:
    while True:  # the cluster may be electing a leader
        try:
            await log.append(
                subjects.run_commands(uuid.uuid4().hex),
                [RunStarted(workflow_id="w", started_at_ms=i)],
            )
            return
        except Exception:
            await asyncio.sleep(0.2)


async def test_a_feed_that_stopped_sourcing_is_restarted(tmp_path: Path) -> None:
    cluster = EmbeddedNatsCluster(tmp_path / "nats", 3)
    await asyncio.to_thread(cluster.start)
    nc = await nats.connect(servers=cluster.urls, max_reconnect_attempts=-1)
    seen: list[int] = []

    async def handle(envelopes: list[Envelope], msg: Msg) -> None:
        seen.extend(e.event.started_at_ms for e in envelopes)  # type: ignore[union-attr]
        await msg.ack()

    purpose = f"t{uuid.uuid4().hex[:8]}"
    membership = Membership("scheduler", f"only-{purpose}")
    consumer = PartitionedConsumer(
        service="scheduler",
        purpose=purpose,
        subject=subjects.RUN_KEYED,
        handle=handle,
        membership=membership,
        partitions=2,
        replicas=3,
        ack_wait_s=5,
        pull_expires_s=0.5,
    )
    try:
        await provision_run_stream(nc, replicas=3)
        log = EventLog(nc)
        await consumer.start(log)
        for i in range(5):
            await _append(log, i)
        await eventually(lambda: len(seen) == 5, timeout=30, message="the first events")
        info = await nc.jetstream().stream_info(subjects.RUN_STREAM)
        assert info.cluster is not None
        assert info.cluster.leader
        leader = cluster.node_named(info.cluster.leader)
        await asyncio.to_thread(leader.kill)
        began = time.monotonic()
        await asyncio.sleep(1.0)
        await asyncio.to_thread(leader.start)
        for i in range(5, 10):
            await _append(log, i)

        def all_seen() -> bool:
            assert sorted(seen) == list(range(10)), seen
            return True

        # Without the watch the events come after nats-server's own check (10 s or more):
        # the restart counted here is what brought them.
        await eventually(all_seen, timeout=60, message="the events after the leader's kill")
        print(f"sourcing back {time.monotonic() - began:.1f} s after the kill")
        assert consumer.feed_restarts >= 1
    finally:
        await membership.stop()
        await consumer.stop(2)
        await nc.close()
        await asyncio.to_thread(cluster.stop)
