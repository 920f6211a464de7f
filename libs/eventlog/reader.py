"""Bounded reads of the run stream: everything on a subject filter up to "now", in order.

A replay is a short-lived push consumer on a private inbox (ack none, flow control, memory
storage). The consumer-create reply tells how many messages match; the read ends when that
many have arrived, so an empty or finished run costs one round trip and no timeout. nats-py's
`fetch()` loop awaits each message and is several times slower for long runs.
"""

from __future__ import annotations

import asyncio
import contextlib
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
            # Flow-control request (has a reply) or idle heartbeat (no reply).
            if msg.reply:
                await nc.publish(msg.reply)
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
