"""Cron triggers: the body of a workflow's schedule message, written again for every tick."""

from __future__ import annotations

from contracts.base import Event


class CronTicked(Event, tag="cron.ticked", frozen=True):
    """A tick of a workflow's cron schedule (the schedule message and each tick carry it).

    The gateway stores it as the schedule (`heym.cron.schedule.<workflow>`, with the
    `Nats-Schedule` header); NATS writes a copy to `heym.cron.tick.<workflow>` on every tick,
    and the scheduler starts one run per tick message.
    """

    workflow_id: str
    node_id: str
    cron_expression: str
    # The expression as NATS reads it (six fields, seconds first, or a predefined `@name`).
    schedule: str
    timezone: str = "UTC"


SCHEDULE_EVENTS: tuple[type[Event], ...] = (CronTicked,)
