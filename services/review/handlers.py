"""The review service's NATS edge: one durable consumer over the reviews' work items
(`heym.work.*.review.*`): requests to open, expiry timers firing, and reviews closed."""

from __future__ import annotations

import logging

from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from contracts.review import ReviewClosed, ReviewExpiryDue, ReviewRequested
from libs.service import ServiceContext
from libs.service.work import WorkConsumer
from services.review import store
from services.review.opening import Reviews

log = logging.getLogger(__name__)


def register(ctx: ServiceContext) -> None:
    reviews: Reviews | None = None

    def get() -> Reviews:
        nonlocal reviews
        if reviews is None:
            reviews = Reviews(ctx.nc, ctx.event_log, ctx.pool, ctx.settings)
        return reviews

    async def on_item(envelopes: list[Envelope], msg: Msg) -> None:
        for env in envelopes:
            ev = env.event
            if isinstance(ev, ReviewRequested):
                await get().open(env.run_id, env.subject, ev)
            elif isinstance(ev, ReviewExpiryDue):
                await get().expire(env.run_id, ev.request_id)
            elif isinstance(ev, ReviewClosed):
                await store.record_closed(ctx.pool, ev, env.recorded_at)

    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="reviews",
            subject=subjects.work_items_for(ctx.service),
            handle=on_item,
            ack_wait_s=30.0,
        )
    )
