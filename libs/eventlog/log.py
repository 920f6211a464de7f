"""The JetStream-backed event log: append with optimistic concurrency, replay, and live tails.

Writes: one `append` stores one event batch as one message, so the events of one decision
cost one fsync. `expected_sequence` is checked by the server against the last sequence of the
aggregate subject (`Nats-Expected-Last-Subject-Sequence`), or, with `scope`, against the last
sequence of every subject matching `scope` (e.g. all of a run's subjects). `message_id` goes
into `Nats-Msg-Id`, so a retried append inside the duplicate window is stored once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy, PubAck

from contracts.base import Envelope, Event
from contracts.catalog import BatchDecodeError, EventCodec
from contracts.subjects import RUN_STREAM, run_all
from libs.eventlog.errors import (
    ConcurrencyConflict,
    EventLogError,
    PayloadTooLarge,
    ReplicaLag,
)
from libs.eventlog.reader import DirectMessage, read_bounded, read_direct
from libs.telemetry import record_metric

log = logging.getLogger(__name__)

H_MSG_ID = "Nats-Msg-Id"
H_EXPECTED = "Nats-Expected-Last-Subject-Sequence"
H_EXPECTED_SCOPE = "Nats-Expected-Last-Subject-Sequence-Subject"
H_CORRELATION = "Heym-Correlation-Id"
H_CAUSATION = "Heym-Causation-Id"
H_TRACEPARENT = "traceparent"
H_SCHEMA = "Heym-Schema"
SCHEMA_VERSION = "1"

# One publish attempt of an append: asked again (same message id) if no stream answers by then.
ATTEMPT_S = 2.0
_RETRY_PAUSE_S = 0.2
_WRONG_LAST = 10071
_DUPLICATE_IN_PROCESS = 10158  # "duplicate message id is in process"
_LAST_SEQ = re.compile(r"wrong last sequence: (\d+)")


class Appended(msgspec.Struct, frozen=True, kw_only=True):
    """Where an append landed; `duplicate` means the message id was already stored."""

    subject: str
    sequence: int
    message_id: str
    duplicate: bool


def new_message_id() -> str:
    return uuid.uuid4().hex


class EventLog:
    """Appends and reads event batches on the run stream; one per process, shared by handlers."""

    def __init__(
        self,
        nc: NATS,
        *,
        codec: EventCodec | None = None,
        stream: str = RUN_STREAM,
        max_message_bytes: int = 8 * 1024 * 1024,
        publish_timeout: float = 10.0,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream(timeout=publish_timeout)
        self._codec = codec or EventCodec()
        self._stream = stream
        self._max = max_message_bytes
        self._timeout = publish_timeout

    @property
    def codec(self) -> EventCodec:
        return self._codec

    @property
    def nc(self) -> NATS:
        return self._nc

    async def append(
        self,
        subject: str,
        events: Sequence[Event],
        *,
        expected_sequence: int | None = None,
        scope: str | None = None,
        message_id: str | None = None,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        traceparent: str | None = None,
    ) -> Appended:
        if not events:
            raise ValueError("append needs at least one event")
        body = self._codec.encode(events)
        if len(body) > self._max:
            raise PayloadTooLarge(subject, len(body), self._max)
        mid = message_id or new_message_id()
        headers = {H_MSG_ID: mid, H_SCHEMA: SCHEMA_VERSION}
        if expected_sequence is not None:
            headers[H_EXPECTED] = str(expected_sequence)
            if scope is not None:
                headers[H_EXPECTED_SCOPE] = scope
        if correlation_id:
            headers[H_CORRELATION] = correlation_id
        if causation_id:
            headers[H_CAUSATION] = causation_id
        if traceparent:
            headers[H_TRACEPARENT] = traceparent
        began = time.perf_counter()
        try:
            ack = await self._publish(subject, body, headers)
        except nats.js.errors.APIError as exc:
            if exc.err_code == _WRONG_LAST:
                # The server checks the expected sequence before the duplicate window, so a
                # writer retrying its own landed append would see a conflict with itself.
                landed = await self._landed(subject, mid, after=expected_sequence or 0)
                if landed is not None:
                    return Appended(
                        subject=subject, sequence=landed, message_id=mid, duplicate=True
                    )
                found = _LAST_SEQ.search(exc.description or "")
                raise ConcurrencyConflict(
                    subject, expected_sequence or 0, int(found.group(1)) if found else None
                ) from None
            raise EventLogError(f"append to {subject} refused: {exc.description}") from exc
        except nats.errors.NoRespondersError as exc:
            raise EventLogError(
                f"no stream stores {subject} (is the run stream provisioned?)"
            ) from exc
        except nats.errors.TimeoutError as exc:
            raise EventLogError(f"append to {subject} timed out after {self._timeout}s") from exc
        except nats.js.errors.NoStreamResponseError as exc:
            # An empty reply: the stream has no leader for the moment (a cluster electing one).
            raise EventLogError(f"no stream answered the append to {subject}") from exc
        record_metric("append", (time.perf_counter() - began) * 1000)
        return Appended(
            subject=subject, sequence=ack.seq, message_id=mid, duplicate=bool(ack.duplicate)
        )

    async def _publish(self, subject: str, body: bytes, headers: dict[str, str]) -> PubAck:
        """Publish, asked again with the same message id (deduplicated by the server) while no
        stream answers within `ATTEMPT_S`, until `publish_timeout`: an append in flight when
        its nats-server dies, or while a cluster elects a stream leader, goes through within
        about a second of the stream being back instead of after the whole timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        while True:
            left = deadline - loop.time()
            try:
                return await self._js.publish(
                    subject, body, headers=headers, timeout=max(0.05, min(ATTEMPT_S, left))
                )
            except (nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError):
                if deadline - loop.time() < _RETRY_PAUSE_S:
                    raise
            except nats.js.errors.APIError as exc:
                # The leader still holds the first try, waiting for its quorum: ask again
                # until it is stored (then the answer is a duplicate acknowledgement).
                in_process = exc.err_code == _DUPLICATE_IN_PROCESS
                if not in_process or deadline - loop.time() < _RETRY_PAUSE_S:
                    raise
            await asyncio.sleep(_RETRY_PAUSE_S)

    async def _landed(self, subject: str, message_id: str, *, after: int) -> int | None:
        """The sequence of the message with `message_id` on `subject` after `after`, if any."""

        def ids(msg: Msg) -> list[tuple[int, str | None]]:
            return [(msg.metadata.sequence.stream, (msg.headers or {}).get(H_MSG_ID))]

        found = await read_bounded(self._nc, self._stream, subject, after=after, convert=ids)
        return next((seq for seq, mid in found if mid == message_id), None)

    def envelopes(self, msg: Msg) -> list[Envelope]:
        """Decode one stream message into its envelopes (one per event in the batch)."""
        meta = msg.metadata
        return self.envelopes_at(
            subject=msg.subject,
            sequence=meta.sequence.stream,
            recorded_at=meta.timestamp,
            headers=msg.headers or {},
            body=msg.data,
        )

    def envelopes_at(
        self,
        *,
        subject: str,
        sequence: int,
        recorded_at: datetime,
        headers: dict[str, str],
        body: bytes,
    ) -> list[Envelope]:
        mid = headers.get(H_MSG_ID) or f"seq-{sequence}"
        parts = subject.split(".")
        run_id = parts[2] if len(parts) > 3 and parts[1] in ("run", "agent", "work") else ""
        return [
            Envelope(
                event_id=f"{mid}:{i}",
                run_id=run_id,
                subject=subject,
                sequence=sequence,
                index=i,
                recorded_at=recorded_at,
                correlation_id=headers.get(H_CORRELATION),
                causation_id=headers.get(H_CAUSATION),
                traceparent=headers.get(H_TRACEPARENT),
                event=event,
            )
            for i, event in enumerate(self._codec.decode(body))
        ]

    def _readable(self, msg: Msg) -> list[Envelope]:
        """Envelopes of a message, or none for a message that is no event batch.

        Heym's writers only append event batches; anything else on a run subject was put there
        by someone else and is not part of the run, so a replay skips it (loudly) instead of
        making the run unreadable forever.
        """
        try:
            return self.envelopes(msg)
        except BatchDecodeError as exc:
            log.warning("replay skips message %s on %s: %s", _seq(msg), msg.subject, exc)
            return []

    async def read(
        self, filter_subject: str, *, after: int = 0, through: int = 0, timeout: float = 30.0
    ) -> list[Envelope]:
        """Every event on `filter_subject` after stream sequence `after`, in stream order.

        On a NATS cluster a read is served by the replica its consumer is placed on, which may
        lag behind the stream's leader (a restarted node catching up lags for seconds). A
        reader that must not decide on a stale view passes `through`: a stream sequence known
        to be on `filter_subject` (the message that triggered the read, the last sequence a
        conflict reported). A read that does not reach it is asked again until `timeout`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        pause = 0.02
        while True:
            reached = 0

            def convert(msg: Msg) -> list[Envelope]:
                nonlocal reached
                with contextlib.suppress(Exception):
                    reached = max(reached, msg.metadata.sequence.stream)
                return self._readable(msg)

            out = await read_bounded(
                self._nc,
                self._stream,
                filter_subject,
                after=after,
                convert=convert,
                timeout=max(1.0, deadline - loop.time()),
            )
            if through <= after or reached >= through:
                return out
            if loop.time() + pause > deadline:
                raise ReplicaLag(
                    f"read of {filter_subject} stopped at sequence {reached}, before {through}: "
                    "the replica serving it lags"
                )
            log.info(
                "read of %s behind sequence %d (a lagging replica): again", filter_subject, through
            )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)

    async def read_recent(
        self, filter_subject: str, *, after: int = 0, timeout: float = 30.0
    ) -> list[Envelope]:
        """`read`, by batched direct gets instead of a consumer: cheaper for a few events (a
        conversation's last ones). A lagging replica may answer without the newest message,
        so use it only where that is a delay, never a wrong decision."""
        return await read_direct(
            self._nc,
            self._stream,
            filter_subject,
            after=after,
            convert=self._direct_readable,
            timeout=timeout,
        )

    def _direct_readable(self, msg: DirectMessage) -> list[Envelope]:
        try:
            return self.envelopes_at(
                subject=msg.subject,
                sequence=msg.sequence,
                recorded_at=_direct_time(msg.timestamp),
                headers=msg.headers,
                body=msg.data,
            )
        except BatchDecodeError as exc:
            log.warning("read skips message %s on %s: %s", msg.sequence, msg.subject, exc)
            return []

    async def replay(self, run_id: str, *, after: int = 0, through: int = 0) -> list[Envelope]:
        """Every event of one run (all its aggregates), in stream order (`through`: see
        `read`)."""
        return await self.read(run_all(run_id), after=after, through=through)

    async def last_sequence(self, subject: str) -> int:
        """The stream sequence of the last message on `subject` (wildcards allowed); 0 if none."""
        try:
            msg = await self._js.get_last_msg(self._stream, subject, direct=True)
        except nats.js.errors.NotFoundError:
            return 0
        return msg.seq or 0

    def watch(self, filter_subject: str) -> Watch:
        return Watch(self, filter_subject)

    @contextlib.asynccontextmanager
    async def tail(
        self, filter_subject: str, *, after: int = 0
    ) -> AsyncIterator[asyncio.Queue[Envelope]]:
        """A live, ordered feed of events on `filter_subject` after sequence `after`.

        Backed by an ordered consumer (gap detection and automatic reset are the client's), so
        nothing is skipped; the queue is filled until the context exits.
        """
        queue: asyncio.Queue[Envelope] = asyncio.Queue()

        async def on_msg(msg: Msg) -> None:
            for env in self._readable(msg):
                queue.put_nowait(env)

        config = ConsumerConfig(opt_start_seq=after + 1) if after > 0 else None
        sub = await self._js.subscribe(
            filter_subject,
            cb=on_msg,
            ordered_consumer=True,
            stream=self._stream,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE if after > 0 else DeliverPolicy.ALL,
            config=config,
        )
        try:
            yield queue
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


class Watch:
    """A core-NATS subscription on a run's subjects: events as they are appended, at no cost
    of a consumer. Delivery is at most once (a reconnect can drop messages), so watchers
    confirm what matters from the log (`replay`) instead of trusting the watch alone."""

    def __init__(self, log: EventLog, filter_subject: str) -> None:
        self._log = log
        self._filter = filter_subject
        self.queue: asyncio.Queue[Envelope] = asyncio.Queue()
        self._sub: Any = None

    async def __aenter__(self) -> Watch:
        async def on_msg(msg: Msg) -> None:
            headers = msg.headers or {}
            try:
                events = self._log.codec.decode(msg.data)
            except BatchDecodeError:
                return
            mid = headers.get(H_MSG_ID, "")
            for i, event in enumerate(events):
                self.queue.put_nowait(
                    Envelope(
                        event_id=f"{mid}:{i}",
                        run_id=msg.subject.split(".")[2],
                        subject=msg.subject,
                        sequence=0,  # core delivery carries no stream sequence
                        index=i,
                        recorded_at=datetime.now(UTC),
                        correlation_id=headers.get(H_CORRELATION),
                        causation_id=headers.get(H_CAUSATION),
                        traceparent=headers.get(H_TRACEPARENT),
                        event=event,
                    )
                )

        self._sub = await self._log.nc.subscribe(self._filter, cb=on_msg)
        return self

    async def __aexit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            await self._sub.unsubscribe()


def utc_from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _seq(msg: Msg) -> str:
    try:
        return str(msg.metadata.sequence.stream)
    except Exception:
        return "?"


_STAMP = re.compile(r"^([^.Z+]+)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def _direct_time(stamp: str) -> datetime:
    """A direct get's `Nats-Time-Stamp` (RFC 3339 with nanoseconds) as the same aware datetime
    a consumer's metadata gives (nats-py: nanoseconds / 1e9, then `fromtimestamp`)."""
    match = _STAMP.match(stamp)
    if match is None:
        return datetime.now(UTC)
    whole, fraction, zone = match.groups()
    seconds = datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone)).timestamp()
    nanos = int(seconds) * 1_000_000_000 + int((fraction or "0")[:9].ljust(9, "0"))
    return datetime.fromtimestamp(nanos / 1_000_000_000.0, UTC)
