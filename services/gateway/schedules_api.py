"""`GET /api/schedules`: the user's cron workflows, whether the log holds their schedule, and
their next runs (Heym's schedule view)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from litestar import Controller, Request, get
from litestar.datastructures import State
from litestar.di import Provide

from libs.accounts import AccountUser
from libs.schedules import CronError, cron_trigger, current_schedule, next_runs
from services.gateway import store
from services.gateway.auth import required_user


class ScheduleController(Controller):
    path = "/api/schedules"
    tags = ["schedules"]
    dependencies = {"user": Provide(required_user)}

    @get("", summary="Your cron workflows and their next runs")
    async def list_all(
        self, request: Request[Any, Any, State], user: AccountUser, count: int = 5
    ) -> list[dict[str, Any]]:
        count = max(1, min(count, 50))
        ctx = request.app.state.ctx
        now = datetime.now(UTC)
        out: list[dict[str, Any]] = []
        for row in await store.list_workflows(ctx.pool, user.id):
            try:
                trigger = cron_trigger(row.nodes)
            except CronError:
                continue
            if trigger is None:
                continue
            on_log = await current_schedule(ctx.nc, row.id)
            out.append(
                {
                    "workflow_id": row.id,
                    "workflow_name": row.name,
                    "node_id": trigger.node_id,
                    "cron_expression": trigger.expression,
                    "schedule": trigger.schedule,
                    "timezone": "UTC",
                    "scheduled": on_log is not None and on_log.schedule == trigger.schedule,
                    "next_runs": [
                        t.isoformat().replace("+00:00", "Z")
                        for t in next_runs(trigger.schedule, now, count)
                    ],
                }
            )
        return out
