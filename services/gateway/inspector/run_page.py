"""`/ui/runs/{id}`: a run's detail page, its live stream (the Debug panel) and its cancel
form. Another user's run, like an unknown one, answers 404."""

from __future__ import annotations

import time
from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import NotFoundException
from litestar.response import ServerSentEvent

from services.gateway.inspector import layout
from services.gateway.inspector.live import follow
from services.gateway.inspector.run_html import run_body
from services.gateway.inspector.run_reads import read_run, run_head
from services.gateway.inspector.viewer import Viewer, check_csrf, form_fields, viewer
from services.gateway.runs import request_cancel

MAX_RUN_ID = 128


def _missing(run_id: str) -> NotFoundException:
    return NotFoundException(detail=f"no run {run_id[:MAX_RUN_ID]}")


def _last_event_id(request: Request[Any, Any, State]) -> int:
    raw = request.headers.get("last-event-id", "")
    return int(raw) if raw.isdigit() and len(raw) < 20 else 0


class RunPagesController(Controller):
    path = "/ui/runs"
    include_in_schema = False
    dependencies = {"viewer": Provide(viewer)}

    @get("/{run_id:str}", summary="A run's detail: timeline, tool calls, inputs and outputs")
    async def detail(
        self, request: Request[Any, Any, State], run_id: str, viewer: Viewer
    ) -> Response[str]:
        started = time.perf_counter()
        data = await read_run(request.app.state.ctx.pool, viewer.user.id, run_id[:MAX_RUN_ID])
        if data is None:
            raise _missing(run_id)
        body = run_body(data, csrf=viewer.csrf)
        name = str(data.run["workflow_name"] or "Run")
        html = layout.page(f"{name} · run · Heym", body, email=viewer.user.email, csrf=viewer.csrf)
        took = (time.perf_counter() - started) * 1000
        return layout.respond(html, headers={"Server-Timing": f"render;dur={took:.1f}"})

    @get("/{run_id:str}/live", summary="The Debug panel's stream of a running run")
    async def live(
        self, request: Request[Any, Any, State], run_id: str, viewer: Viewer
    ) -> ServerSentEvent:
        ctx = request.app.state.ctx
        run = await run_head(ctx.pool, viewer.user.id, run_id[:MAX_RUN_ID])
        if run is None:
            raise _missing(run_id)
        after = _last_event_id(request)
        slots = request.app.state.live_slots
        rid, wid = str(run["run_id"]), str(run["workflow_id"])
        frames = follow(ctx, slots, viewer.user.id, rid, wid, after)
        return ServerSentEvent(frames, headers={"Cache-Control": "no-store"})

    @post("/{run_id:str}/cancel", summary="Cancel a running run", status_code=303)
    async def cancel(
        self, request: Request[Any, Any, State], run_id: str, viewer: Viewer
    ) -> Response[Any]:
        fields = await form_fields(request)
        check_csrf(request, fields, viewer.csrf)
        ctx = request.app.state.ctx
        run = await run_head(ctx.pool, viewer.user.id, run_id[:MAX_RUN_ID])
        if run is None:
            raise _missing(run_id)
        rid = str(run["run_id"])
        if run["status"] in ("running", "pending"):
            await request_cancel(ctx.event_log, rid, f"cancelled by {viewer.user.email}")
        return Response(b"", status_code=303, headers={"Location": f"/ui/runs/{rid}"})
