"""Composition root of the gateway: the Litestar app, its NATS context and the HTTP server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import uvicorn
from litestar import Litestar
from litestar.openapi import OpenAPIConfig

from libs.config import Settings
from libs.service import ServiceContext
from services.gateway.event_docs import EventDocsController
from services.gateway.health import HealthController

SERVICE = "gateway"


def create_app(settings: Settings, ctx: ServiceContext | None = None) -> Litestar:
    context = ctx or ServiceContext(SERVICE, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        await context.open()
        await context.broker.start()
        app.state.ctx = context
        context.ready()
        try:
            yield
        finally:
            await context.broker.stop()
            await context.close()

    return Litestar(
        route_handlers=[HealthController, EventDocsController],
        lifespan=[lifespan],
        openapi_config=OpenAPIConfig(title="Heym", version="0.1.0", path="/schema"),
        request_max_body_size=2 * 1024 * 1024,
    )


async def serve(settings: Settings) -> None:
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.http_host,
        port=settings.http_port,
        log_level=settings.log_level.lower(),
        lifespan="on",
        access_log=False,
    )
    await uvicorn.Server(config).serve()
