"""The run detail page: facts, the review link of a paused run, the timeline, inputs and
outputs; for a running run also the Debug panel, which htmx fills from the run's live stream
(`/ui/runs/{id}/live`: entries appended, the timeline and status swapped, closed at the end)."""

from __future__ import annotations

import time
from html import escape
from typing import Any

from services.gateway.inspector.fragments import badge, duration, number, query, safe_link, when
from services.gateway.inspector.run_reads import RunData
from services.gateway.inspector.timeline import build
from services.gateway.inspector.timeline_html import Budget, timeline

LIVE_STATUSES = ("running",)


def now_ms() -> int:
    return int(time.time() * 1000)


def timeline_fragment(data: RunData, budget: Budget | None = None) -> str:
    now = now_ms()
    root, axis = build(data, now)
    left_out = (
        "<p class=meta>Only the first 200 sub-workflow runs are shown.</p>"
        if data.children_left_out
        else ""
    )
    return timeline(root, axis, now, budget) + left_out


def _pending_reviews(data: RunData) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = [data]
    while stack:
        item = stack.pop()
        found.extend(p for p in item.pauses if p["status"] == "pending")
        stack.extend(item.children)
    return found


def notice(data: RunData) -> str:
    """What the viewer must know first: a paused run's review link(s)."""
    if data.run["status"] != "pending":
        return ""
    links = []
    for pause in _pending_reviews(data):
        link = safe_link(pause.get("review_url"))
        if link:
            agent = escape(str(pause.get("agent_label") or "an agent"))
            links.append(
                f'<li><a class=review-link href="{escape(link)}" rel="noopener noreferrer">'
                f"Open the review page</a> ({agent}; expires {when(pause.get('expires_at'))})</li>"
            )
    items = f"<ul>{''.join(links)}</ul>" if links else ""
    return f"<div class=notice id=pending-notice><b>Waiting for a human review.</b>{items}</div>"


def status_badge(status: str) -> str:
    return badge(status, id="status-badge", **{"data-status": status})


def run_body(data: RunData, *, csrf: str) -> str:
    run = data.run
    rid = escape(str(run["run_id"]))
    status = str(run["status"])
    live = status in LIVE_STATUSES
    workflow = escape(str(run["workflow_name"] or "workflow"))
    wf_link = f'<a href="/ui/workflows/{escape(str(run["workflow_id"]))}/history">{workflow}</a>'
    parent = ""
    if run.get("parent_run_id"):
        pid = escape(str(run["parent_run_id"]))
        parent = f' · started by <a href="/ui/runs/{pid}">run {pid[:8]}</a>'
    traces = query("/ui/traces", {"run_id": run["run_id"]})
    facts = (
        "<dl class='card facts'>"
        f"<dt>Requested</dt><dd>{when(run.get('requested_at'))}</dd>"
        f"<dt>Started</dt><dd>{when(run.get('started_at'))}</dd>"
        f"<dt>Finished</dt><dd>{when(run.get('finished_at'))}</dd>"
        f"<dt>Duration</dt><dd>{duration(run.get('execution_time_ms'))}</dd>"
        f"<dt>Trigger</dt><dd>{escape(str(run.get('trigger_source') or ''))}</dd>"
        + (
            f"<dt>HTTP status</dt><dd>{number(run['http_status'])}</dd>"
            if run.get("http_status")
            else ""
        )
        + "</dl>"
    )
    error = (
        f"<div class=problem><b>Error</b><pre class=json>{escape(str(run['error']))}</pre></div>"
        if run.get("error")
        else ""
    )
    cancel = ""
    if status in ("running", "pending"):
        cancel = (
            f'<form method=post action="/ui/runs/{rid}/cancel" class=cancel>'
            f'<input type=hidden name=csrf value="{escape(csrf)}">'
            "<button class=danger type=submit id=cancel-run>Cancel run</button></form>"
        )
    debug = ""
    sse = ""
    if live:
        sse = f' hx-ext=sse sse-connect="/ui/runs/{rid}/live" sse-close=done'
        debug = (
            "<section id=debug-panel><h2><span class=live-dot></span>Debug panel "
            "<span class=meta id=live-state sse-swap=live>following the run live</span></h2>"
            "<div class=debug><ol id=debug-log sse-swap=entry hx-swap=beforeend></ol></div>"
            "</section>"
        )
    budget = Budget()
    return (
        f'<div id=run data-run-id="{rid}"{sse}>'
        f"<h1>{wf_link} <span id=run-status sse-swap=status>{status_badge(status)}</span></h1>"
        f"<p class=meta>Run <span class=mono>{rid}</span>{parent} · "
        f'<a href="{traces}" id=run-traces>LLM traces of this run</a></p>'
        f"<div id=run-notice sse-swap=notice>{notice(data)}</div>"
        f"{facts}{error}{cancel}{debug}"
        "<h2>Timeline</h2>"
        f"<div id=timeline sse-swap=timeline>{timeline_fragment(data, budget)}</div>"
        "<h2>Outputs</h2>"
        f"<div class=card id=outputs>{budget.block(run.get('outputs') or {}, 'outputs')}</div>"
        "<details class='card block'><summary>Inputs</summary>"
        f"<div id=inputs>{budget.block(run.get('inputs') or {}, 'inputs')}</div></details>"
        "</div>"
    )
