"""Composition root of the scheduler service: run actors on the event feed, the history
projection, and the FastStream app around them."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from faststream import FastStream

from libs.config import Settings
from libs.projection import ProjectionRunner
from libs.service import ServiceContext
from libs.service.worker import build_app
from services.scheduler import handlers
from services.scheduler.cron import reconcile
from services.scheduler.projection import HistoryProjector

SERVICE = "scheduler"


def create_app(settings: Settings) -> tuple[FastStream, ServiceContext]:
    ctx = ServiceContext(SERVICE, settings)
    app = build_app(ctx, register=handlers.register)

    async def start_projection() -> None:
        runner = ProjectionRunner(ctx.nc, ctx.pool, HistoryProjector(), event_log=ctx.event_log)
        task = asyncio.create_task(runner.run(), name="history-projection")

        async def stop() -> None:
            runner.stop()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10)

        ctx.on_close(stop)

    async def reconcile_schedules() -> None:
        try:
            await reconcile(ctx)
        except Exception:  # the ticks still check every schedule against its workflow
            logging.getLogger(__name__).exception("cron schedule reconciliation failed")

    app.after_startup(start_projection)
    app.after_startup(reconcile_schedules)
    return app, ctx
