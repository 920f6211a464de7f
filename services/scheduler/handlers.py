"""The scheduler's NATS edge: one durable consumer over every run event, in stream order."""

from __future__ import annotations

import logging

from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from libs.service import ServiceContext
from libs.service.work import add_work_consumer

log = logging.getLogger(__name__)


def register(ctx: ServiceContext) -> None:
    async def on_event(envelopes: list[Envelope], msg: Msg) -> None:
        for env in envelopes:
            log.debug("scheduler saw %s on %s", type(env.event).__name__, env.subject)

    add_work_consumer(
        ctx.broker,
        service=ctx.service,
        purpose="runs",
        subject=subjects.ALL_RUN_EVENTS,
        event_log=lambda: ctx.event_log,
        handle=on_event,
        description="Every run event, folded into run state to decide what runs next.",
    )
