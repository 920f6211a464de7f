"""Composition root of the agent runtime: the invocation and memory consumers, the LLM-trace
and memory projections, and the FastStream app around them."""

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
from services.agent_runtime.memory.projection import MemoryProjector, MemoryTraceProjector
from services.agent_runtime.projection import TraceProjector

SERVICE = "agent_runtime"


def create_app(settings: Settings) -> tuple[FastStream, ServiceContext]:
    ctx = ServiceContext(SERVICE, settings)
    app = build_app(ctx, register=handlers.register)
    install_assistant(app, ctx)  # the Heym Agent (chat assistant): services/agent_runtime/assistant

    async def start_projections() -> None:
        for projector in (TraceProjector(), MemoryProjector(), MemoryTraceProjector()):
            runner = ProjectionRunner(ctx.nc, ctx.pool, projector, event_log=ctx.event_log)
            task = asyncio.create_task(runner.run(), name=projector.name)

            async def stop(
                runner: ProjectionRunner = runner, task: asyncio.Task[None] = task
            ) -> None:
                runner.stop()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.wait_for(task, 10)

            ctx.on_close(stop)

    app.after_startup(start_projections)
    return app, ctx
