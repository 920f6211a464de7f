"""Composition root of the gateway: the Litestar app, its NATS context and the HTTP server."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from litestar import Litestar, Request, Response
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR

from libs.accounts.execution_tokens import signing_key
from libs.config import Settings
from libs.eventlog import EventLogError
from libs.secrets import SecretBox
from libs.service import ServiceContext
from services.gateway.a2a.endpoint import A2AEndpoints
from services.gateway.a2a.settings_api import A2ASettingsController
from services.gateway.agent_memory import AgentMemoryController
from services.gateway.chat_log import ChatError
from services.gateway.chats import ChatController, chat_error_handler
from services.gateway.credentials import CredentialController
from services.gateway.errors import RequestGuard, internal_error
from services.gateway.event_docs import EventDocsController
from services.gateway.execute import ExecuteController
from services.gateway.execution_tokens import ExecutionTokenController
from services.gateway.expressions_api import ExpressionController
from services.gateway.files import FileController
from services.gateway.global_variables import GlobalVariableController
from services.gateway.health import HealthController
from services.gateway.history import HistoryController
from services.gateway.hitl_api import HitlController, ReviewPageController
from services.gateway.inspector import pages_router
from services.gateway.inspector.live_slots import LiveSlots
from services.gateway.inspector.viewer import form_key
from services.gateway.mcp.endpoint import McpEndpoints
from services.gateway.mcp.settings_api import McpSettingsController
from services.gateway.mcp_connections import McpConnectionController
from services.gateway.observability import ObservabilityController
from services.gateway.schedules_api import ScheduleController
from services.gateway.skills import SkillController
from services.gateway.traces import TraceController
from services.gateway.users import UserController
from services.gateway.workflows import WorkflowController

SERVICE = "gateway"
MAX_BODY_BYTES = 4 * 1024 * 1024
log = logging.getLogger(__name__)


def _event_log_unavailable(request: Request[Any, Any, State], exc: Exception) -> Response[Any]:
    log.error("event log error on %s %s: %s", request.method, request.url.path, exc)
    return Response(
        {"status_code": 503, "detail": f"the event log is unavailable: {exc}"}, status_code=503
    )


def create_app(settings: Settings, ctx: ServiceContext | None = None) -> Litestar:
    secrets_box = SecretBox.from_setting(settings.require_secret_key())  # fail before opening
    context = ctx or ServiceContext(SERVICE, settings)
    mcp = McpEndpoints(settings)
    a2a = A2AEndpoints(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        await context.open()
        await context.broker.start()
        app.state.ctx = context
        app.state.settings = settings
        app.state.secrets = secrets_box
        app.state.token_key = signing_key(settings.require_secret_key())
        app.state.form_key = form_key(settings.require_secret_key())
        context.ready()
        try:
            yield
        finally:
            context.state = "stopping"
            await context.broker.stop()
            await context.close()

    return Litestar(
        route_handlers=[
            HealthController,
            EventDocsController,
            WorkflowController,
            AgentMemoryController,
            CredentialController,
            ExecuteController,
            HistoryController,
            ExpressionController,
            TraceController,
            SkillController,
            FileController,
            McpConnectionController,
            UserController,
            ChatController,
            McpSettingsController,
            ScheduleController,
            ExecutionTokenController,
            GlobalVariableController,
            ObservabilityController,
            HitlController,
            ReviewPageController,
            A2ASettingsController,
            pages_router(),
        ],
        lifespan=[lifespan, mcp.lifespan, a2a.lifespan],
        state=State({"mcp": mcp, "a2a": a2a, "live_slots": LiveSlots()}),
        openapi_config=OpenAPIConfig(title="Heym", version="0.1.0", path="/schema"),
        request_max_body_size=MAX_BODY_BYTES,
        middleware=[RequestGuard()],
        exception_handlers={
            EventLogError: _event_log_unavailable,
            ChatError: chat_error_handler,
            HTTP_500_INTERNAL_SERVER_ERROR: internal_error,
        },
    )


async def serve(settings: Settings) -> None:
    app = create_app(settings)
    config = uvicorn.Config(
        # the MCP and A2A transports answer their paths before Litestar
        app.state.a2a.wrap(app.state.mcp.wrap(app)),
        host=settings.http_host,
        port=settings.http_port,
        log_level=settings.log_level.lower(),
        lifespan="on",
        access_log=False,
    )
    await uvicorn.Server(config).serve()
