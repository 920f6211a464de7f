"""Run-partitioned consumers: each run's events go to one replica at a time, in order.

The events reach a derived feed stream with a partition token (`libs/eventlog/feeds.py`); each
partition has one durable pull consumer with a `pinned_client` priority group, so NATS delivers
it to one puller at a time. Every replica knows the live replicas (`Membership`) and pulls only
the partitions rendezvous hashing gives it:

- **Rebalance.** When a replica joins, the owners of the partitions that move to it stop pulling
  them, wait until the messages they hold are acknowledged (at most the ack wait), then unpin
  them (`CONSUMER.UNPIN`): the newcomer's waiting pull gets the pin at once. A run is never
  worked on by two replicas in a handover.
- **Failover.** When a replica disappears (heartbeats stop, or it says it leaves), the new owner
  pulls and unpins: new messages flow at once; the messages the dead replica held come back
  after the consumer's ack wait. If the view is wrong for a moment, the pin still gives the
  partition to one puller, and optimistic concurrency stays the safety net.
- **Kept alive.** Messages handed to the handler and not yet acknowledged get `in_progress`
  every third of the ack wait, so only a dead replica's work is redelivered.
- **A stalled feed is restarted.** The replica owning partition 0 checks every 2 s that the
  feed still sources the run stream (`source_stalled`); if not, it makes the feed's leader
  step down, and the new leader sources again from where the feed stopped. nats-server
  notices a stalled source itself only every 10 s, and after the run stream's leader was
  killed a feed could stay stalled for over 30 s (runs waited all that time).
- **Caches are dropped on a handover.** A replica that gets a partition's pin (again) calls
  `on_acquired(partition)` before handing over its first message: whatever it cached about
  that partition's runs may be stale, since another replica may have moved them on meanwhile
  (`forget_partition`). Otherwise a run cached while its agent drafted, moved to a replica
  that paused and resumed it and was then killed, came back to its first replica, which
  folded the next delivered event onto its old view and decided on it (a wrong output, not
  even a conflict: the expected sequence it appended with was the delivered event's).

nats-py has no priority-group support, so pulls are raw requests
(`$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>` with `group` and the `Nats-Pin-Id` as `id`).
The handler gets the event's own subject and run-stream sequence, as from the run stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, MutableMapping
from typing import Protocol, TypeVar

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from contracts.base import Envelope
from contracts.catalog import BatchDecodeError
from libs.eventlog import EventLog, EventLogError
from libs.eventlog.feeds import (
    H_PIN,
    PRIORITY_GROUP,
    FeedSpec,
    partition_of,
    partition_of_key,
    provision_feed,
    purge_acknowledged,
    restart_sourcing,
    source_sequence,
    source_stalled,
    source_subject,
    unpin,
)
from libs.service.membership import Membership, owner
from libs.service.work import (
    Handler,
    Poisoned,
    give_up,
    redelivery_delay,
    server_max_deliver,
)

log = logging.getLogger(__name__)

_NS = 1_000_000_000
# The feed watch: how often, how long a source may be silent, and the least time between two
# restarts of one feed.
FEED_CHECK_S = 2.0
FEED_SILENT_S = 3.0
FEED_RESTART_EVERY_S = 10.0


class CachedActor(Protocol):
    """An actor holding a run's folded state between deliveries."""

    stale: bool

    @property
    def busy(self) -> bool: ...


A = TypeVar("A", bound=CachedActor)


def forget_partition(
    actors: MutableMapping[str, A],
    partition: int,
    partitions: int,
    key_of: Callable[[str], str],
) -> int:
    """Drop the cached state of every actor whose key (`key_of(name)`: the run id) falls in
    `partition`: an idle one is removed, a busy one reloads before its next batch. Returns how
    many were dropped."""
    dropped = 0
    for name, actor in list(actors.items()):
        if partition_of_key(key_of(name), partitions) != partition:
            continue
        dropped += 1
        if actor.busy:
            actor.stale = True
        else:
            del actors[name]
    return dropped


