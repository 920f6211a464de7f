"""The projection runner: a durable pull consumer feeding a projector, one transaction per batch.

Exactly-once effect comes from Postgres, not from the consumer: each batch's rows and the
stream sequence it reached are committed together, and a message at or below the stored
position is skipped. So a redelivery (crash after commit, before ack) changes nothing, and a
restart resumes from the stored position. Postgres is also the authority on where to start:
the durable consumer is recreated at start from the stored position (a restored database
replays what it lacks; deliveries a crashed predecessor left unacknowledged are dropped).

One runner per projector name is active at a time (a Postgres advisory lock); others stand by.
Ordering: one push subscription delivers in stream order; after a failed batch the consumer is
rebuilt from the stored position, so nothing newer is applied before it. Likewise after a gap in
the consumer's delivery sequence (deliveries lost while a NATS node died): applying what came
after it would make the late redelivery look already applied (found by the chaos suite).
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
from libs.projection.statements import StatementBatch

log = logging.getLogger(__name__)

# SQLSTATE classes worth retrying as they are: connection, transaction rollback, resources,
# operator intervention, system errors. Anything else is about the data and will fail again.
_TRANSIENT_CLASSES = frozenset({"08", "40", "53", "57", "58"})
_REJECT_BODY_BYTES = 65536
HEARTBEAT_S = 5.0
# No message and no heartbeat for this long: the consumer is gone (or its flow is stuck).
SILENT_S = 3 * HEARTBEAT_S


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, OSError | TimeoutError | asyncpg.InterfaceError):
        return True
    if isinstance(exc, asyncpg.PostgresConnectionError):
        return True
    if isinstance(exc, asyncpg.PostgresError):
        return str(exc.sqlstate or "")[:2] in _TRANSIENT_CLASSES
    return False


class Projector(Protocol):
    """Folds events into rows.

    `project` adds the SQL for one event to the batch's statements; all of a batch's statements
    run in one transaction on `conn`, together with the position update.
    """

    name: str
    filter_subjects: Sequence[str]

    def project(self, envelope: Envelope, sql: StatementBatch) -> None: ...


async def projection_position(conn: Conn, name: str) -> int:
    value = await conn.fetchval("SELECT position FROM projection_positions WHERE name = $1", name)
    return int(value or 0)


class _Feed:
    """Messages pushed by the consumer, in delivery order, waiting to be applied."""

    def __init__(self, nc: NATS) -> None:
        self._nc = nc
        self.buffer: list[Msg] = []
        self.arrived = asyncio.Event()
        # Every delivery of the (freshly created) consumer has the next consumer sequence; a
        # jump means deliveries were lost on the way (a NATS node died, the client moved to
        # another): their redelivery would come after later messages were applied and be
        # skipped as "at or below the position", so the runner rebuilds from the position.
        self.next_delivery = 1
        # When anything (a message or a heartbeat) last came: a consumer that says nothing for
        # several heartbeats is gone or stalled, and is rebuilt.
        self.heard_at = asyncio.get_running_loop().time()

    def contiguous(self, msgs: list[Msg]) -> int:
        """How many of `msgs` (from the front) follow each other without a lost delivery."""
        for i, msg in enumerate(msgs):
            if msg.metadata.sequence.consumer != self.next_delivery:
                return i
            self.next_delivery += 1
        return len(msgs)

    async def on_msg(self, msg: Msg) -> None:
        self.heard_at = asyncio.get_running_loop().time()
        headers = msg.headers or {}
        if not msg.data and headers.get("Status") == "100":
            if msg.reply:  # flow control asks for a reply; idle heartbeats do not
                await self._nc.publish(msg.reply)
            elif stalled := headers.get("Nats-Consumer-Stalled"):
                # A flow-control request was lost (its client moved to another node while one
                # died): the server waits for the answer and says so in each heartbeat.
                await self._nc.publish(stalled)
            return
        self.buffer.append(msg)
        self.arrived.set()


class _BatchFailed(Exception):
    """A batch's transaction failed; the runner rebuilds its consumer from the stored position."""


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
        batch: int = 512,
        idle_wait: float = 0.5,
        silent_s: float = SILENT_S,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._pool = pool
        self._projector = projector
        self._log = event_log or EventLog(nc)
        self._batch = batch
        self._idle_wait = idle_wait
        self._silent_s = silent_s
        self._stopping = asyncio.Event()
        self.position = 0
        self.applied_messages = 0
        self.rejected_events = 0

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

    async def _ensure_consumer(self, position: int, deliver_subject: str) -> None:
        """(Re)create the durable consumer to start right after the stored position.

        Recreating on every (re)start is safe (only the lock holder runs) and drops deliveries
        a killed predecessor left unacknowledged, which would otherwise hold `max_ack_pending`
        and stall the projector for a whole `ack_wait`.
        """
        with contextlib.suppress(nats.js.errors.NotFoundError):
            await self._js.delete_consumer(RUN_STREAM, self.name)
        await self._js.add_consumer(
            RUN_STREAM,
            ConsumerConfig(
                durable_name=self.name,
                deliver_subject=deliver_subject,
                filter_subjects=list(self._projector.filter_subjects),
                # One ack per batch: acking the batch's last message acknowledges all before it.
                ack_policy=AckPolicy.ALL,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE if position else DeliverPolicy.ALL,
                opt_start_seq=position + 1 if position else None,
                max_ack_pending=self._batch * 8,
                ack_wait=60.0,
                flow_control=True,
                idle_heartbeat=HEARTBEAT_S,
            ),
        )

    async def _consume(self) -> None:
        """Push delivery into a buffer; each loop turn applies what has arrived (up to a batch).

        A push consumer keeps messages flowing while a batch is applied (nats-py's `fetch()`
        awaits message by message and caps throughput near 1k/s). After a failed batch the
        consumer is rebuilt from the stored position, so nothing newer is applied first.
        """
        while not self._stopping.is_set():
            async with self._pool.acquire() as conn:
                self.position = await projection_position(conn, self.name)
            feed = _Feed(self._nc)
            inbox = self._nc.new_inbox()
            sub = await self._nc.subscribe(
                inbox, cb=feed.on_msg, pending_msgs_limit=-1, pending_bytes_limit=-1
            )
            try:
                await self._ensure_consumer(self.position, inbox)
                await self._drain(feed)
            except _BatchFailed:
                await asyncio.sleep(1.0)  # then rebuild from the stored position
            finally:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()

    async def _drain(self, feed: _Feed) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping.is_set():
            if not feed.buffer:
                if loop.time() - feed.heard_at > self._silent_s:
                    log.warning(
                        "projector %s: its consumer has been silent for %.0f s; rebuilding",
                        self.name,
                        self._silent_s,
                    )
                    raise _BatchFailed
                feed.arrived.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(feed.arrived.wait(), self._idle_wait)
                continue
            msgs = feed.buffer[: self._batch]
            del feed.buffer[: len(msgs)]
            kept = feed.contiguous(msgs)
            if kept < len(msgs):
                log.warning(
                    "projector %s: deliveries lost before stream sequence %d; rebuilding from "
                    "its position",
                    self.name,
                    msgs[kept].metadata.sequence.stream,
                )
                if kept:
                    await self._apply_batch(msgs[:kept])
                    await msgs[kept - 1].ack()
                raise _BatchFailed
            try:
                await self._apply_batch(msgs)
            except Exception as exc:
                if _transient(exc):
                    log.exception(
                        "projector %s failed a batch; rebuilding from its position", self.name
                    )
                    raise _BatchFailed from exc
                log.warning(
                    "projector %s failed a batch (%s: %s); applying it event by event",
                    self.name,
                    type(exc).__name__,
                    exc,
                )
                try:
                    for msg in msgs:
                        await self._apply_alone(msg)
                except Exception as again:
                    log.exception(
                        "projector %s failed a message; rebuilding from its position", self.name
                    )
                    raise _BatchFailed from again
            await msgs[-1].ack()

    async def _apply_batch(self, msgs: list[Msg]) -> None:
        async with self._pool.acquire() as conn, conn.transaction():
            position = await self._locked_position(conn)
            reached = position
            statements = StatementBatch()
            for msg in msgs:
                seq = msg.metadata.sequence.stream
                if seq <= reached:
                    continue  # applied before (redelivery or replay): changes nothing
                for env in await self._decoded(conn, msg):
                    self._projector.project(env, statements)
                reached = seq
            await statements.run(conn)
            await self._store_position(conn, position, reached)
        self.position = reached
        self.applied_messages += len(msgs)

    async def _apply_alone(self, msg: Msg) -> None:
        """One message, each event in a savepoint with storable values; failures are parked."""
        seq = msg.metadata.sequence.stream
        async with self._pool.acquire() as conn, conn.transaction():
            position = await self._locked_position(conn)
            if seq <= position:
                return
            for index, env in enumerate(await self._decoded(conn, msg)):
                statements = StatementBatch(storable=True)
                try:
                    async with conn.transaction():  # a savepoint: a failure undoes this event
                        self._projector.project(env, statements)
                        await statements.run(conn)
                except Exception as exc:
                    if _transient(exc):
                        raise
                    await self._reject(conn, msg, f"{type(exc).__name__}: {exc}", index)
                    self.rejected_events += 1
            await self._store_position(conn, position, seq)
        self.position = seq
        self.applied_messages += 1

    async def _locked_position(self, conn: Conn) -> int:
        return int(
            await conn.fetchval(
                """INSERT INTO projection_positions (name) VALUES ($1)
                   ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
                   RETURNING position""",
                self.name,
            )
        )

    async def _store_position(self, conn: Conn, position: int, reached: int) -> None:
        if reached != position:
            await conn.execute(
                """UPDATE projection_positions SET position = $2, updated_at = now()
                   WHERE name = $1""",
                self.name,
                reached,
            )

    async def _decoded(self, conn: Conn, msg: Msg) -> list[Envelope]:
        """The message's events; a message that cannot be decoded is parked whole."""
        try:
            return self._log.envelopes(msg)
        except BatchDecodeError as exc:
            await self._reject(conn, msg, str(exc), -1)
            return []

    async def _reject(self, conn: Conn, msg: Msg, error: str, index: int) -> None:
        seq = msg.metadata.sequence.stream
        log.error(
            "projector %s parks message %d (event %d) on %s: %s",
            self.name,
            seq,
            index,
            msg.subject,
            error,
        )
        await conn.execute(
            """INSERT INTO projection_rejects
                   (projector, sequence, subject, error, body, event_index)
               VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING""",
            self.name,
            seq,
            msg.subject,
            error[:4096].replace("\x00", "\ufffd"),
            msg.data[:_REJECT_BODY_BYTES],
            index,
        )
