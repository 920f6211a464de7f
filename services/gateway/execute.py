"""`POST /api/workflows/{id}/execute` (sync), `/execute/stream` (SSE) and run cancellation.

The gateway validates, appends the run's request and answers from the run's own events;
runs are decided by the scheduler and executed by the services.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from litestar import Controller, Request, Response, post
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import (
    ClientException,
    NotAuthorizedException,
    NotFoundException,
    TooManyRequestsException,
)
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage

from contracts.runs import RunCompleted, WorkflowSnapshot
from libs.accounts import AccountUser
from libs.accounts.execution_tokens import verify as verify_execution_token
from libs.db.globals import global_values
from libs.results import numbered, sse_frames, strip_private
from libs.results.sub_runs import child_runs, sub_workflow_executions
from services.gateway import store, throttle
from services.gateway.auth import presented_execution_token, required_user, user_unless_token
from services.gateway.bodies import json_body
from services.gateway.openapi import EXECUTE, with_body
from services.gateway.review_links import public_base_url
from services.gateway.runs import (
    new_run_request,
    request_cancel,
    run_request,
    safe_headers,
    started_run,
    wait_for_outcome,
)
from services.gateway.workflows import not_found

INTERNAL_SOURCES = {"Canvas", "Quick Drawer"}
_WRAPPER_KEYS = {"inputs", "test_run", "trigger_source"}


def _truthy(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


async def _authorise(
    request: Request[Any, Any, State], row: store.WorkflowRow, user: AccountUser | None
) -> str:
    """Who the run belongs to; raises 401/404 per the workflow's `auth_type`.

    Another user's private workflow answers 404, as an unknown id does: its existence is
    not theirs to learn.
    """
    if user is not None and user.id == row.owner_id:
        return user.id
    if row.auth_type == "jwt" and (token := presented_execution_token(request)) is not None:
        state = request.app.state
        if await verify_execution_token(state.ctx.pool, state.token_key, token, row.id):
            return row.owner_id
        raise NotAuthorizedException(detail="the execution token is not valid for this workflow")
    if row.auth_type == "anonymous":
        return row.owner_id
    if row.auth_type == "header_auth" and row.auth_header_key:
        sent = request.headers.get(row.auth_header_key.lower())
        if sent is not None and sent == row.auth_header_value:
            return row.owner_id
        if user is None:
            raise NotAuthorizedException(detail=f"send the workflow's {row.auth_header_key} header")
    if user is None:
        raise NotAuthorizedException(
            detail="send an API key as 'X-MCP-Key: <key>' or 'Authorization: Bearer <key>'"
        )
    raise not_found(row.id)


class _Prepared:
    def __init__(
        self,
        row: store.WorkflowRow,
        owner: str,
        envelope: dict[str, Any],
        test_run: bool,
        source: str,
    ) -> None:
        self.row, self.owner, self.envelope, self.test_run, self.source = (
            row,
            owner,
            envelope,
            test_run,
            source,
        )


async def _prepare(
    request: Request[Any, Any, State], workflow_id: str, user: AccountUser | None
) -> _Prepared:
    ctx = request.app.state.ctx
    row = await store.get_workflow(ctx.pool, workflow_id)
    if row is None:
        raise not_found(workflow_id)
    owner = await _authorise(request, row, user)
    if not row.nodes:
        raise ClientException(detail="the workflow has no nodes")
    body = await json_body(request, empty={})
    # Test mode (pinned data, no history) and editor behaviour (trigger sources such as
    # Canvas, which may stream a workflow whose SSE is off) are the owner's choice only; for
    # anyone else these parameters are ordinary data of the request.
    by_owner = user is not None and user.id == row.owner_id
    test_run = False
    source = "API"
    query = dict(request.query_params.items())
    if by_owner:
        test_run = _truthy(query.pop("test_run", None), False)
        source = (
            query.pop("trigger_source", None) or request.headers.get("x-trigger-source") or "API"
        )
        if isinstance(body, dict) and "inputs" in body and set(body) <= _WRAPPER_KEYS:
            test_run = bool(body.get("test_run", test_run))
            source = str(body.get("trigger_source") or source)
            body = body["inputs"]
    envelope = {"headers": safe_headers(dict(request.headers)), "query": query, "body": body}
    return _Prepared(row, owner, envelope, test_run, source)


async def _run_request(request: Request[Any, Any, State], p: _Prepared) -> Any:
    ctx = request.app.state.ctx
    cache = await store.workflow_cache(ctx.pool, p.owner, p.row)
    snapshot = WorkflowSnapshot(id=p.row.id, name=p.row.name, nodes=p.row.nodes, edges=p.row.edges)
    run = new_run_request(
        workflow=snapshot,
        owner_id=p.owner,
        inputs=p.envelope,
        test_run=p.test_run,
        trigger_source=p.source,
        cache=cache,
        traceparent=request.headers.get("traceparent"),
    )
    # `$global` as it is now, snapshotted into the request (replay never reads the store).
    return msgspec.structs.replace(
        run,
        globals=await global_values(ctx.pool, p.owner),
        public_base_url=public_base_url(request),
    )


def _status_code(done: RunCompleted) -> int:
    if done.status == "cancelled":
        return 409
    if done.status == "error" and done.http_status:
        return done.http_status
    return 200


class _Gate:
    """What the rate limit and the cache said about a request (test runs skip both)."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.answer: Response[Any] | None = None
        self.cached_outputs: Any = None
        self.cache_key: str | None = None


