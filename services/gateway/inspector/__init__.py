"""The run inspector: Execution History, run detail with its timeline and Debug panel, and
the Traces tab, as server-rendered pages under `/ui` (sign-in with an API key)."""

from __future__ import annotations

from litestar import Router

from services.gateway.inspector.errors import HANDLERS
from services.gateway.inspector.history_pages import HistoryPagesController
from services.gateway.inspector.run_page import RunPagesController
from services.gateway.inspector.signin import SignInController
from services.gateway.inspector.trace_pages import TracePagesController
from services.gateway.web.assets import StaticController


def pages_router() -> Router:
    """Every inspector route, with the page-shaped error handlers."""
    return Router(
        path="/",
        route_handlers=[
            SignInController,
            HistoryPagesController,
            RunPagesController,
            TracePagesController,
            StaticController,
        ],
        exception_handlers=HANDLERS,
        include_in_schema=False,
    )


__all__ = ["pages_router"]
