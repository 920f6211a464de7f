"""The agent_runtime NATS edge: its durable work consumer on `heym.run.*.sched.agent_runtime`."""

from __future__ import annotations

import logging

from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from libs.service import ServiceContext
from libs.service.work import WorkConsumer

log = logging.getLogger(__name__)


def register(ctx: ServiceContext) -> None:
    async def on_work(envelopes: list[Envelope], msg: Msg) -> None:
        for env in envelopes:
            log.debug("agent_runtime has no handler yet for %s", type(env.event).__name__)

    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="work",
            subject=subjects.work_for(ctx.service),
            handle=on_work,
        )
    )
