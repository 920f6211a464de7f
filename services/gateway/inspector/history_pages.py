"""`/ui/history` and `/ui/workflows/{id}/history`: the viewer's runs, newest first, with the
history API's filters (status, trigger source, search) and paging, from the same query."""

from __future__ import annotations

import time
from html import escape
from typing import Any

from litestar import Controller, Request, Response, get
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ClientException

from services.gateway.history import STATUSES, query_history
from services.gateway.inspector import layout
from services.gateway.inspector.fragments import badge, duration, options, pager, query, when
from services.gateway.inspector.viewer import Viewer, viewer
from services.gateway.workflows import owned

PAGE_SIZES = (25, 50, 100, 200)
MAX_SEARCH = 200
TRIGGER_SOURCES = (
    "API", "MCP", "SUB_WORKFLOW", "AI Agents", "Canvas", "Quick Drawer", "cron",
    "dashboard_chat",
)  # fmt: skip


def _filters(
    path: str,
    *,
    status: str | None,
    trigger_source: str | None,
    search: str | None,
    limit: int,
) -> str:
    statuses = [("", "any status"), *((s, s) for s in sorted(STATUSES))]
    sources = [("", "any trigger"), *((s, s) for s in TRIGGER_SOURCES)]
    if trigger_source and trigger_source not in TRIGGER_SOURCES:
        sources.append((trigger_source, trigger_source))
    sizes = [(str(n), f"{n} a page") for n in PAGE_SIZES]
    return (
        f'<form class=filters method=get action="{escape(path)}" role=search>'
        "<label>Search<input type=search name=search maxlength=200 "
        f'value="{escape(search or "")}" placeholder="workflow name or run id"></label>'
        f"<label>Status<select name=status>{options(statuses, status)}</select></label>"
        f"<label>Trigger<select name=trigger_source>{options(sources, trigger_source)}"
        "</select></label>"
        f"<label>Page<select name=limit>{options(sizes, str(limit))}</select></label>"
        "<button class=primary type=submit>Filter</button></form>"
    )


def _table(items: list[dict[str, Any]], *, show_workflow: bool) -> str:
    if not items:
        return "<p class='card meta' id=no-runs>No runs match.</p>"
    head = "<th>Status</th>" + ("<th>Workflow</th>" if show_workflow else "")
    head += "<th>Started</th><th class=num>Duration</th><th>Trigger</th><th>Run</th>"
    rows = []
    for r in items:
        rid = escape(str(r["id"]))
        workflow = ""
        if show_workflow:
            href = f"/ui/workflows/{escape(str(r['workflow_id']))}/history"
            workflow = (
                f'<td class=wrap data-label=Workflow><a href="{href}">'
                f"{escape(r['workflow_name'] or '-')}</a></td>"
            )
        rows.append(
            f'<tr data-run-id="{rid}" data-status="{escape(str(r["status"]))}">'
            f"<td data-label=Status>{badge(r['status'])}</td>{workflow}"
            f'<td data-label=Started><a href="/ui/runs/{rid}">{when(r["started_at"])}</a></td>'
            f"<td class=num data-label=Duration>{duration(r['execution_time_ms'])}</td>"
            f"<td data-label=Trigger>{escape(str(r['trigger_source'] or ''))}</td>"
            f'<td data-label=Run><a class=mono href="/ui/runs/{rid}">{rid[:12]}</a></td></tr>'
        )
    return (
        "<div class=scroll><table class=list id=runs>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _check(
    limit: int, offset: int, status: str | None, search: str | None, trigger_source: str | None
) -> None:
    if limit not in PAGE_SIZES:
        raise ClientException(detail=f"the page size must be one of {PAGE_SIZES}")
    if offset < 0:
        raise ClientException(detail="the offset must not be negative")
    if status and status not in STATUSES:
        raise ClientException(detail="unknown status")
    if search and len(search) > MAX_SEARCH:
        raise ClientException(detail="the search is too long")
    if trigger_source and len(trigger_source) > MAX_SEARCH:
        raise ClientException(detail="the trigger source is too long")


async def _page(
    request: Request[Any, Any, State],
    viewer: Viewer,
    *,
    title: str,
    intro: str,
    path: str,
    workflow_id: str | None,
    limit: int,
    offset: int,
    status: str | None,
    trigger_source: str | None,
    search: str | None,
) -> Response[str]:
    started = time.perf_counter()
    status, trigger_source, search = status or None, trigger_source or None, search or None
    _check(limit, offset, status, search, trigger_source)
    found = await query_history(
        request.app.state.ctx.pool,
        viewer.user.id,
        limit=limit,
        offset=offset,
        workflow_id=workflow_id,
        status=status,
        trigger_source=trigger_source,
        search=search,
    )
    params = {
        "status": status,
        "trigger_source": trigger_source,
        "search": search,
        "limit": limit if limit != 50 else None,
    }
    paging = pager(path, params, total=found["total"], limit=limit, offset=offset)
    form = _filters(path, status=status, trigger_source=trigger_source, search=search, limit=limit)
    body = (
        f"<h1>{escape(title)}</h1>{intro}{form}"
        f"{_table(found['items'], show_workflow=workflow_id is None)}{paging}"
    )
    html = layout.page(
        f"{title} · Heym", body, email=viewer.user.email, csrf=viewer.csrf, active="history"
    )
    took = (time.perf_counter() - started) * 1000
    return layout.respond(html, headers={"Server-Timing": f"render;dur={took:.1f}"})


class HistoryPagesController(Controller):
    path = "/ui"
    include_in_schema = False
    dependencies = {"viewer": Provide(viewer)}

    @get("/history", summary="All the viewer's runs")
    async def all_runs(
        self,
        request: Request[Any, Any, State],
        viewer: Viewer,
        limit: int = 50,
        offset: int = 0,
        status: str | None = None,
        trigger_source: str | None = None,
        search: str | None = None,
    ) -> Response[str]:
        return await _page(
            request,
            viewer,
            title="Execution history",
            intro="<p class=meta>Every run of your workflows, newest first.</p>",
            path="/ui/history",
            workflow_id=None,
            limit=limit,
            offset=offset,
            status=status,
            trigger_source=trigger_source,
            search=search,
        )

    @get("/workflows/{workflow_id:str}/history", summary="One workflow's runs")
    async def workflow_runs(
        self,
        request: Request[Any, Any, State],
        viewer: Viewer,
        workflow_id: str,
        limit: int = 50,
        offset: int = 0,
        status: str | None = None,
        trigger_source: str | None = None,
        search: str | None = None,
    ) -> Response[str]:
        row = await owned(request, workflow_id, viewer.user)
        all_link = query("/ui/history", {})
        return await _page(
            request,
            viewer,
            title=f"{row.name or 'Workflow'}: history",
            intro=f'<p class=meta>Runs of this workflow, newest first. <a href="{all_link}">'
            "All runs</a></p>",
            path=f"/ui/workflows/{row.id}/history",
            workflow_id=row.id,
            limit=limit,
            offset=offset,
            status=status,
            trigger_source=trigger_source,
            search=search,
        )
