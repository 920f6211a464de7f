"""An append in flight while its stream has no leader goes through once the stream is back,
within the append's budget, and is stored once (asked again with the same message id)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import nats
import pytest

from contracts import subjects
from contracts.runs import RunStarted
from libs.embedded import EmbeddedNatsCluster, wait_jetstream
from libs.eventlog import EventLog, provision_run_stream
from libs.testing.eventually import eventually

pytestmark = pytest.mark.integration


async def test_an_append_waiting_for_a_stream_leader_lands_once_quorum_is_back(
    tmp_path: Path,
) -> None:
    cluster = EmbeddedNatsCluster(tmp_path / "nats", 3)
    await asyncio.to_thread(cluster.start)
    nc = await nats.connect(servers=[cluster.nodes[0].url], max_reconnect_attempts=-1)
    try:
        await provision_run_stream(nc, replicas=3)
        log = EventLog(nc, publish_timeout=30.0)
        run_id = uuid.uuid4().hex
        await log.append(
            subjects.run_commands(run_id), [RunStarted(workflow_id="w", started_at_ms=0)]
        )
        # The stream's leader and one more node gone: the R3 stream has no leader and no
        # quorum, so the node left takes the publish and nothing answers it.
        info = await nc.jetstream().stream_info(subjects.RUN_STREAM)
        assert info.cluster is not None
        assert info.cluster.leader
        leader = cluster.node_named(info.cluster.leader)
        gone = [leader, next(n for n in cluster.nodes if n is not leader)]
        left = next(n for n in cluster.nodes if n not in gone)
        await nc.close()
        nc = await nats.connect(servers=[left.url], max_reconnect_attempts=-1)
        log = EventLog(nc, publish_timeout=30.0)
        for node in gone:
            await asyncio.to_thread(node.kill)
        append = asyncio.create_task(
            log.append(
                subjects.run_commands(run_id),
                [RunStarted(workflow_id="w", started_at_ms=1)],
                expected_sequence=1,
            )
        )
        await asyncio.sleep(4.0)
        assert not append.done()
        for node in gone:
            await asyncio.to_thread(node.start)
        # A single publish waiting for its answer never gets one (no leader took it): the
        # append failed after its whole budget. Asked again, it lands.
        appended = await append
        assert appended.sequence > 0

        async def stored_once() -> bool:
            try:
                events = await log.read(subjects.run_commands(run_id), timeout=5)
            except Exception as exc:  # a read may time out while the nodes catch up
                raise AssertionError(repr(exc)) from exc
            assert [e.event.started_at_ms for e in events] == [0, 1]  # type: ignore[union-attr]
            return True

        await eventually(stored_once, timeout=30, message="the append stored once")
    finally:
        await nc.close()
        await asyncio.to_thread(cluster.stop)


async def test_the_run_stream_is_created_once_a_new_cluster_has_its_nodes(
    tmp_path: Path,
) -> None:
    """A cluster that has elected its meta leader but not yet gathered three nodes answers
    "no suitable peers for placement" to an R3 stream: provisioning asks again."""
    cluster = EmbeddedNatsCluster(tmp_path / "nats", 3)
    first, second, third = cluster.nodes
    for node in (first, second):
        await asyncio.to_thread(node.start)
    nc = await nats.connect(servers=[first.url], max_reconnect_attempts=-1)
    try:
        await wait_jetstream([first.url, second.url], 30)
        provisioning = asyncio.create_task(provision_run_stream(nc, replicas=3))
        await asyncio.sleep(2.0)
        assert not provisioning.done()  # before: BadRequestError at once
        await asyncio.to_thread(third.start)
        await asyncio.wait_for(provisioning, 30)
        info = await nc.jetstream().stream_info(subjects.RUN_STREAM)
        assert info.config.num_replicas == 3
    finally:
        await nc.close()
        await asyncio.to_thread(cluster.stop)
