"""Which replicas of a service are alive, and which of them owns each partition.

Every replica publishes a heartbeat on `heym.svc.<service>.members` (core NATS, no stream) and
listens to the others'; a replica not heard from for `expire_s` is gone, and a replica that
stops says so at once. Ownership is rendezvous hashing over the live members: every replica
computes the same owner from the same view, and a member that joins or leaves moves only its
own share. This is not leader election: NATS's pinned consumers decide who actually receives a
partition (`libs/service/partitioned.py`); the view only says who should be pulling.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from contracts import subjects

log = logging.getLogger(__name__)


class Beat(msgspec.Struct, frozen=True, kw_only=True):
    instance: str
    leaving: bool = False


def owner(members: list[str], key: str) -> str | None:
    """The member that owns `key` (rendezvous hashing: highest hash of member and key)."""
    best: tuple[bytes, str] | None = None
    for member in members:
        score = hashlib.blake2b(f"{member}|{key}".encode(), digest_size=8).digest()
        if best is None or score > best[0]:
            best = (score, member)
    return best[1] if best else None


class Membership:
    def __init__(
        self,
        service: str,
        instance: str,
        *,
        every_s: float = 1.0,
        expire_s: float = 3.5,
        subject: str | None = None,
    ) -> None:
        self._nc: NATS | None = None
        # `subject`: a group of its own (tests sharing one NATS server with running services)
        self._subject = subject or subjects.members(service)
        self.instance = instance
        self._every = every_s
        self._expire = expire_s
        self._seen: dict[str, float] = {instance: time.monotonic()}
        self._view: list[str] = [instance]
        self._listeners: list[Callable[[list[str], list[str]], None]] = []
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def members(self) -> list[str]:
        return self._view

    def on_change(self, listener: Callable[[list[str], list[str]], None]) -> None:
        """`listener(before, after)` runs (on the loop) whenever the live view changes."""
        self._listeners.append(listener)

    async def start(self, nc: NATS) -> None:
        """Join (idempotent: every partitioned consumer of the service calls it)."""
        if self._sub is not None:
            return
        self._nc = nc
        self._sub = await nc.subscribe(self._subject, cb=self._on_beat)
        await self._beat()
        self._task = asyncio.create_task(self._run(), name="membership")

    async def stop(self) -> None:
        """Leave: the others take this replica's partitions over at once."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        with contextlib.suppress(Exception):
            await self._beat(leaving=True)
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None

    async def _beat(self, *, leaving: bool = False) -> None:
        if self._nc is None:
            return
        body = msgspec.json.encode(Beat(instance=self.instance, leaving=leaving))
        await self._nc.publish(self._subject, body)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._every)
            with contextlib.suppress(Exception):
                await self._beat()
            self._seen[self.instance] = time.monotonic()
            self._refresh()

    async def _on_beat(self, msg: Msg) -> None:
        try:
            beat = msgspec.json.decode(msg.data, type=Beat)
        except msgspec.DecodeError:
            return
        if beat.instance == self.instance:
            return
        known = beat.instance in self._seen
        if beat.leaving:
            self._seen.pop(beat.instance, None)
        else:
            self._seen[beat.instance] = time.monotonic()
        if beat.leaving or not known:
            self._refresh()

    def _refresh(self) -> None:
        now = time.monotonic()
        for member, at in list(self._seen.items()):
            if member != self.instance and now - at > self._expire:
                del self._seen[member]
        view = sorted(self._seen)
        if view == self._view:
            return
        before, self._view = self._view, view
        log.info("%s sees %d replica(s): %s", self.instance, len(view), ", ".join(view))
        for listener in self._listeners:
            try:
                listener(before, view)
            except Exception:
                log.exception("membership listener failed")
