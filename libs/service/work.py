"""Durable work consumers: decode an event batch, hand it to a handler, ack, or reject poison.

A message that is not an event batch is logged and terminated (`AckTerm`): it will never be
delivered again and the service keeps running. A handler that raises gets the message
redelivered after a back-off, at most `max_deliver` times in all; then its failure is recorded
(`on_poison`) and only then is it terminated (`give_up`). The server's own limit is
`server_max_deliver`, past the application's: a message whose failure could not be recorded
(NATS or Postgres away at that moment) comes back to try again instead of being dropped by the
server with nothing recorded (a run then waited for ever on a node nobody would run).

These consumers sit on the hot path of every run (a node dispatch, a node result), so they
use nats-py's push subscription directly: FastStream's subscriber layer added about 1 ms per
message here. Messages are taken in delivery order; with `max_workers` > 1 handlers run
concurrently (a service whose work waits on the outside world).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import nats.js.errors
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts.base import Envelope
from contracts.catalog import BatchDecodeError
from contracts.subjects import RUN_STREAM
from libs.eventlog import EventLog
from libs.service.outage import OUTAGE_BUDGET_S, is_outage

log = logging.getLogger(__name__)

Handler = Callable[[list[Envelope], Msg], Awaitable[None]]
# Called once a message will never be handled: its envelopes (or None if it could not be
# decoded), its subject and why. Services record a failure there (a node's, a run's, a tool
# call's) so nothing waits for ever on work that is gone.
Poisoned = Callable[[list[Envelope] | None, str, str], Awaitable[None]]


# Deliveries the server allows past the application's limit, to record a give-up.
DELIVERY_HEADROOM = 10
# Back-off before trying again to record a give-up that could not be recorded.
GIVE_UP_RETRY_S = 30.0


def server_max_deliver(max_deliver: int) -> int:
    """The consumer's `max_deliver`: room past the application's limit to record a give-up."""
    return max_deliver + DELIVERY_HEADROOM


async def give_up(msgs: list[Msg], record: Callable[[], Awaitable[None]], who: str) -> bool:
    """End messages that will never be handled: `record()` their failure (tried through an
    outage), then terminate them. If the failure cannot be recorded, they are kept (a nak
    with a long back-off) so a later delivery records it: never terminated with nothing on
    the log. True once recorded."""
    try:
        await through_outages(record, msgs[0] if len(msgs) == 1 else None, who)
    except Exception:
        log.exception("%s: the failure could not be recorded; the message is kept", who)
        for msg in msgs:
            with contextlib.suppress(Exception):
                await msg.nak(delay=GIVE_UP_RETRY_S)
        return False
    for msg in msgs:
        with contextlib.suppress(Exception):
            await msg.term()
    return True


def redelivery_delay(delivered: int, base_s: float) -> float:
    """Back-off before the next delivery of a message that failed `delivered` times."""
    return min(base_s * 2.0 ** (delivered - 1), 30.0)


class WorkConsumer:
    def __init__(
        self,
        *,
        service: str,
        purpose: str,
        subject: str,
        handle: Handler,
        max_deliver: int = 5,
        ack_wait_s: float = 60.0,
        max_ack_pending: int = 10_000,
        manual_ack: bool = False,
        max_workers: int = 1,
        on_poison: Poisoned | None = None,
    ) -> None:
        self.durable = f"{service}-{purpose}"
        self.subject = subject
        self._handle = handle
        self._max_deliver = max_deliver
        self._ack_wait = ack_wait_s
        self._max_ack_pending = max_ack_pending
        self._manual_ack = manual_ack
        self._on_poison = on_poison
        # Set from the service's settings when the consumer is added (HEYM_REDELIVERY_BACKOFF_S).
        self.backoff_s = 1.0
        self._slots = asyncio.Semaphore(max_workers) if max_workers > 1 else None
        self._tasks: set[asyncio.Task[None]] = set()
        self._sub: Subscription | None = None
        self._log: EventLog | None = None

    async def start(self, event_log: EventLog) -> None:
        self._log = event_log
        js = event_log.nc.jetstream()
        await self._upgrade(js)
        # Durable push consumer with a deliver group: replicas share the work (queue semantics).
        self._sub = await js.subscribe(
            self.subject,
            queue=self.durable,
            durable=self.durable,
            stream=RUN_STREAM,
            cb=self._on_message,
            manual_ack=True,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                max_deliver=server_max_deliver(self._max_deliver),
                ack_wait=self._ack_wait,
                max_ack_pending=self._max_ack_pending,
            ),
            pending_msgs_limit=-1,
            pending_bytes_limit=-1,
        )

    async def _upgrade(self, js: JetStreamContext) -> None:
        """An existing consumer keeps its settings when nats-py binds to it: one created with
        a lower delivery limit gets the headroom that keeps unrecorded give-ups."""
        try:
            info = await js.consumer_info(RUN_STREAM, self.durable)
        except nats.js.errors.NotFoundError:
            return
        wanted = server_max_deliver(self._max_deliver)
        if info.config.max_deliver == wanted:
            return
        info.config.max_deliver = wanted
        await js.add_consumer(RUN_STREAM, info.config)  # create-or-update: the same durable
        log.info("%s: max_deliver set to %d", self.durable, wanted)

    async def stop(self, grace: float = 10.0) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=grace)

    async def _on_message(self, msg: Msg) -> None:
        if self._slots is None:
            await self._process(msg)
            return
        await self._slots.acquire()
        task = asyncio.create_task(self._process(msg))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._slots is not None:
            self._slots.release()

    async def _process(self, msg: Msg) -> None:
        assert self._log is not None
        try:
            envelopes = self._log.envelopes(msg)
        except BatchDecodeError as exc:
            log.error(
                "%s rejects a malformed message on %s (stream seq %s): %s",
                self.durable,
                msg.subject,
                _seq(msg),
                exc,
            )
            why = f"malformed message: {exc}"
            await give_up([msg], lambda: self._poisoned(None, msg.subject, why), self.durable)
            return
        if msg.metadata.num_delivered > self._max_deliver:
            # Past its deliveries (its failure could not be recorded before, or the service
            # died handling it): record the failure without running the handler again.
            why = f"gave up after {self._max_deliver} deliveries"
            await give_up([msg], lambda: self._poisoned(envelopes, msg.subject, why), self.durable)
            return
        try:
            await through_outages(lambda: self._handle(envelopes, msg), msg, self.durable)
        except Exception as exc:
            delivered = msg.metadata.num_delivered
            log.exception(
                "%s failed on %s (delivery %d of %d)",
                self.durable,
                msg.subject,
                delivered,
                self._max_deliver,
            )
            if delivered >= self._max_deliver:
                why = f"{type(exc).__name__}: {exc}"
                await give_up(
                    [msg], lambda: self._poisoned(envelopes, msg.subject, why), self.durable
                )
            else:
                with contextlib.suppress(Exception):
                    await msg.nak(delay=redelivery_delay(delivered, self.backoff_s))
            return
        if not self._manual_ack:
            with contextlib.suppress(Exception):
                await msg.ack()

    async def _poisoned(self, envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        """Record the failure (raises if it cannot be recorded: `give_up` keeps the message)."""
        log.error("%s gives up a message on %s: %s", self.durable, subject, why)
        if self._on_poison is not None:
            await self._on_poison(envelopes, subject, why)


async def through_outages(call: Callable[[], Awaitable[None]], msg: Msg | None, who: str) -> None:
    """`call()`, tried again in place while it fails because NATS or Postgres is away (up to
    `OUTAGE_BUDGET_S`, the message kept in progress): an outage longer than the redelivery
    back-off must not use up the message's deliveries and get it dropped as poison (a review
    request was lost so while a cluster elected a new stream leader)."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    pause = 0.5
    while True:
        try:
            await call()
            return
        except Exception as exc:
            if not is_outage(exc) or loop.time() - began + pause > OUTAGE_BUDGET_S:
                raise
            log.warning("%s: %r (an outage); trying again in %.1f s", who, exc, pause)
        if msg is not None:
            with contextlib.suppress(Exception):
                await msg.in_progress()
        await asyncio.sleep(pause)
        pause = min(pause * 2, 5.0)


def _seq(raw: Msg) -> str:
    try:
        return str(raw.metadata.sequence.stream)
    except Exception:
        return "?"


@contextlib.asynccontextmanager
async def kept_alive(msg: Msg, every_s: float) -> AsyncIterator[None]:
    """Tell JetStream the work is in progress every `every_s` while the block runs, so a long
    job is not redelivered as lost, while a crashed worker's job is (after `ack_wait`)."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every_s)
            with contextlib.suppress(Exception):
                await msg.in_progress()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
