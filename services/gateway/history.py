"""Execution history: read from the `runs` / `run_nodes` read model (the scheduler projects it)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
from litestar import Controller, Request, get
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import ClientException, NotFoundException
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage

from libs.accounts import AccountUser
from libs.results import numbered
from services.gateway.auth import required_user
from services.gateway.workflows import owned

# The history stream polls the row (Heym: every second, a keep-alive every 15 s).
POLL_S = 1.0
KEEPALIVE_S = 15.0
STREAM_LIMIT_S = 3600.0
STATUSES = {"running", "success", "error", "pending", "cancelled", "cached", "rate_limited"}
MAX_OFFSET = 1_000_000_000


def _light(r: Any) -> dict[str, Any]:
    return {
        "id": r["run_id"],
        "workflow_id": r["workflow_id"],
        "workflow_name": r["workflow_name"],
        "status": r["status"],
        "execution_time_ms": r["execution_time_ms"],
        "started_at": (r["started_at"] or r["requested_at"]).isoformat(),
        "finished_at": r["finished_at"].isoformat() if r["finished_at"] else None,
        "trigger_source": r["trigger_source"],
    }


def _page(limit: int, offset: int) -> tuple[int, int]:
    if not 1 <= limit <= 500:
        raise ClientException(detail="limit must be between 1 and 500")
    if not 0 <= offset <= MAX_OFFSET:
        raise ClientException(detail=f"offset must be between 0 and {MAX_OFFSET}")
    return limit, offset


async def query_history(
    pool: asyncpg.Pool[Any],
    owner_id: str,
    *,
    limit: int,
    offset: int,
    workflow_id: str | None,
    status: str | None,
    trigger_source: str | None,
    search: str | None,
) -> dict[str, Any]:
    limit, offset = _page(limit, offset)
    if status is not None and status not in STATUSES:
        raise ClientException(detail=f"status must be one of {sorted(STATUSES)}")
    where = ["owner_id = $1", "test_run = false"]
    args: list[Any] = [owner_id]
    for column, value in (
        ("workflow_id", workflow_id),
        ("status", status),
        ("trigger_source", trigger_source),
    ):
        if value:
            args.append(value)
            where.append(f"{column} = ${len(args)}")
    if search:
        args.append(f"%{search}%")
        where.append(f"(workflow_name ILIKE ${len(args)} OR run_id ILIKE ${len(args)})")
    clause = " AND ".join(f"({w})" for w in where)
    total = await pool.fetchval(f"SELECT count(*) FROM runs WHERE {clause}", *args)
    rows = await pool.fetch(
        f"""SELECT run_id, workflow_id, workflow_name, status, execution_time_ms, requested_at,
                   started_at, finished_at, trigger_source
            FROM runs WHERE {clause} ORDER BY requested_at DESC
            LIMIT {limit} OFFSET {offset}""",
        *args,
    )
    return {"total": total, "items": [_light(r) for r in rows]}


async def history_entry(
    request: Request[Any, Any, State], owner_id: str, entry: str
) -> dict[str, Any]:
    pool = request.app.state.ctx.pool
    r = await pool.fetchrow(
        """SELECT run_id, workflow_id, workflow_name, owner_id, status, trigger_source, inputs,
                  outputs, error, requested_at, started_at, finished_at, execution_time_ms,
                  parent_run_id, http_status
           FROM runs WHERE run_id = $1 AND owner_id = $2 AND test_run = false""",
        entry,
        owner_id,
    )
    if r is None:
        raise NotFoundException(detail=f"no execution {entry}")
    nodes = await pool.fetch(
        """SELECT node_id, node_label, node_type, status, output, error, execution_time_ms, metadata
           FROM run_nodes WHERE run_id = $1 ORDER BY sequence""",
        entry,
    )
    return {
        **_light(r),
        "inputs": r["inputs"],
        "outputs": r["outputs"] or {},
        "error": r["error"],
        "parent_execution_id": r["parent_run_id"],
        "node_results": numbered([dict(n) for n in nodes]),
    }


async def _workflow_entry(
    request: Request[Any, Any, State], workflow_id: str, entry: str, user: AccountUser
) -> dict[str, Any]:
    await owned(request, workflow_id, user)
    found = await history_entry(request, user.id, entry)
    if found["workflow_id"] != workflow_id:
        raise NotFoundException(detail=f"no execution {entry} of workflow {workflow_id}")
    return found


class HistoryController(Controller):
    path = "/api/workflows"
    tags = ["history"]
    dependencies = {"user": Provide(required_user)}

    @get("/{workflow_id:str}/history", summary="A workflow's executions, newest first")
    async def for_workflow(
        self,
        request: Request[Any, Any, State],
        workflow_id: str,
        user: AccountUser,
        limit: int = 50,
        offset: int = 0,
        search: str | None = None,
        trigger_source: str | None = None,
        status: str | None = None,
    ) -> dict[str, Any]:
        await owned(request, workflow_id, user)
        return await query_history(
            request.app.state.ctx.pool,
            user.id,
            limit=limit,
            offset=offset,
            workflow_id=workflow_id,
            status=status,
            trigger_source=trigger_source,
            search=search,
        )

    @get("/{workflow_id:str}/history/{entry:str}", summary="One execution with its node results")
    async def entry(
        self, request: Request[Any, Any, State], workflow_id: str, entry: str, user: AccountUser
    ) -> dict[str, Any]:
        return await _workflow_entry(request, workflow_id, entry, user)

    @get(
        "/{workflow_id:str}/history/{entry:str}/stream",
        summary="Server-Sent Events of one execution's changes until it is no longer running",
    )
    async def entry_stream(
        self, request: Request[Any, Any, State], workflow_id: str, entry: str, user: AccountUser
    ) -> ServerSentEvent:
        first = await _workflow_entry(request, workflow_id, entry, user)

        async def changes() -> AsyncIterator[ServerSentEventMessage | str]:
            current, last_sent, quiet = first, None, 0.0
            deadline = time.monotonic() + STREAM_LIMIT_S
            while time.monotonic() < deadline:
                if current != last_sent:
                    last_sent = current
                    data = {"type": "history_update", "entry": current}
                    yield ServerSentEventMessage(data=json.dumps(data, default=str))
                    quiet = 0.0
                if current["status"] not in ("running", "pending"):
                    yield ServerSentEventMessage(data=json.dumps({"type": "done"}))
                    return
                await asyncio.sleep(POLL_S)
                quiet += POLL_S
                if quiet >= KEEPALIVE_S:
                    quiet = 0.0
                    yield ServerSentEventMessage(comment="keepalive")
                current = await history_entry(request, user.id, entry)

        return ServerSentEvent(changes())

    @get("/history/all", summary="All your executions, newest first")
    async def all_runs(
        self,
        request: Request[Any, Any, State],
        user: AccountUser,
        limit: int = 50,
        offset: int = 0,
        search: str | None = None,
        status: str | None = None,
        trigger_source: str | None = None,
        workflow_id: str | None = None,
    ) -> dict[str, Any]:
        if workflow_id is not None:
            try:
                uuid.UUID(workflow_id)
            except ValueError:
                raise ClientException(detail="workflow_id must be a UUID") from None
        return await query_history(
            request.app.state.ctx.pool,
            user.id,
            limit=limit,
            offset=offset,
            workflow_id=workflow_id,
            status=status,
            trigger_source=trigger_source,
            search=search,
        )

    @get("/history/all/{entry:str}", summary="One of your executions")
    async def any_entry(
        self, request: Request[Any, Any, State], entry: str, user: AccountUser
    ) -> dict[str, Any]:
        return await history_entry(request, user.id, entry)
