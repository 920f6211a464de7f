"""Bounded reads of the run stream: everything on a subject filter up to "now", in order.

A replay is a short-lived push consumer on a private inbox (ack none, flow control, memory
storage). The consumer-create reply tells how many messages match; the read ends when that
many have arrived, so an empty or finished run costs one round trip and no timeout. nats-py's
`fetch()` loop awaits each message and is several times slower for long runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import TypeVar

import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from libs.eventlog.errors import EventLogError, ReplayGap

T = TypeVar("T")

_STATUS = "Status"


async def read_bounded(
    nc: NATS,
    stream: str,
    filter_subject: str,
    *,
    after: int,
    convert: Callable[[Msg], list[T]],
    timeout: float = 30.0,
) -> list[T]:
    """Every message on `filter_subject` with stream sequence > `after`, converted in order."""
    js = nc.jetstream()
    inbox = nc.new_inbox()
    out: list[T] = []
    done = asyncio.get_running_loop().create_future()
    state = {"expected": 0, "want": -1, "seen": 0, "consumer_seq": 0}
    failure: list[BaseException] = []

    async def on_msg(msg: Msg) -> None:
        if done.done():
            return
        headers = msg.headers or {}
        if not msg.data and headers.get(_STATUS) == "100":
            # Flow-control request (has a reply) or idle heartbeat (no reply; it names the
            # flow-control subject still owed when one was lost on the way).
            if msg.reply:
                await nc.publish(msg.reply)
            elif stalled := headers.get("Nats-Consumer-Stalled"):
                await nc.publish(stalled)
            return
        try:
            meta = msg.metadata
            if meta.sequence.consumer != state["consumer_seq"] + 1:
                raise ReplayGap(
                    f"replay of {filter_subject} skipped from consumer sequence "
                    f"{state['consumer_seq']} to {meta.sequence.consumer}"
                )
            state["consumer_seq"] = meta.sequence.consumer
            out.extend(convert(msg))
            state["seen"] += 1
        except BaseException as exc:
            failure.append(exc)
            done.set_result(None)
            return
        if state["want"] >= 0 and state["seen"] >= state["want"]:
            done.set_result(None)

    sub = await nc.subscribe(inbox, cb=on_msg, pending_msgs_limit=-1, pending_bytes_limit=-1)
    config = ConsumerConfig(
        deliver_subject=inbox,
        filter_subject=filter_subject,
        ack_policy=AckPolicy.NONE,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE if after > 0 else DeliverPolicy.ALL,
        opt_start_seq=after + 1 if after > 0 else None,
        mem_storage=True,
        num_replicas=1,
        flow_control=True,
        idle_heartbeat=5.0,
        inactive_threshold=10.0,
    )
    consumer_name: str | None = None
    try:
        try:
            info = await js.add_consumer(stream, config)
        except nats.errors.NoRespondersError as exc:
            raise EventLogError("JetStream is not available on this NATS server") from exc
        consumer_name = info.name
        state["want"] = info.num_pending or 0
        if state["seen"] >= state["want"] and not done.done():
            done.set_result(None)
        try:
            await asyncio.wait_for(done, timeout)
        except TimeoutError:
            raise EventLogError(
                f"replay of {filter_subject} timed out after {timeout}s "
                f"({state['seen']} of {state['want']} messages)"
            ) from None
        if failure:
            raise failure[0]
        # Messages appended after the consumer was created may have slipped in; the read is
        # bounded by the count the server reported at creation.
        return out
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        if consumer_name is not None:
            # Fire and forget: the consumer also expires on its own after inactive_threshold.
            with contextlib.suppress(Exception):
                await nc.publish(f"$JS.API.CONSUMER.DELETE.{stream}.{consumer_name}")


# One batched direct get answers at most this many messages; a longer read asks again.
DIRECT_BATCH = 256


class DirectMessage:
    """A message answered by a direct get: its subject, stream sequence, time and headers."""

    __slots__ = ("data", "headers", "sequence", "subject", "timestamp")

    def __init__(
        self, subject: str, sequence: int, timestamp: str, headers: dict[str, str], data: bytes
    ) -> None:
        self.subject = subject
        self.sequence = sequence
        self.timestamp = timestamp
        self.headers = headers
        self.data = data


async def read_direct(
    nc: NATS,
    stream: str,
    filter_subject: str,
    *,
    after: int,
    convert: Callable[[DirectMessage], list[T]],
    timeout: float = 30.0,
) -> list[T]:
    """Like `read_bounded`, with batched direct gets (`$JS.API.DIRECT.GET`, NATS 2.11+): no
    consumer is created, so a short read (a conversation's last few events) costs one round
    trip to the stream and nothing to clean up. The stream must allow direct gets. A direct get
    may be answered by a replica that lags: callers use it where a missing newest message is
    only a delay (they read again on the next notification)."""
    out: list[T] = []
    start = after + 1
    loop = asyncio.get_running_loop()
    while True:
        inbox = nc.new_inbox()
        got: list[Msg] = []
        end: asyncio.Future[dict[str, str]] = loop.create_future()

        async def on_msg(
            msg: Msg, got: list[Msg] = got, end: asyncio.Future[dict[str, str]] = end
        ) -> None:
            headers = msg.headers or {}
            if headers.get(_STATUS) and not msg.data:
                if not end.done():
                    end.set_result(dict(headers))
                return
            got.append(msg)

        sub = await nc.subscribe(inbox, cb=on_msg, pending_msgs_limit=-1, pending_bytes_limit=-1)
        try:
            request = {"seq": start, "next_by_subj": filter_subject, "batch": DIRECT_BATCH}
            await nc.publish(
                f"$JS.API.DIRECT.GET.{stream}",
                json.dumps(request).encode(),
                reply=inbox,
            )
            try:
                status = await asyncio.wait_for(end, timeout)
            except TimeoutError:
                raise EventLogError(f"direct read of {filter_subject} timed out") from None
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        code = status.get(_STATUS)
        if code == "404":  # nothing (more) matches
            return out
        if code != "204":
            raise EventLogError(f"direct read of {filter_subject} failed: status {code}")
        last = start - 1
        for msg in got:
            headers = dict(msg.headers or {})
            sequence = int(headers.get("Nats-Sequence", "0"))
            if sequence <= last:
                continue
            last = sequence
            out.extend(
                convert(
                    DirectMessage(
                        subject=headers.get("Nats-Subject", ""),
                        sequence=sequence,
                        timestamp=headers.get("Nats-Time-Stamp", ""),
                        headers=headers,
                        data=msg.data,
                    )
                )
            )
        if int(status.get("Nats-Num-Pending", "0") or 0) <= 0 or last < start:
            return out
        start = last + 1
