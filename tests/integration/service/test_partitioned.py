"""Run-partitioned consumers against a real JetStream: affinity, order, rebalance, failover."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from contracts.base import Envelope
from contracts.runs import RunStarted
from libs.eventlog import EventLog
from libs.eventlog.feeds import (
    FeedSpec,
    partition_of,
    partition_of_key,
    source_sequence,
    source_subject,
)
from libs.service.membership import Membership, owner
from libs.service.partitioned import PartitionedConsumer
from libs.testing.eventually import eventually

pytestmark = pytest.mark.integration

PARTITIONS = 8


@dataclass
class Replica:
    name: str
    nc: NATS
    membership: Membership
    consumer: PartitionedConsumer
    seen: list[Envelope] = field(default_factory=list)


class Cluster:
    """Replicas of one consumer, each on its own connection (so one can die alone)."""

    def __init__(self, url: str, purpose: str, ack_wait_s: float = 3.0) -> None:
        self.url = url
        self.purpose = purpose
        self.subject = f"heym.work.*.{purpose}"
        self.ack_wait_s = ack_wait_s
        self.replicas: dict[str, Replica] = {}
        # who handled each (subject, sequence), in order of handling
        self.handled: dict[tuple[str, int], list[str]] = defaultdict(list)

    async def add(self, name: str) -> Replica:
        nc = await nats.connect(self.url)
        # Beats every second; a replica unheard of for 3 s is gone (a loop stalled by a loaded
        # machine for a second must not look like a death and move partitions back and forth).
        # A group of its own: services of other tests on this NATS server beat as "scheduler".
        membership = Membership(
            "scheduler",
            f"{name}-{self.purpose}",
            expire_s=3.0,
            subject=f"heym.svc.scheduler.members.{self.purpose}",
        )
        replica: Replica

        async def handle(envelopes: list[Envelope], msg: Msg) -> None:
            replica.seen.extend(envelopes)
            self.handled[(envelopes[0].subject, envelopes[0].sequence)].append(name)
            await msg.ack()

        consumer = PartitionedConsumer(
            service="scheduler",
            purpose=self.purpose,
            subject=self.subject,
            handle=handle,
            membership=membership,
            partitions=PARTITIONS,
            ack_wait_s=self.ack_wait_s,
            pin_ttl_s=1.5,
            pull_expires_s=0.5,
        )
        replica = Replica(name, nc, membership, consumer)
        await consumer.start(EventLog(nc))
        self.replicas[name] = replica
        return replica

    async def leave(self, name: str) -> None:
        replica = self.replicas.pop(name)
        await replica.membership.stop()
        await replica.consumer.stop(5)
        await replica.nc.close()

    async def kill(self, name: str) -> None:
        """As kill -9: no goodbye, no unpin, the connection just drops."""
        replica = self.replicas.pop(name)
        for task in [replica.membership._task, *replica.consumer._tasks]:
            if task is not None:
                task.cancel()
        with contextlib.suppress(Exception):
            await replica.nc._transport.close()  # type: ignore[union-attr]
        with contextlib.suppress(Exception):
            await replica.nc.close()

    async def close(self) -> None:
        for name in list(self.replicas):
            await self.leave(name)


def _spread_purpose() -> str:
    """A fresh consumer purpose under which rendezvous hashing gives every replica of `a, b`
    and of `a, b, c` some partitions (by chance one of two replicas owns none of 8 in 1 of
    128 draws: the tests would wait for a share that is rightly empty)."""
    while True:
        purpose = f"t{uuid.uuid4().hex[:10]}"
        keys = [f"scheduler-{purpose}/{p}" for p in range(PARTITIONS)]
        for names in (["a", "b"], ["a", "b", "c"]):
            members = [f"{n}-{purpose}" for n in names]
            if {owner(members, k) for k in keys} != set(members):
                break
        else:
            return purpose


@contextlib.asynccontextmanager
async def cluster(nats_url: str, ack_wait_s: float = 3.0) -> AsyncIterator[Cluster]:
    c = Cluster(nats_url, _spread_purpose(), ack_wait_s)
    try:
        yield c
    finally:
        await c.close()


def covering_runs(per_partition: int) -> list[str]:
    """Run ids with `per_partition` in every partition: pins are taken on delivery, so a
    partition no run hashes to would never be held (40 random ids leave one of 8 partitions
    empty in about 4 % of draws)."""
    by_part: dict[int, list[str]] = defaultdict(list)
    while min((len(by_part[p]) for p in range(PARTITIONS)), default=0) < per_partition:
        run = uuid.uuid4().hex
        part = partition_of_key(run, PARTITIONS)
        if len(by_part[part]) < per_partition:
            by_part[part].append(run)
    return [run for p in range(PARTITIONS) for run in by_part[p]]


async def publish(log: EventLog, c: Cluster, runs: list[str], per_run: int) -> list[int]:
    seqs = []
    for i in range(per_run):
        for run in runs:
            appended = await log.append(
                f"heym.work.{run}.{c.purpose}", [RunStarted(workflow_id="w", started_at_ms=i)]
            )
            seqs.append(appended.sequence)
    return seqs


def test_feed_spec_names_and_transform() -> None:
    spec = FeedSpec("scheduler-runs", "heym.run.*.>", 16)
    assert spec.stream == "HEYM_FEED_SCHEDULER_RUNS"
    assert spec.transform_dest == "p.{{partition(16,1)}}.heym.run.{{wildcard(1)}}.>"
    assert spec.consumer(3) == "scheduler-runs-p3"
    assert source_subject("p.3.heym.run.r1.cmd") == "heym.run.r1.cmd"
    assert spec.key_of("p.3.heym.run.r1.node.n1") == "r1"
    assert source_sequence({"Nats-Stream-Source": "HEYM_RUNS 42 heym.run.*.> p.x y z"}) == 42
    chat = FeedSpec("agent_runtime-chat", "heym.chat.*.cmd", 4)
    assert chat.transform_dest == "p.{{partition(4,1)}}.heym.chat.{{wildcard(1)}}.cmd"


def test_rendezvous_moves_only_the_leavers_share() -> None:
    keys = [f"k/{i}" for i in range(64)]
    three = {k: owner(["a", "b", "c"], k) for k in keys}
    two = {k: owner(["a", "b"], k) for k in keys}
    assert set(three.values()) == {"a", "b", "c"}
    # removing c moves only c's keys
    assert all(two[k] == three[k] for k in keys if three[k] != "c")


async def test_one_replica_gets_every_event_with_its_own_subject_and_sequence(
    nats_url: str, event_log: EventLog
) -> None:
    async with cluster(nats_url) as c:
        replica = await c.add("a")
        runs = [uuid.uuid4().hex for _ in range(10)]
        seqs = await publish(event_log, c, runs, 3)

        async def all_seen() -> bool:
            assert len(replica.seen) == len(seqs)
            return True

        await eventually(all_seen, timeout=10, message="every event delivered")
        assert sorted(e.sequence for e in replica.seen) == sorted(seqs)
        for run in runs:
            mine = [e for e in replica.seen if e.run_id == run]
            assert [e.sequence for e in mine] == sorted(e.sequence for e in mine)  # in order
            assert {e.subject for e in mine} == {f"heym.work.{run}.{c.purpose}"}
        # the server's partition is the one `partition_of_key` computes (tools rely on it)
        by_run = {e.run_id: e for e in replica.seen}
        assert len(by_run) == len(runs)
        spec = replica.consumer.spec
        info = await replica.nc.jetstream().stream_info(spec.stream, subjects_filter="p.>")
        assert info.state.subjects, "the feed was purged before the check"
        for subject in info.state.subjects:
            run = spec.key_of(subject)
            assert partition_of(subject) == partition_of_key(run, PARTITIONS), subject
        # acknowledged messages leave the feed (purged up to the ack floor): it does not grow
        js = replica.nc.jetstream()

        async def feed_empty() -> bool:
            info = await js.stream_info(c.replicas["a"].consumer.spec.stream)
            assert info.state.messages == 0, info.state
            return True

        await eventually(feed_empty, timeout=15, message="feed purged")


async def test_each_run_is_handled_by_one_replica(nats_url: str, event_log: EventLog) -> None:
    async with cluster(nats_url) as c:
        replicas = [await c.add(n) for n in ("a", "b", "c")]

        runs = covering_runs(8)

        async def settled() -> bool:
            await publish(event_log, c, runs, 1)  # pins are taken on delivery
            await asyncio.sleep(0.2)
            held = [set(r.consumer.held_partitions) for r in replicas]
            # every partition pinned to exactly one replica, each holding a share
            assert all(len(r.membership.members) == 3 for r in replicas)
            assert all(held), held
            assert sum(len(h) for h in held) == PARTITIONS, held
            assert set().union(*held) == set(range(PARTITIONS)), held
            return True

        await eventually(settled, timeout=20, message="partitions spread over the replicas")
        before = {k: list(v) for k, v in c.handled.items()}
        seqs = await publish(event_log, c, runs, 4)

        async def all_handled() -> bool:
            assert sum(1 for s in seqs if any(k[1] == s for k in c.handled)) == len(seqs)
            return True

        await eventually(all_handled, timeout=20, message="every event handled")
        by_run: dict[str, set[str]] = defaultdict(set)
        for (subject, seq), who in c.handled.items():
            assert len(who) == 1, (subject, seq, who)  # nothing handled twice
            if (subject, seq) not in before:
                by_run[subject.split(".")[2]].update(who)
        assert all(len(who) == 1 for who in by_run.values()), by_run  # run affinity
        assert len({w for who in by_run.values() for w in who}) == 3  # all replicas work


async def test_a_killed_replicas_partitions_move_within_the_ack_wait(
    nats_url: str, event_log: EventLog
) -> None:
    async with cluster(nats_url, ack_wait_s=3.0) as c:
        await c.add("a")
        await c.add("b")
        runs = covering_runs(5)

        async def spread() -> bool:
            await publish(event_log, c, runs, 1)  # pins are taken on delivery
            await asyncio.sleep(0.2)
            for r in c.replicas.values():
                assert r.consumer.held_partitions, r.name
            return True

        await eventually(spread, timeout=20, message="both replicas hold partitions")
        await c.kill("a")
        t = time.monotonic()
        seqs = await publish(event_log, c, runs, 1)

        async def taken_over() -> bool:
            missing = [s for s in seqs if not any(k[1] == s for k in c.handled)]
            assert not missing, f"{len(missing)} not handled yet"
            return True

        # Without the failover b never pulls a's partitions: nothing of a's share is handled.
        await eventually(taken_over, timeout=30, message="b took a's runs over")
        print(f"a's partitions moved to b in {time.monotonic() - t:.1f} s (ack wait 3 s)")

        async def b_holds_all() -> bool:
            await publish(event_log, c, runs, 1)  # pins are handed out on delivery
            await asyncio.sleep(0.2)
            assert set(c.replicas["b"].consumer.held_partitions) == set(range(PARTITIONS))
            return True

        await eventually(b_holds_all, timeout=20, message="b holds every partition")


async def test_a_replica_that_joins_gets_its_share_without_double_handling(
    nats_url: str, event_log: EventLog
) -> None:
    async with cluster(nats_url) as c:
        a = await c.add("a")
        runs = covering_runs(5)

        async def all_on_a() -> bool:
            await publish(event_log, c, runs, 1)
            await asyncio.sleep(0.1)
            assert len(a.consumer.held_partitions) == PARTITIONS
            return True

        await eventually(all_on_a, timeout=10, message="a holds everything")
        b = await c.add("b")
        seqs: list[int] = []

        async def shared() -> bool:
            seqs.extend(await publish(event_log, c, runs, 1))  # while the handover goes on
            await asyncio.sleep(0.1)
            assert b.consumer.held_partitions
            assert len(a.consumer.held_partitions) + len(b.consumer.held_partitions) == PARTITIONS
            return True

        await eventually(shared, timeout=20, message="b took its share")

        async def all_handled() -> bool:
            assert all(any(k[1] == s for k in c.handled) for s in seqs)
            return True

        await eventually(all_handled, timeout=20, message="every event handled")
        assert all(len(who) == 1 for who in c.handled.values())