class _Partition:
    """One partition's pull state in this replica."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.pin: str | None = None
        self.left = 0  # messages the open pull request may still bring
        self.ended = asyncio.Event()
        self.held: dict[str, Msg] = {}  # by reply subject (one per delivery)
        self.owned = False
        self.pulled_at = 0.0  # when the last pull request was sent (loop time)
        self.refused = False  # the last pull ended with an error status (e.g. 503): pause


class PartitionedConsumer:
    def __init__(
        self,
        *,
        service: str,
        purpose: str,
        subject: str,
        handle: Handler,
        membership: Membership,
        partitions: int = 16,
        replicas: int = 1,
        max_deliver: int = 5,
        ack_wait_s: float = 10.0,
        max_ack_pending: int = 10_000,
        pin_ttl_s: float = 5.0,
        pull_expires_s: float = 2.0,
        batch: int = 256,
        on_poison: Poisoned | None = None,
    ) -> None:
        self.durable = f"{service}-{purpose}"
        self.spec = FeedSpec(self.durable, subject, partitions)
        self._handle = handle
        self._members = membership
        self._replicas = replicas
        self._max_deliver = max_deliver
        self._ack_wait = ack_wait_s
        self._max_ack_pending = max_ack_pending
        self._pin_ttl = pin_ttl_s
        self._expires = pull_expires_s
        self._batch = batch
        self._on_poison = on_poison
        self.backoff_s = 1.0
        self._parts = [_Partition(p) for p in range(partitions)]
        self._log: EventLog | None = None
        self._nc: NATS | None = None
        self._inbox = ""
        self._sub: Subscription | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._running = False
        # Partitions whose owner vanished from the view: unpinned at once by their new owner.
        self._orphaned: set[int] = set()
        self.on_held_changed: Callable[[list[int]], None] | None = None
        # Called with a partition's index when this replica gets its pin (again).
        self.on_acquired: Callable[[int], None] | None = None
        self.feed_restarts = 0

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self, event_log: EventLog) -> None:
        self._log = event_log
        self._nc = nc = event_log.nc
        await provision_feed(
            nc,
            self.spec,
            replicas=self._replicas,
            ack_wait_s=self._ack_wait,
            max_deliver=server_max_deliver(self._max_deliver),
            max_ack_pending=self._max_ack_pending,
            pin_ttl_s=self._pin_ttl,
        )
        self._inbox = nc.new_inbox()
        self._sub = await nc.subscribe(
            f"{self._inbox}.*", cb=self._on_msg, pending_msgs_limit=-1, pending_bytes_limit=-1
        )
        self._running = True
        self._members.on_change(self._view_changed)
        await self._members.start(nc)
        self._tasks = [
            asyncio.create_task(self._pull_loop(part), name=f"{self.durable}-p{part.index}")
            for part in self._parts
        ]
        self._tasks.append(asyncio.create_task(self._keep_alive(), name=f"{self.durable}-alive"))
        self._tasks.append(asyncio.create_task(self._watch_feed(), name=f"{self.durable}-watch"))

    async def stop(self, grace: float = 10.0) -> None:
        """Stop pulling, let the held work finish (up to `grace`), then hand every pin over.

        Stop the membership first (the context does), so the others start pulling at once."""
        if not self._running:
            return
        self._running = False
        for part in self._parts:
            part.ended.set()
        await self._drained(self._parts, grace)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        nc = self._nc
        if nc is not None and nc.is_connected:
            for part in self._parts:
                if part.pin is not None:
                    with contextlib.suppress(Exception):
                        await unpin(nc, self.spec, part.index)
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None

    def wake(self) -> None:
        """Every partition's loop asks again now (its open pull request may be gone)."""
        for part in self._parts:
            part.ended.set()

    @property
    def held_partitions(self) -> list[int]:
        return [p.index for p in self._parts if p.pin is not None]

    # -- ownership -----------------------------------------------------------------------

    def _key(self, part: int) -> str:
        return f"{self.durable}/{part}"

    def _owns(self, part: int) -> bool:
        return owner(self._members.members, self._key(part)) == self._members.instance

    def _view_changed(self, before: list[str], after: list[str]) -> None:
        gone = set(before) - set(after)
        if gone:
            for part in self._parts:
                if owner(before, self._key(part.index)) in gone:
                    self._orphaned.add(part.index)
        for part in self._parts:
            part.ended.set()  # a loop waiting on its pull re-checks ownership now

    # -- pulling -------------------------------------------------------------------------

    async def _pull_loop(self, part: _Partition) -> None:
        assert self._nc is not None
        while self._running:
            if not self._owns(part.index):
                if part.owned or part.pin is not None:
                    part.owned = False
                    await self._release(part)
                part.ended.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(part.ended.wait(), 1.0)
                continue
            part.owned = True
            try:
                await self._pull(part)
                if part.refused:
                    # JetStream cannot serve the pull now (a cluster electing a leader answers
                    # 503 at once): pause instead of asking again in a tight loop.
                    part.refused = False
                    await asyncio.sleep(0.5)
            except Exception as exc:
                if self._running:
                    log.warning("%s p%d: pull failed: %r", self.durable, part.index, exc)
                    await asyncio.sleep(0.5)

    async def _pull(self, part: _Partition) -> None:
        nc = self._nc
        assert nc is not None
        part.ended.clear()
        part.left = self._batch
        body: dict[str, object] = {
            "batch": self._batch,
            "expires": int(self._expires * _NS),
            "group": PRIORITY_GROUP,
        }
        if part.pin is not None:
            body["id"] = part.pin
        part.pulled_at = asyncio.get_running_loop().time()
        await nc.publish(
            f"$JS.API.CONSUMER.MSG.NEXT.{self.spec.stream}.{self.spec.consumer(part.index)}",
            json.dumps(body).encode(),
            reply=f"{self._inbox}.{part.index}",
        )
        if part.index in self._orphaned and part.pin is None:
            # The previous owner is gone: take the pin now instead of after its TTL.
            self._orphaned.discard(part.index)
            with contextlib.suppress(Exception):
                await unpin(nc, self.spec, part.index)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(part.ended.wait(), self._expires + 2.0)

    async def _release(self, part: _Partition) -> None:
        """Hand a partition over: stop pulling (done), let the open pull request expire (it
        could still bring messages, or take the pin again after an unpin), finish what is
        held, unpin."""
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, part.pulled_at + self._expires + 0.05 - loop.time()))
        await self._drained([part], self._ack_wait)
        if part.pin is not None and self._nc is not None:
            with contextlib.suppress(Exception):
                await unpin(self._nc, self.spec, part.index)
            log.info("%s released partition %d", self.durable, part.index)
        part.pin = None
        self._held_changed()

    async def _drained(self, parts: list[_Partition], timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            for part in parts:
                part.held = {k: m for k, m in part.held.items() if not m.is_acked}
            if not any(part.held for part in parts):
                return
            await asyncio.sleep(0.02)

    def _held_changed(self) -> None:
        if self.on_held_changed is not None:
            self.on_held_changed(self.held_partitions)

    # -- delivery ------------------------------------------------------------------------

    async def _on_msg(self, msg: Msg) -> None:
        headers = msg.headers or {}
        if not msg.data and "Status" in headers:
            self._status(msg, headers)
            return
        try:
            part = self._parts[partition_of(msg.subject)]
        except (ValueError, IndexError):
            with contextlib.suppress(Exception):
                await msg.term()
            return
        pin = headers.get(H_PIN)
        if pin is not None and pin != part.pin:
            part.pin = pin
            if self.on_acquired is not None:
                try:
                    self.on_acquired(part.index)
                except Exception:
                    log.exception("%s p%d: on_acquired failed", self.durable, part.index)
            self._held_changed()
        part.left -= 1
        if part.left <= 0:
            part.ended.set()
        part.held[msg.reply] = msg
        await self._process(msg, headers)

    def _status(self, msg: Msg, headers: dict[str, str]) -> None:
        try:
            part = self._parts[int(msg.subject.rsplit(".", 1)[1])]
        except (ValueError, IndexError):
            return
        status = headers.get("Status", "")
        if status == "100":
            return  # heartbeat
        if status == "423":  # Nats-Pin-Id mismatch: another replica holds the partition
            if part.pin is not None:
                part.pin = None
                self._held_changed()
        elif status not in ("404", "408", "409"):
            part.refused = True
            log.warning(
                "%s p%d: pull ended with %s %s",
                self.durable,
                part.index,
                status,
                headers.get("Description", ""),
            )
        part.ended.set()

    async def _process(self, msg: Msg, headers: dict[str, str]) -> None:
        assert self._log is not None
        subject = msg.subject
        try:
            subject = source_subject(msg.subject)
            envelopes = self._log.envelopes_at(
                subject=subject,
                sequence=source_sequence(headers),
                recorded_at=msg.metadata.timestamp,
                headers=headers,
                body=msg.data,
            )
        except (BatchDecodeError, EventLogError) as exc:
            log.error("%s rejects a malformed message on %s: %s", self.durable, msg.subject, exc)
            why = f"malformed message: {exc}"
            await give_up([msg], lambda: self._poisoned(None, subject, why), self.durable)
            return
        delivered = msg.metadata.num_delivered
        if delivered > self._max_deliver:
            # Past its deliveries (its failure could not be recorded before, or the service
            # died handling it): record the failure without handling it again.
            why = f"gave up after {self._max_deliver} deliveries"
            await give_up([msg], lambda: self._poisoned(envelopes, subject, why), self.durable)
            return
        try:
            await self._handle(envelopes, msg)
        except Exception as exc:
            log.exception("%s failed on %s (delivery %d)", self.durable, subject, delivered)
            if delivered >= self._max_deliver:
                why = f"{type(exc).__name__}: {exc}"
                await give_up([msg], lambda: self._poisoned(envelopes, subject, why), self.durable)
            else:
                with contextlib.suppress(Exception):
                    await msg.nak(delay=redelivery_delay(delivered, self.backoff_s))

    async def _poisoned(self, envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        """Record the failure (raises if it cannot be recorded: `give_up` keeps the message)."""
        if self._on_poison is not None:
            await self._on_poison(envelopes, subject, why)

    async def _keep_alive(self) -> None:
        """Held messages are in progress, not lost: only a dead replica's get redelivered.
        Each partition this replica holds is purged up to its ack floor now and then."""
        ticks = 0
        while True:
            await asyncio.sleep(self._ack_wait / 3)
            ticks += 1
            for part in self._parts:
                part.held = {k: m for k, m in part.held.items() if not m.is_acked}
                for held in part.held.values():
                    with contextlib.suppress(Exception):
                        await held.in_progress()
            if ticks % 3 == 0 and self._nc is not None:
                for part in self._parts:
                    if part.pin is not None:
                        try:
                            await purge_acknowledged(self._nc, self.spec, part.index)
                        except Exception as exc:
                            log.debug("%s p%d: purge failed: %r", self.durable, part.index, exc)

    async def _watch_feed(self) -> None:
        """Restart the feed's sourcing when it has stalled (one replica watches: partition
        0's owner)."""
        last_restart = -FEED_RESTART_EVERY_S
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(FEED_CHECK_S)
            nc = self._nc
            if nc is None or not nc.is_connected or not self._owns(0):
                continue
            if loop.time() - last_restart < FEED_RESTART_EVERY_S:
                continue
            try:
                if not await source_stalled(nc, self.spec, inactive_s=FEED_SILENT_S):
                    continue
                last_restart = loop.time()
                restarted = await restart_sourcing(nc, self.spec)
            except Exception as exc:
                log.debug("%s: feed check failed: %r", self.durable, exc)
                continue
            self.feed_restarts += 1
            log.warning(
                "%s: feed %s stopped sourcing the run stream; %s",
                self.durable,
                self.spec.stream,
                "its leader stepped down to restart it" if restarted else "it has one replica",
            )