async def _gate(request: Request[Any, Any, State], p: _Prepared) -> _Gate:
    gate = _Gate()
    if p.test_run:
        return gate
    pool = request.app.state.ctx.pool
    client = request.client.host if request.client else "unknown"
    limit = await throttle.check_rate(pool, p.row, client)
    if limit is not None:
        gate.headers = limit.headers
        if limit.limited:
            await throttle.record(
                pool,
                p.row,
                owner_id=p.owner,
                status="rate_limited",
                source=p.source,
                inputs=p.envelope,
            )
            gate.answer = Response(
                {"detail": "Rate limit exceeded"}, status_code=429, headers=limit.headers
            )
            return gate
    if throttle.cache_ttl(p.row):
        gate.cache_key = throttle.cache_key(p.row, p.envelope)
        hit = await throttle.cached(pool, p.row, gate.cache_key)
        if hit is not None:
            gate.cached_outputs = hit
            gate.headers = {**gate.headers, "X-Cache": "HIT"}
            await throttle.record(
                pool,
                p.row,
                owner_id=p.owner,
                status="cached",
                source=p.source,
                inputs=p.envelope,
                outputs=hit,
            )
    return gate


class ExecuteController(Controller):
    path = "/api/workflows/{workflow_id:str}"
    tags = ["execution"]

    @post(
        "/execute",
        summary="Run a workflow and answer with its outputs",
        dependencies={"user": Provide(user_unless_token)},
        operation_class=with_body(EXECUTE, required=False),
    )
    async def execute(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser | None
    ) -> Response[Any]:
        prepared = await _prepare(request, workflow_id, user)
        simple = _truthy(request.headers.get("x-simple-response"), True)
        gate = await _gate(request, prepared)
        if gate.answer is not None:
            return gate.answer
        if gate.cached_outputs is not None:
            outputs = strip_private(gate.cached_outputs)
            body: Any = (
                outputs
                if simple
                else {
                    "workflow_id": workflow_id,
                    "status": "success",
                    "outputs": outputs,
                    "node_results": [],
                    "execution_time_ms": 0.0,
                    "sub_workflow_executions": [],
                    "execution_history_id": None,
                    "cached": True,
                }
            )
            return Response(body, headers=gate.headers)
        run = await _run_request(request, prepared)
        settings = request.app.state.settings
        event_log = request.app.state.ctx.event_log
        async with started_run(event_log, run, watch=True) as (run_id, queue):
            outcome = await wait_for_outcome(
                event_log,
                run_id,
                queue,
                timeout=settings.execute_timeout_s,
                early_return=True,
                with_results=not simple,
            )
        ended = outcome.completed is not None or outcome.early is not None
        if not ended and outcome.paused is not None:
            # Paused for a human review (Heym §5.3): the pending outputs, status `pending`.
            paused = outcome.paused
            outputs, status, code, elapsed = (
                paused.outputs,
                "pending",
                200,
                paused.execution_time_ms,
            )
        elif not ended:
            return Response(
                {"execution_id": run_id, "status": "running", "execution_history_id": run_id},
                status_code=202,
            )
        elif outcome.early is not None:
            outputs, status, code, elapsed = outcome.early.outputs, "success", 200, 0.0
        else:
            done = outcome.completed
            assert done is not None
            if done.status == "cancelled":
                return Response(
                    {"detail": "Execution was cancelled", "execution_id": run_id}, status_code=409
                )
            outputs, status, code, elapsed = (
                done.outputs,
                done.status,
                _status_code(done),
                done.execution_time_ms,
            )
            if gate.cache_key is not None and done.status == "success":
                await throttle.store_outputs(
                    request.app.state.ctx.pool, prepared.row, gate.cache_key, done.outputs
                )
        if simple:
            return Response(strip_private(outputs), status_code=code, headers=gate.headers)
        return Response(
            {
                "workflow_id": workflow_id,
                "status": status,
                "outputs": strip_private(outputs),
                "node_results": numbered(outcome.node_results),
                "execution_time_ms": elapsed,
                "sub_workflow_executions": await sub_workflow_executions(
                    event_log, outcome.children
                ),
                "execution_history_id": None if prepared.test_run else run_id,
            },
            status_code=code,
            headers=gate.headers,
        )

    @post(
        "/execute/stream",
        summary="Run a workflow as a Server-Sent Events stream",
        status_code=200,
        dependencies={"user": Provide(user_unless_token)},
        operation_class=with_body(EXECUTE, required=False),
    )
    async def stream(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser | None
    ) -> ServerSentEvent:
        prepared = await _prepare(request, workflow_id, user)
        if not prepared.row.sse_enabled and prepared.source not in INTERNAL_SOURCES:
            raise ClientException(detail="SSE streaming is disabled for this workflow")
        gate = await _gate(request, prepared)
        if gate.answer is not None:
            raise TooManyRequestsException(detail="Rate limit exceeded", headers=gate.headers)
        if gate.cached_outputs is not None:
            return _cached_stream(workflow_id, strip_private(gate.cached_outputs), gate.headers)
        run = await _run_request(request, prepared)
        simple = _truthy(request.headers.get("x-simple-response"), True)
        messages = _start_messages(prepared.row)
        ctx = request.app.state.ctx

        async def frames() -> AsyncIterator[ServerSentEventMessage]:
            finished = False
            results: list[dict[str, Any]] = []
            children: list[str] = []
            async with started_run(ctx.event_log, run) as (run_id, queue):
                try:
                    while not finished:
                        env = await queue.get()
                        children.extend(child_runs([env]))
                        for frame in sse_frames(
                            env, workflow_id=workflow_id, node_messages=messages
                        ):
                            # Heym's `sequence` counts a run's result rows from 1.
                            row = _result_row(frame)
                            if row is not None:
                                row["metadata"]["sequence"] = len(results) + 1
                                results.append({k: v for k, v in row.items() if k != "type"})
                            if frame["type"] == "execution_complete":
                                finished = True
                                pending = frame["status"] == "pending"
                                if simple:
                                    frame = {
                                        "type": "execution_complete",
                                        "outputs": frame["outputs"],
                                    }
                                    if pending:  # the client needs it to follow the run
                                        frame["status"] = "pending"
                                        frame["execution_history_id"] = (
                                            None if prepared.test_run else run_id
                                        )
                                else:
                                    frame["node_results"] = results
                                    frame[
                                        "sub_workflow_executions"
                                    ] = await sub_workflow_executions(ctx.event_log, children)
                                    frame["execution_history_id"] = (
                                        None if prepared.test_run else run_id
                                    )
                            yield ServerSentEventMessage(data=json.dumps(frame, default=str))
                finally:
                    # The client went away: stop the run, as Heym does. A gateway that is
                    # shutting down leaves its runs alone: they do not depend on it.
                    if not finished and ctx.state != "stopping":
                        await request_cancel(ctx.event_log, run_id, "client disconnected")

        return ServerSentEvent(frames())

    @post(
        "/executions/{run_id:str}/cancel",
        summary="Cancel a running execution",
        dependencies={"user": Provide(required_user)},
        status_code=200,
    )
    async def cancel(
        self, request: Request[Any, Any, State], workflow_id: str, run_id: str, user: AccountUser
    ) -> dict[str, str]:
        ctx = request.app.state.ctx
        row = await store.get_workflow(ctx.pool, workflow_id)
        if row is None or row.owner_id != user.id:
            raise not_found(workflow_id)
        try:
            requested, finished = await run_request(ctx.event_log, run_id)
        except ValueError:
            requested, finished = None, False
        if requested is None or requested.workflow_id != workflow_id or finished:
            raise NotFoundException(
                detail=f"no running execution {run_id} of workflow {workflow_id}"
            )
        await request_cancel(ctx.event_log, run_id, f"cancelled by {user.email}")
        return {"status": "cancel_requested", "execution_id": run_id}


