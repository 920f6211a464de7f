"""The projection runner: a durable pull consumer feeding a projector, one transaction per batch.

Exactly-once effect comes from Postgres, not from the consumer: each batch's rows and the
stream sequence it reached are committed together, and a message at or below the stored
position is skipped. So a redelivery (crash after commit, before ack) changes nothing, and a
restart resumes from the stored position. Postgres is also the authority on where to start:
when the stored position is behind the consumer's ack floor (a restored or fresh database),
the consumer is recreated from the stored position.

One runner per projector name is active at a time (a Postgres advisory lock); others stand by.
Ordering: `max_ack_pending` is the batch size, so a failed batch is nak'ed and redelivered
before anything newer is handed out.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Sequence
from typing import Any, Protocol

import asyncpg
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts.base import Envelope
from contracts.catalog import BatchDecodeError
from contracts.subjects import RUN_STREAM
from libs.db.types import Conn
from libs.eventlog import EventLog

log = logging.getLogger(__name__)


class Projector(Protocol):
    """Folds events into rows. `apply` runs inside the batch's transaction on `conn`."""

    name: str
    filter_subjects: Sequence[str]

    async def apply(self, conn: Conn, envelope: Envelope) -> None: ...


async def projection_position(conn: Conn, name: str) -> int:
    value = await conn.fetchval("SELECT position FROM projection_positions WHERE name = $1", name)
    return int(value or 0)


def _lock_key(name: str) -> int:
    return int.from_bytes(
        hashlib.sha256(f"projector:{name}".encode()).digest()[:8], "big", signed=True
    )


class ProjectionRunner:
    def __init__(
        self,
        nc: NATS,
        pool: asyncpg.Pool[Any],
        projector: Projector,
        *,
        event_log: EventLog | None = None,
        batch: int = 256,
        idle_wait: float = 0.5,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._pool = pool
        self._projector = projector
        self._log = event_log or EventLog(nc)
        self._batch = batch
        self._idle_wait = idle_wait
        self._stopping = asyncio.Event()
        self.position = 0
        self.applied_messages = 0

    @property
    def name(self) -> str:
        return self._projector.name

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        """Run until `stop()`; holds the projector's advisory lock on a dedicated connection."""
        async with self._pool.acquire() as lock_conn:
            while not self._stopping.is_set():
                if await lock_conn.fetchval(
                    "SELECT pg_try_advisory_lock($1)", _lock_key(self.name)
                ):
                    break
                log.info("projector %s is active elsewhere; standing by", self.name)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), 2.0)
            if self._stopping.is_set():
                return
            try:
                await self._consume()
            finally:
                with contextlib.suppress(Exception):
                    await lock_conn.execute("SELECT pg_advisory_unlock($1)", _lock_key(self.name))

    async def _ensure_consumer(self, position: int) -> None:
        name = self.name
        try:
            info = await self._js.consumer_info(RUN_STREAM, name)
        except nats.js.errors.NotFoundError:
            info = None
        if (
            info is not None
            and info.ack_floor is not None
            and position < (info.ack_floor.stream_seq or 0)
        ):
            log.warning(
                "projector %s: stored position %d is behind the consumer's ack floor %d; "
                "recreating the consumer from the stored position",
                name,
                position,
                info.ack_floor.stream_seq,
            )
            await self._js.delete_consumer(RUN_STREAM, name)
            info = None
        if info is None:
            await self._js.add_consumer(
                RUN_STREAM,
                ConsumerConfig(
                    durable_name=name,
                    filter_subjects=list(self._projector.filter_subjects),
                    ack_policy=AckPolicy.EXPLICIT,
                    deliver_policy=DeliverPolicy.BY_START_SEQUENCE
                    if position
                    else DeliverPolicy.ALL,
                    opt_start_seq=position + 1 if position else None,
                    max_ack_pending=self._batch,
                    ack_wait=60.0,
                ),
            )

    async def _consume(self) -> None:
        async with self._pool.acquire() as conn:
            self.position = await projection_position(conn, self.name)
        await self._ensure_consumer(self.position)
        sub = await self._js.pull_subscribe_bind(durable=self.name, stream=RUN_STREAM)
        try:
            while not self._stopping.is_set():
                try:
                    msgs = await sub.fetch(self._batch, timeout=self._idle_wait)
                except (nats.errors.TimeoutError, TimeoutError):
                    continue
                try:
                    await self._apply_batch(msgs)
                except Exception:
                    log.exception("projector %s failed a batch; it will be redelivered", self.name)
                    for m in msgs:
                        with contextlib.suppress(Exception):
                            await m.nak(delay=1.0)
                    continue
                for m in msgs:
                    await m.ack()
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _apply_batch(self, msgs: list[Msg]) -> None:
        async with self._pool.acquire() as conn, conn.transaction():
            position = int(
                await conn.fetchval(
                    """INSERT INTO projection_positions (name) VALUES ($1)
                       ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
                       RETURNING position""",
                    self.name,
                )
            )
            reached = position
            for msg in msgs:
                seq = msg.metadata.sequence.stream
                if seq <= reached:
                    continue  # applied before (redelivery or replay): changes nothing
                try:
                    envelopes = self._log.envelopes(msg)
                except BatchDecodeError as exc:
                    log.error(
                        "projector %s rejects message %d on %s: %s",
                        self.name,
                        seq,
                        msg.subject,
                        exc,
                    )
                    await conn.execute(
                        """INSERT INTO projection_rejects
                               (projector, sequence, subject, error, body)
                           VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING""",
                        self.name,
                        seq,
                        msg.subject,
                        str(exc),
                        msg.data[:65536],
                    )
                    envelopes = []
                for env in envelopes:
                    await self._projector.apply(conn, env)
                reached = seq
            if reached != position:
                await conn.execute(
                    """UPDATE projection_positions SET position = $2, updated_at = now()
                       WHERE name = $1""",
                    self.name,
                    reached,
                )
        self.position = reached
        self.applied_messages += len(msgs)
