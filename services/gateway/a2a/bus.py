"""Turn ends as they are appended, for blocking `SendMessage` calls: one core subscription per
gateway on every conversation's turn subject, fanned out to the calls waiting on a context.

At most once (core NATS), so a waiter confirms from the log and re-reads it now and then
anyway; it only saves the wait. A waiter registers before its message is appended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from nats.aio.msg import Msg

from contracts import subjects
from contracts.catalog import BatchDecodeError
from libs.eventlog import EventLog

log = logging.getLogger(__name__)


class TurnBus:
    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Queue[Any]]] = {}
        self._sub: Any = None
        self._log: EventLog | None = None

    async def start(self, event_log: EventLog) -> None:
        self._log = event_log
        self._sub = await event_log.nc.subscribe("heym.chat.*.turn", cb=self._on_msg)

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None

    async def _on_msg(self, msg: Msg) -> None:
        try:
            cid = subjects.conversation_of(msg.subject)
        except subjects.SubjectError:
            return
        waiters = self._waiters.get(cid)
        if not waiters or self._log is None:
            return
        try:
            events = self._log.codec.decode(msg.data)
        except BatchDecodeError:
            return
        for queue in waiters:
            for ev in events:
                queue.put_nowait(ev)

    @contextlib.contextmanager
    def waiting(self, context_id: str) -> Iterator[asyncio.Queue[Any]]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._waiters.setdefault(context_id, set()).add(queue)
        try:
            yield queue
        finally:
            found = self._waiters.get(context_id)
            if found is not None:
                found.discard(queue)
                if not found:
                    del self._waiters[context_id]
