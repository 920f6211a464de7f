"""Durable work consumers: decode an event batch, hand it to a handler, ack, or reject poison.

A message that is not an event batch is logged and terminated (`AckTerm`): it will never be
delivered again and the service keeps running. A handler that raises gets the message
redelivered after a back-off, at most `max_deliver` times in all.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from faststream.middlewares import AckPolicy
from faststream.nats import JStream, NatsBroker, NatsMessage
from nats.aio.msg import Msg
from nats.js.api import AckPolicy as JsAckPolicy
from nats.js.api import ConsumerConfig

from contracts.base import Envelope
from contracts.catalog import BatchDecodeError
from contracts.subjects import RUN_STREAM
from libs.eventlog import EventLog

log = logging.getLogger(__name__)

Handler = Callable[[list[Envelope], Msg], Awaitable[None]]


def add_work_consumer(
    broker: NatsBroker,
    *,
    service: str,
    purpose: str,
    subject: str,
    event_log: Callable[[], EventLog],
    handle: Handler,
    max_deliver: int = 5,
    ack_wait_s: float = 60.0,
    max_ack_pending: int = 10_000,
    description: str = "",
    manual_ack: bool = False,
    max_workers: int = 1,
) -> None:
    """Register a durable push consumer `<service>-<purpose>` (a queue group across replicas).

    With `manual_ack`, the handler owns the ack (it may ack later, from another task);
    otherwise the message is acked when the handler returns. `max_workers` > 1 handles that
    many messages at once (for services whose work waits on the outside world).
    """
    durable = f"{service}-{purpose}"

    async def on_message(msg: NatsMessage) -> None:
        raw: Msg = msg.raw_message
        try:
            envelopes = event_log().envelopes(raw)
        except BatchDecodeError as exc:
            log.error(
                "%s rejects a malformed message on %s (stream seq %s): %s",
                durable,
                raw.subject,
                _seq(raw),
                exc,
            )
            await raw.term()
            return
        try:
            await handle(envelopes, raw)
        except Exception:
            delivered = raw.metadata.num_delivered
            log.exception(
                "%s failed on %s (delivery %d of %d)", durable, raw.subject, delivered, max_deliver
            )
            if delivered >= max_deliver:
                await raw.term()
            else:
                await raw.nak(delay=min(2.0**delivered, 30.0))
            return
        if not manual_ack:
            await raw.ack()

    extra: dict[str, int] = {"max_workers": max_workers} if max_workers > 1 else {}
    broker.subscriber(
        subject,
        stream=JStream(RUN_STREAM, declare=False),
        durable=durable,
        queue=durable,
        config=ConsumerConfig(
            ack_policy=JsAckPolicy.EXPLICIT,
            max_deliver=max_deliver,
            ack_wait=ack_wait_s,
            max_ack_pending=max_ack_pending,
        ),
        ack_policy=AckPolicy.MANUAL,
        description=description or f"{service} consumes {subject}",
        title=durable,
        **extra,  # type: ignore[call-overload]
    )(on_message)


def _seq(raw: Msg) -> str:
    try:
        return str(raw.metadata.sequence.stream)
    except Exception:
        return "?"
