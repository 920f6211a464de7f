"""Composition root of the agent runtime: the invocation consumer, the LLM-trace projection,
and the FastStream app around them."""

from __future__ import annotations

import asyncio
import contextlib

from faststream import FastStream

from libs.config import Settings
from libs.projection import ProjectionRunner
from libs.service import ServiceContext
from libs.service.worker import build_app
from services.agent_runtime import handlers
from services.agent_runtime.assistant.edge import install as install_assistant
from services.agent_runtime.projection import TraceProjector

SERVICE = "agent_runtime"


def create_app(settings: Settings) -> tuple[FastStream, ServiceContext]:
    ctx = ServiceContext(SERVICE, settings)
    app = build_app(ctx, register=handlers.register)
    install_assistant(app, ctx)  # the Heym Agent (chat assistant): services/agent_runtime/assistant

    async def start_projection() -> None:
        runner = ProjectionRunner(ctx.nc, ctx.pool, TraceProjector(), event_log=ctx.event_log)
        task = asyncio.create_task(runner.run(), name="trace-projection")

        async def stop() -> None:
            runner.stop()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10)

        ctx.on_close(stop)

    app.after_startup(start_projection)
    return app, ctx
