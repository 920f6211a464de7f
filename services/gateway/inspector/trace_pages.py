"""`/ui/traces`: the viewer's LLM traces (those of `GET /api/traces`, from the same query),
a list with source, model, tokens, elapsed and status, and each trace's request and response
as stored (redacted and bounded by the agent runtime); compressions show their before and
after token estimates."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from litestar import Controller, Request, Response, get
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ClientException

from services.gateway.inspector import layout
from services.gateway.inspector.fragments import (
    badge,
    duration,
    json_block,
    mapping,
    number,
    options,
    pager,
    query,
    when,
)
from services.gateway.inspector.viewer import Viewer, viewer
from services.gateway.traces import query_traces, trace_by_id

PAGE = 50
MAX_FILTER = 200
REQUEST_TYPES = ("chat.completions", "context.compression")
STATUSES = [("", "any status"), ("success", "success"), ("error", "error")]
# A stored trace is bounded (32 KiB of tool payloads), but the messages around them are not.
TRACE_BLOCK_CHARS = 200_000


def readable(value: Any, depth: int = 0) -> Any:
    """Tool-call `arguments` are JSON text as the model sent it: shown parsed, so a value and
    its redaction read as they would in the arguments (display only; depth-bounded)."""
    if depth > 12:
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "arguments" and isinstance(v, str) and v.startswith("{"):
                try:
                    out[k] = json.loads(v)
                    continue
                except ValueError:
                    pass
            out[k] = readable(v, depth + 1)
        return out
    if isinstance(value, list):
        return [readable(v, depth + 1) for v in value]
    return value


def _status(t: dict[str, Any]) -> str:
    return "error" if t.get("error") else "success"


def _filters(params: dict[str, Any]) -> str:
    kinds = [("", "any request type"), *((k, k) for k in REQUEST_TYPES)]
    run = params.get("run_id")
    hidden = f'<input type=hidden name=run_id value="{escape(run)}">' if run else ""
    return (
        "<form class=filters method=get action=/ui/traces role=search>"
        f"{hidden}<label>Search<input type=search name=search maxlength=200 "
        f'value="{escape(params.get("search") or "")}" placeholder="model or node"></label>'
        f"<label>Type<select name=request_type>{options(kinds, params.get('request_type'))}"
        "</select></label>"
        f"<label>Status<select name=status>{options(STATUSES, params.get('status'))}"
        "</select></label>"
        f'<label>Source<input type=text name=source maxlength=100 value="'
        f'{escape(params.get("source") or "")}"></label>'
        "<button class=primary type=submit>Filter</button></form>"
    )


def _table(items: list[dict[str, Any]]) -> str:
    if not items:
        return "<p class='card meta' id=no-traces>No traces match.</p>"
    rows = []
    for t in items:
        tid = escape(str(t["id"]))
        rows.append(
            f'<tr data-trace-id="{tid}" data-request-type="{escape(str(t["request_type"]))}">'
            f'<td data-label=When><a href="/ui/traces/{tid}">{when(t["created_at"])}</a></td>'
            f"<td data-label=Source>{escape(str(t.get('source') or ''))}</td>"
            f"<td data-label=Type>{escape(str(t.get('request_type') or ''))}</td>"
            f"<td class=wrap data-label=Node>{escape(str(t.get('node_label') or ''))}</td>"
            f"<td data-label=Model>{escape(str(t.get('model') or ''))}</td>"
            f"<td class=num data-label=Prompt>{number(t.get('prompt_tokens'))}</td>"
            f"<td class=num data-label=Completion>{number(t.get('completion_tokens'))}</td>"
            f"<td class=num data-label=Total>{number(t.get('total_tokens'))}</td>"
            f"<td class=num data-label=Elapsed>{duration(t.get('elapsed_ms'))}</td>"
            f"<td data-label=Status>{badge(_status(t))}</td></tr>"
        )
    head = (
        "<th>When</th><th>Source</th><th>Type</th><th>Node</th><th>Model</th>"
        "<th class=num>Prompt</th><th class=num>Completion</th><th class=num>Total</th>"
        "<th class=num>Elapsed</th><th>Status</th>"
    )
    return (
        "<div class=scroll><table class=list id=traces>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _compression(t: dict[str, Any]) -> str:
    request = mapping(t.get("request"))
    response = mapping(t.get("response"))
    return (
        "<div class=card id=compression><h2>Context compression</h2><dl class=facts>"
        f"<dt>Before</dt><dd>{number(request.get('messages_before'))} messages, about "
        f"{number(request.get('tokens_estimated_before'))} tokens</dd>"
        f"<dt>After</dt><dd>{number(response.get('messages_after'))} messages, about "
        f"{number(response.get('tokens_estimated_after'))} tokens</dd></dl></div>"
    )


def _detail(t: dict[str, Any]) -> str:
    run = t.get("run_id")
    run_link = (
        f' · <a href="/ui/runs/{escape(str(run))}">the run</a>'
        if run and t.get("workflow_id")
        else ""
    )
    facts = (
        "<dl class='card facts'>"
        f"<dt>When</dt><dd>{when(t['created_at'])}</dd>"
        f"<dt>Source</dt><dd>{escape(str(t.get('source') or ''))}</dd>"
        f"<dt>Node</dt><dd>{escape(str(t.get('node_label') or ''))}</dd>"
        f"<dt>Model</dt><dd>{escape(str(t.get('model') or ''))}</dd>"
        f"<dt>Provider</dt><dd>{escape(str(t.get('provider') or ''))}</dd>"
        f"<dt>Tokens</dt><dd>{number(t.get('prompt_tokens'))} prompt, "
        f"{number(t.get('completion_tokens'))} completion, {number(t.get('total_tokens'))}"
        " total</dd>"
        f"<dt>Elapsed</dt><dd>{duration(t.get('elapsed_ms'))}</dd>"
        f"<dt>Status</dt><dd>{badge(_status(t))}</dd></dl>"
    )
    error = (
        f"<div class=problem><pre class=json>{escape(str(t['error']))}</pre></div>"
        if t.get("error")
        else ""
    )
    compression = _compression(t) if t.get("request_type") == "context.compression" else ""
    return (
        f"<h1>{escape(str(t.get('request_type') or 'trace'))}</h1>"
        f"<p class=meta>Trace <span class=mono>{escape(str(t['id']))}</span>{run_link}</p>"
        f"{facts}{error}{compression}"
        "<h2>Request</h2><p class=meta>As stored: secrets redacted, large values cut.</p>"
        f"<div id=trace-request>"
        f"{json_block(readable(t.get('request')), limit=TRACE_BLOCK_CHARS)}</div>"
        f"<h2>Response</h2><div id=trace-response>"
        f"{json_block(readable(t.get('response')), limit=TRACE_BLOCK_CHARS)}</div>"
    )


class TracePagesController(Controller):
    path = "/ui/traces"
    include_in_schema = False
    dependencies = {"viewer": Provide(viewer)}

    @get("", summary="The viewer's LLM traces")
    async def list_page(
        self,
        request: Request[Any, Any, State],
        viewer: Viewer,
        offset: int = 0,
        request_type: str | None = None,
        source: str | None = None,
        search: str | None = None,
        run_id: str | None = None,
        status: str | None = None,
    ) -> Response[str]:
        params: dict[str, Any] = {
            "request_type": request_type or None,
            "status": status or None,
            "source": source or None,
            "search": search or None,
            "run_id": run_id or None,
        }
        if any(isinstance(v, str) and len(v) > MAX_FILTER for v in params.values()):
            raise ClientException(detail="a filter is too long")
        if offset < 0:
            raise ClientException(detail="the offset must not be negative")
        found = await query_traces(
            request.app.state.ctx.pool, viewer.user.id, limit=PAGE, offset=offset, **params
        )
        scope = ""
        if run_id:
            scope = (
                f'<p class=meta>The LLM calls of <a href="/ui/runs/{escape(run_id)}">run '
                f"<span class=mono>{escape(run_id[:12])}</span></a> · "
                f'<a href="{query("/ui/traces", {})}">all traces</a></p>'
            )
        body = (
            f"<h1>LLM traces</h1>{scope}{_filters(params)}{_table(found['items'])}"
            f"{pager('/ui/traces', params, total=found['total'], limit=PAGE, offset=offset)}"
        )
        html = layout.page(
            "Traces · Heym", body, email=viewer.user.email, csrf=viewer.csrf, active="traces"
        )
        return layout.respond(html)

    @get("/{trace_id:str}", summary="One LLM trace")
    async def detail(
        self, request: Request[Any, Any, State], viewer: Viewer, trace_id: str
    ) -> Response[str]:
        found = await trace_by_id(request.app.state.ctx.pool, viewer.user.id, trace_id[:200])
        html = layout.page(
            "Trace · Heym", _detail(found), email=viewer.user.email, csrf=viewer.csrf,
            active="traces",
        )  # fmt: skip
        return layout.respond(html)
