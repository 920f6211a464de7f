"""Composition root of the scheduler service: run actors on the event feed, the history
projection, the sweeper, and the FastStream app around them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from faststream import FastStream

from libs.config import Settings
from libs.projection import ProjectionRunner
from libs.service import ServiceContext
from libs.service.worker import build_app
from services.scheduler import handlers
from services.scheduler.actors import RunRegistry
from services.scheduler.cron import reconcile
from services.scheduler.effects import Effects
from services.scheduler.projection import HistoryProjector
from services.scheduler.sweeper import Sweeper

SERVICE = "scheduler"


def create_app(settings: Settings) -> tuple[FastStream, ServiceContext]:
    ctx = ServiceContext(SERVICE, settings)
    registry: Callable[[], RunRegistry] | None = None

    def register(c: ServiceContext) -> None:
        nonlocal registry
        registry = handlers.register(c)

    app = build_app(ctx, register=register)

    def background(name: str, job: Any, stop: Callable[[], None]) -> None:
        task = asyncio.create_task(job, name=name)

        async def stopped() -> None:
            stop()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10)

        ctx.on_close(stopped)

    async def start_background() -> None:
        runner = ProjectionRunner(ctx.nc, ctx.pool, HistoryProjector(), event_log=ctx.event_log)
        background("history-projection", runner.run(), runner.stop)
        assert registry is not None
        sweeper = Sweeper(
            pool=ctx.pool,
            nc=ctx.nc,
            event_log=ctx.event_log,
            effects=Effects(ctx.nc, ctx.event_log),
            registry=registry,
            interval_s=settings.sweep_interval_s,
            quiet_s=settings.sweep_quiet_s,
        )
        background("sweeper", sweeper.run(), sweeper.stop)

    app.after_startup(start_background)

    async def reconcile_schedules() -> None:
        try:
            await reconcile(ctx)
        except Exception:  # the ticks still check every schedule against its workflow
            logging.getLogger(__name__).exception("cron schedule reconciliation failed")

    app.after_startup(reconcile_schedules)
    return app, ctx
