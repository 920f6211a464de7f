"""The schedule messages on the log: put or remove a workflow's schedule, read what is there.

A workflow's schedule is the last message on `heym.cron.schedule.<workflow>` (NATS keeps one
per subject); its `Nats-Schedule` header holds the cron expression and NATS itself writes a
tick to `heym.cron.tick.<workflow>` at every match. Putting the same schedule again replaces
it; purging the subject stops it.
"""

from __future__ import annotations

import nats.js.errors
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.catalog import BatchDecodeError, EventCodec
from contracts.schedules import CronTicked
from libs.schedules.cron import CronTrigger

_CODEC = EventCodec()


async def put_schedule(nc: NATS, workflow_id: str, trigger: CronTrigger | None) -> None:
    """Make the log's schedule for `workflow_id` match `trigger` (None removes it)."""
    js = nc.jetstream()
    subject = subjects.cron_schedule(workflow_id)
    if trigger is None:
        await js.purge_stream(subjects.RUN_STREAM, subject=subject)
        return
    current = await current_schedule(nc, workflow_id)
    tick = CronTicked(
        workflow_id=workflow_id,
        node_id=trigger.node_id,
        cron_expression=trigger.expression,
        schedule=trigger.schedule,
    )
    if current == tick:
        return  # replacing an unchanged schedule would only risk a tick at the boundary
    await js.publish(
        subject,
        _CODEC.encode([tick]),
        stream=subjects.RUN_STREAM,
        headers={
            "Nats-Schedule": trigger.schedule,
            "Nats-Schedule-Target": subjects.cron_tick(workflow_id),
        },
    )


async def current_schedule(nc: NATS, workflow_id: str) -> CronTicked | None:
    """The schedule the log holds for `workflow_id`, if any."""
    js = nc.jetstream()
    try:
        msg = await js.get_last_msg(subjects.RUN_STREAM, subjects.cron_schedule(workflow_id))
    except nats.js.errors.NotFoundError:
        return None
    try:
        events = _CODEC.decode(msg.data or b"")
    except BatchDecodeError:
        return None
    found = next((e for e in events if isinstance(e, CronTicked)), None)
    return found


async def scheduled_workflows(nc: NATS) -> list[str]:
    """The ids of every workflow the log holds a schedule for."""
    js = nc.jetstream()
    info = await js.stream_info(subjects.RUN_STREAM, subjects_filter=subjects.ALL_CRON_SCHEDULES)
    found = info.state.subjects or {}
    return [s.rsplit(".", 1)[-1] for s, count in found.items() if count]
