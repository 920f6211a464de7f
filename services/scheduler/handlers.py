"""The scheduler's NATS edge: one durable consumer over every run event, in stream order.

The handler only routes each message to its run's actor (acked by the actor once handled),
so the consumer's order is kept per run while different runs are decided concurrently.
"""

from __future__ import annotations

from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from contracts.runs import RunRequested
from libs.secrets import SecretBox, credential_values, mentions_credentials
from libs.service import ServiceContext
from libs.service.work import WorkConsumer
from services.scheduler.actors import CredentialLoader, RunRegistry
from services.scheduler.cron import CronStarter
from services.scheduler.effects import Effects


def _credential_loader(ctx: ServiceContext) -> CredentialLoader:
    """Decrypts a run owner's credentials when the run's workflow mentions `$credentials`."""
    key = ctx.settings.secret_key
    box = SecretBox.from_setting(key) if key else None

    async def load(request: RunRequested) -> dict[str, str]:
        if box is None or not mentions_credentials(request.nodes):
            return {}
        return await credential_values(ctx.pool, box, request.owner_id)

    return load


def register(ctx: ServiceContext) -> None:
    registry: RunRegistry | None = None

    async def on_event(envelopes: list[Envelope], msg: Msg) -> None:
        nonlocal registry
        if registry is None:
            registry = RunRegistry(
                ctx.event_log, Effects(ctx.nc, ctx.event_log), _credential_loader(ctx)
            )
        registry.deliver(envelopes, msg)
        ctx.details["active_runs"] = str(len(registry))

    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="runs",
            subject=subjects.ALL_RUN_EVENTS,
            handle=on_event,
            manual_ack=True,
            ack_wait_s=120.0,
            max_ack_pending=50_000,
        )
    )
    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="cron",
            subject=subjects.ALL_CRON_TICKS,
            handle=CronStarter(ctx).on_tick,
            ack_wait_s=30.0,
            max_deliver=20,
        )
    )
