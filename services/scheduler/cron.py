"""Cron ticks become runs: one run per tick message, however many replicas, across restarts.

NATS writes a tick message for every match of a workflow's schedule. The run's id is derived
from the tick's stream sequence, and its request is appended with expected sequence 0, so a
tick redelivered (a replica died before acking) or handled by two replicas starts one run.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from contracts.runs import RunRequested
from contracts.schedules import CronTicked
from libs import telemetry
from libs.db.globals import global_values
from libs.db.workflows import load_snapshot, workflow_cache
from libs.eventlog import ConcurrencyConflict
from libs.schedules import CronError, CronTrigger, cron_trigger, put_schedule, scheduled_workflows
from libs.service import ServiceContext

log = logging.getLogger(__name__)

_TICK_NS = uuid.UUID("0c8e3f4a-6d2b-4b7e-9a51-3f0e9d2c7b18")
TRIGGER_SOURCE = "cron"


def tick_run_id(workflow_id: str, tick_sequence: int) -> str:
    """The run a tick starts: the same tick always names the same run."""
    return uuid.uuid5(_TICK_NS, f"{workflow_id}:{tick_sequence}").hex


def _trigger(nodes: list[dict[str, Any]]) -> CronTrigger | None:
    try:
        return cron_trigger(nodes)
    except CronError:
        return None


class CronStarter:
    def __init__(self, ctx: ServiceContext) -> None:
        self._ctx = ctx

    async def on_tick(self, envelopes: list[Envelope], msg: Msg) -> None:
        tick = next((e.event for e in envelopes if isinstance(e.event, CronTicked)), None)
        workflow_id = msg.subject.rsplit(".", 1)[-1]
        if tick is None:
            return
        ctx = self._ctx
        loaded = await load_snapshot(ctx.pool, workflow_id)
        if loaded is None:
            await put_schedule(ctx.nc, workflow_id, None)  # the workflow is gone
            return
        snapshot, owner = loaded
        trigger = _trigger(snapshot.nodes)
        if trigger is None or trigger.schedule != tick.schedule:
            # The schedule on the log is stale (a save that failed after writing it, or a
            # tick of the schedule an edit replaced): make the log match the workflow.
            log.info("workflow %s: skipping a tick of a schedule it no longer has", workflow_id)
            await put_schedule(ctx.nc, workflow_id, trigger)
            return
        sequence = msg.metadata.sequence.stream
        ticked_at_ms = int(msg.metadata.timestamp.timestamp() * 1000)
        run_id = tick_run_id(workflow_id, sequence)
        request = RunRequested(
            workflow_id=snapshot.id,
            workflow_name=snapshot.name,
            owner_id=owner,
            nodes=snapshot.nodes,
            edges=snapshot.edges,
            inputs={},
            trigger_source=TRIGGER_SOURCE,
            requested_at_ms=ticked_at_ms,
            workflow_cache=await workflow_cache(ctx.pool, owner, snapshot),
            globals=await global_values(ctx.pool, owner),
            # No caller: each tick starts a trace of its own.
            run_traceparent=telemetry.header_of(telemetry.new_run_context(run_id, None)),
        )
        try:
            await ctx.event_log.append(
                subjects.run_commands(run_id),
                [request],
                expected_sequence=0,
                message_id=f"run-{run_id}",
                correlation_id=run_id,
                traceparent=request.run_traceparent,
            )
        except ConcurrencyConflict:
            log.info("tick %d of workflow %s already started run %s", sequence, workflow_id, run_id)


async def reconcile(ctx: ServiceContext) -> None:
    """Make the log's schedules match the stored workflows (after a restore, a lost write)."""
    started = time.monotonic()
    rows = await ctx.pool.fetch(
        """SELECT id::text AS id, nodes FROM workflows
           WHERE nodes @> '[{"type": "cron"}]'::jsonb"""
    )
    wanted: set[str] = set()
    for r in rows:
        trigger = _trigger(r["nodes"])
        if trigger is not None:
            wanted.add(r["id"])
            await put_schedule(ctx.nc, r["id"], trigger)
    for workflow_id in await scheduled_workflows(ctx.nc):
        if workflow_id not in wanted:
            await put_schedule(ctx.nc, workflow_id, None)
    log.info(
        "cron schedules reconciled: %d scheduled (%.0f ms)",
        len(wanted),
        (time.monotonic() - started) * 1000,
    )
