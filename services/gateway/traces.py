"""`GET /api/traces`, `GET /api/traces/{id}`: LLM traces (stored redacted and bounded)."""

from __future__ import annotations

from typing import Any

import asyncpg
from litestar import Controller, Request, get
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ClientException, NotFoundException

from libs.accounts import AccountUser
from services.gateway.auth import required_user

MAX_OFFSET = 1_000_000_000
_COLUMNS = """t.id, t.run_id, t.invocation_id, r.workflow_id,
              COALESCE(a.credential_id, t.credential_id) AS credential_id, a.node_id,
              a.node_label, t.source, t.session_id, t.request_type, t.provider, t.model, t.error,
              t.prompt_tokens, t.completion_tokens, t.total_tokens, t.elapsed_ms, t.created_at"""
# Workflow traces take their owner from the run; the assistant's (source dashboard_chat, one
# per model round, session_id = the conversation) carry their own.
_FROM = """llm_traces t LEFT JOIN runs r ON r.run_id = t.run_id
           LEFT JOIN agent_invocations a
             ON a.run_id = t.run_id AND a.invocation_id = t.invocation_id"""


def _row(r: Any, full: bool) -> dict[str, Any]:
    out = {k: v for k, v in r.items() if k not in ("request", "response", "created_at")}
    out["created_at"] = r["created_at"].isoformat()
    if full:
        out["request"] = r["request"]
        out["response"] = r["response"]
    return out


async def query_traces(
    pool: asyncpg.Pool[Any],
    owner_id: str,
    *,
    limit: int,
    offset: int,
    workflow_id: str | None = None,
    credential_id: str | None = None,
    request_type: str | None = None,
    source: str | None = None,
    status: str | None = None,
    search: str | None = None,
    run_id: str | None = None,
    order: str = "desc",
) -> dict[str, Any]:
    """A page of the owner's traces (no request/response bodies) and how many match."""
    if not 1 <= limit <= 200 or not 0 <= offset <= MAX_OFFSET:
        raise ClientException(detail=f"limit must be 1-200 and offset 0-{MAX_OFFSET}")
    if order not in ("asc", "desc"):
        raise ClientException(detail="order must be asc or desc")
    if status not in (None, "error", "success"):
        raise ClientException(detail="status must be error or success")
    where = ["COALESCE(r.owner_id, t.owner_id) = $1"]
    args: list[Any] = [owner_id]
    for column, value in (
        ("r.workflow_id", workflow_id),
        ("COALESCE(a.credential_id, t.credential_id)", credential_id),
        ("t.request_type", request_type),
        ("t.source", source),
        ("t.run_id", run_id),
    ):
        if value:
            args.append(value)
            where.append(f"{column} = ${len(args)}")
    if status:
        where.append("t.error IS NOT NULL" if status == "error" else "t.error IS NULL")
    if search:
        args.append(f"%{search}%")
        where.append(f"(t.model ILIKE ${len(args)} OR a.node_label ILIKE ${len(args)})")
    clause = " AND ".join(where)
    total = await pool.fetchval(f"SELECT count(*) FROM {_FROM} WHERE {clause}", *args)
    rows = await pool.fetch(
        f"SELECT {_COLUMNS} FROM {_FROM} WHERE {clause} "
        f"ORDER BY t.sequence {order} LIMIT {limit} OFFSET {offset}",
        *args,
    )
    return {"total": total, "items": [_row(r, full=False) for r in rows]}


async def trace_by_id(pool: asyncpg.Pool[Any], owner_id: str, trace_id: str) -> dict[str, Any]:
    r = await pool.fetchrow(
        f"SELECT {_COLUMNS}, t.request, t.response FROM {_FROM} "
        "WHERE t.id = $1 AND COALESCE(r.owner_id, t.owner_id) = $2",
        trace_id,
        owner_id,
    )
    if r is None:
        raise NotFoundException(detail=f"no trace {trace_id}")
    return _row(r, full=True)


class TraceController(Controller):
    path = "/api/traces"
    tags = ["traces"]
    dependencies = {"user": Provide(required_user)}

    @get("", summary="Your LLM traces, newest first")
    async def list_traces(
        self,
        request: Request[Any, Any, State],
        user: AccountUser,
        limit: int = 50,
        offset: int = 0,
        workflow_id: str | None = None,
        credential_id: str | None = None,
        request_type: str | None = None,
        source: str | None = None,
        status: str | None = None,
        search: str | None = None,
        run_id: str | None = None,
        order: str = "desc",
    ) -> dict[str, Any]:
        return await query_traces(
            request.app.state.ctx.pool,
            user.id,
            limit=limit,
            offset=offset,
            workflow_id=workflow_id,
            credential_id=credential_id,
            request_type=request_type,
            source=source,
            status=status,
            search=search,
            run_id=run_id,
            order=order,
        )

    @get("/{trace_id:str}", summary="One LLM trace with its (redacted) request and response")
    async def one(
        self, request: Request[Any, Any, State], trace_id: str, user: AccountUser
    ) -> dict[str, Any]:
        return await trace_by_id(request.app.state.ctx.pool, user.id, trace_id)
