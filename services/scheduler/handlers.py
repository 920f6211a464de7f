"""The scheduler's NATS edge: a run-partitioned consumer over every run event, in stream order.

`scheduler-runs` is partitioned by run (`libs/service/partitioned.py`): each run's events go
to one scheduler replica at a time. The handler only routes each message to its run's actor
(acked by the actor once handled), so the order is kept per run while different runs are
decided concurrently.
"""

from __future__ import annotations

from collections.abc import Callable

from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from contracts.credentials import NODE_CREDENTIALS
from contracts.runs import RunRequested
from libs.secrets import SecretBox, credential_values, mentions_credentials
from libs.service import ServiceContext
from libs.service.work import WorkConsumer
from services.scheduler.actors import CredentialLoader, Limits, RunRegistry
from services.scheduler.credentials import CredentialBroker
from services.scheduler.cron import CronStarter
from services.scheduler.effects import Effects

MAX_DELIVER = 5


def _credential_loader(ctx: ServiceContext) -> CredentialLoader:
    """Decrypts a run owner's credentials when the run's workflow mentions `$credentials`."""
    key = ctx.settings.secret_key
    box = SecretBox.from_setting(key) if key else None

    async def load(request: RunRequested) -> dict[str, str]:
        if box is None or not mentions_credentials(request.nodes):
            return {}
        return await credential_values(ctx.pool, box, request.owner_id)

    return load


def register(ctx: ServiceContext) -> Callable[[], RunRegistry]:
    """Add the scheduler's consumer; returns how to reach its run registry (the sweeper's)."""
    registry: RunRegistry | None = None
    broker: CredentialBroker | None = None

    async def node_credentials(msg: Msg) -> None:
        nonlocal broker
        if broker is None:
            key = ctx.settings.secret_key
            box = SecretBox.from_setting(key) if key else None
            broker = CredentialBroker(ctx.event_log, ctx.pool, box)
        await broker.handle(msg)

    ctx.add_responder(NODE_CREDENTIALS, node_credentials)

    def get_registry() -> RunRegistry:
        nonlocal registry
        if registry is None:
            limits = Limits(
                max_event_bytes=ctx.settings.max_message_bytes - 64 * 1024,
                max_deliver=MAX_DELIVER,
                backoff_s=ctx.settings.redelivery_backoff_s,
            )
            registry = RunRegistry(
                ctx.event_log,
                Effects(ctx.nc, ctx.event_log),
                limits,
                _credential_loader(ctx),
                on_conflict=lambda run_id: ctx.conflicts.record("run", run_id),
            )
        return registry

    async def on_event(envelopes: list[Envelope], msg: Msg) -> None:
        reg = get_registry()
        reg.deliver(envelopes, msg)
        ctx.details["active_runs"] = str(len(reg))

    async def poisoned(envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        # Malformed messages, and messages past their deliveries (the actors record their own
        # failures; this is for one whose record failed, or whose handling killed the
        # service): the run can no longer be followed reliably, so it ends with the reason.
        try:
            run_id = subjects.run_id_of(subject)
        except subjects.SubjectError:
            return
        await get_registry().abort(run_id, f"a message recorded for it cannot be handled: {why}")

    ctx.add_partitioned(
        purpose="runs",
        subject=subjects.RUN_KEYED,
        handle=on_event,
        max_deliver=MAX_DELIVER,
        on_poison=poisoned,
        on_acquired=lambda p, n: get_registry().forget_partition(p, n),
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
    return get_registry
