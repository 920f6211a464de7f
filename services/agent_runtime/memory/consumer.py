"""The extraction consumer `agent_runtime-extraction` on `heym.work.*.agent_runtime.*`: a message
carrying `memory.extraction_requested` runs its item (kept alive while it works); the item's
own later events arrive here too and are acknowledged without work."""

from __future__ import annotations

from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from contracts.memory import MemoryExtractionRequested
from libs.service import ServiceContext
from libs.service.work import WorkConsumer, kept_alive
from services.agent_runtime.memory.extraction import Extractor
from services.agent_runtime.model import ModelClients
from services.agent_runtime.steps.context import Resolve

ACK_WAIT_S = 10.0
KEEPALIVE_S = 3.0
MAX_DELIVER = 5


def register(ctx: ServiceContext, models: ModelClients, resolve: Resolve) -> None:
    extractor: Extractor | None = None

    def get() -> Extractor:
        nonlocal extractor
        if extractor is None:
            extractor = Extractor(ctx.event_log, models, resolve)
        return extractor

    async def on_item(envelopes: list[Envelope], msg: Msg) -> None:
        if not any(isinstance(e.event, MemoryExtractionRequested) for e in envelopes):
            return
        async with kept_alive(msg, KEEPALIVE_S):
            await get().run(envelopes[0].subject)

    async def poisoned(envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        if envelopes and any(isinstance(e.event, MemoryExtractionRequested) for e in envelopes):
            await get().give_up(subject, why)

    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="extraction",
            subject=subjects.work_items_for(ctx.service),
            handle=on_item,
            max_workers=8,
            ack_wait_s=ACK_WAIT_S,
            max_deliver=MAX_DELIVER,
            on_poison=poisoned,
        )
    )