def _cached_stream(workflow_id: str, outputs: Any, headers: dict[str, str]) -> ServerSentEvent:
    frame = {
        "type": "execution_complete",
        "workflow_id": workflow_id,
        "status": "success",
        "outputs": outputs,
        "execution_time_ms": 0.0,
        "node_results": [],
        "sub_workflow_executions": [],
        "cached": True,
    }

    async def frames() -> AsyncIterator[ServerSentEventMessage]:
        yield ServerSentEventMessage(data=json.dumps(frame, default=str))

    return ServerSentEvent(frames(), headers=headers)


def _result_row(frame: dict[str, Any]) -> dict[str, Any] | None:
    """The node-result row a frame carries (a completion, or a retried attempt's row)."""
    if frame["type"] == "node_complete":
        return frame
    if frame["type"] == "node_retry":
        row: dict[str, Any] = frame["retry_result"]
        return row
    return None


def _start_messages(row: store.WorkflowRow) -> dict[str, str | None]:
    labels = {
        n.get("id"): (n.get("data") or {}).get("label", n.get("id"))
        for n in row.nodes
        if isinstance(n, dict)
    }
    out: dict[str, str | None] = {}
    for node_id, conf in (row.sse_node_config or {}).items():
        if not isinstance(conf, dict):
            continue
        if conf.get("send_start") is False:
            out[node_id] = None
        else:
            out[node_id] = conf.get("start_message") or f"[START] {labels.get(node_id, node_id)}"
    return out
