"""`/api/workflows`: create, list, read, update (recording a version), delete, versions."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, post, put
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException, NotFoundException

from libs.accounts import AccountUser
from libs.schedules import CronError, cron_trigger, put_schedule
from libs.workflow import validate_workflow
from services.gateway import store, throttle
from services.gateway.auth import required_user
from services.gateway.bodies import json_object, refuse_nul
from services.gateway.openapi import WORKFLOW, WORKFLOW_LINKS, with_body

_AUTH_TYPES = ("anonymous", "jwt", "header_auth")
_READ_ONLY = {"id", "owner_id", "created_at", "updated_at", "version"}
_COLUMNS = {
    "name",
    "description",
    "nodes",
    "edges",
    "auth_type",
    "auth_header_key",
    "auth_header_value",
    "sse_enabled",
    "sse_node_config",
}


def workflow_json(row: store.WorkflowRow) -> dict[str, Any]:
    return {
        **row.settings,
        "id": row.id,
        "owner_id": row.owner_id,
        "name": row.name,
        "description": row.description,
        "nodes": row.nodes,
        "edges": row.edges,
        "auth_type": row.auth_type,
        "auth_header_key": row.auth_header_key,
        "auth_header_value": row.auth_header_value,
        "sse_enabled": row.sse_enabled,
        "sse_node_config": row.sse_node_config,
        "version": row.version,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def workflow_fields(body: dict[str, Any], base: store.WorkflowRow | None = None) -> dict[str, Any]:
    """Merge a request body over the stored workflow (PUT may send only some fields)."""
    refuse_nul(body, "a workflow")
    current: dict[str, Any] = workflow_json(base) if base else {}
    fields = {
        "name": body.get("name", current.get("name")),
        "description": body.get("description", current.get("description", "")) or "",
        "nodes": body.get("nodes", current.get("nodes", [])),
        "edges": body.get("edges", current.get("edges", [])),
        "auth_type": body.get("auth_type", current.get("auth_type", "jwt")),
        "auth_header_key": body.get("auth_header_key", current.get("auth_header_key")),
        "auth_header_value": body.get("auth_header_value", current.get("auth_header_value")),
        "sse_enabled": bool(body.get("sse_enabled", current.get("sse_enabled", False))),
        "sse_node_config": body.get("sse_node_config", current.get("sse_node_config")) or {},
        "settings": {
            **(base.settings if base else {}),
            **{k: v for k, v in body.items() if k not in _COLUMNS and k not in _READ_ONLY},
        },
    }
    problems: list[dict[str, Any]] = []
    name = fields["name"]
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        problems.append({"field": "name", "message": "name must be a non-empty string (max 200)"})
    if fields["auth_type"] not in _AUTH_TYPES:
        problems.append(
            {"field": "auth_type", "message": f"auth_type must be one of {_AUTH_TYPES}"}
        )
    if fields["auth_type"] == "header_auth" and not (
        fields["auth_header_key"] and fields["auth_header_value"]
    ):
        problems.append(
            {"field": "auth_header_key", "message": "header_auth needs auth_header_key and value"}
        )
    if not isinstance(fields["sse_node_config"], dict):
        problems.append({"field": "sse_node_config", "message": "must be an object"})
    # Every column gets the type it is stored as; a wrong type must be a 422, not a 500.
    if not isinstance(fields["description"], str) or len(fields["description"]) > 10_000:
        problems.append({"field": "description", "message": "must be a string (max 10000)"})
    for header in ("auth_header_key", "auth_header_value"):
        value = fields[header]
        if value is not None and (not isinstance(value, str) or len(value) > 1_000):
            problems.append({"field": header, "message": "must be a string (max 1000) or null"})
    issues = validate_workflow(fields["nodes"], fields["edges"])
    problems.extend(
        {
            "field": i.field,
            "node_id": i.node_id,
            "edge_id": i.edge_id,
            "code": i.code,
            "message": i.message,
        }
        for i in issues
    )
    problems.extend(throttle.settings_problems(fields["settings"]))
    try:
        if isinstance(fields["nodes"], list):  # anything else is reported above
            cron_trigger(fields["nodes"])
    except CronError as exc:
        problems.append({"field": "nodes", "code": "cron_expression", "message": str(exc)})
    if problems:
        summary = "; ".join(p["message"] for p in problems[:5])
        raise HTTPException(status_code=422, detail=f"invalid workflow: {summary}", extra=problems)
    return fields


async def owned(
    request: Request[Any, Any, State], workflow_id: str, user: AccountUser
) -> store.WorkflowRow:
    """The user's workflow; another user's answers 404 exactly like an unknown id."""
    row = await store.get_workflow(request.app.state.ctx.pool, workflow_id)
    if row is None or row.owner_id != user.id:
        raise not_found(workflow_id)
    return row


def not_found(workflow_id: str) -> NotFoundException:
    return NotFoundException(detail=f"workflow {workflow_id} not found")


class WorkflowController(Controller):
    path = "/api/workflows"
    tags = ["workflows"]
    dependencies = {"user": Provide(required_user)}

    @post(
        "",
        summary="Create a workflow",
        status_code=201,
        operation_class=with_body(WORKFLOW, created=WORKFLOW_LINKS),
    )
    async def create(self, request: Request[Any, Any, State], user: AccountUser) -> dict[str, Any]:
        fields = workflow_fields(await json_object(request))
        ctx = request.app.state.ctx
        async with ctx.pool.acquire() as conn, conn.transaction():
            row = await store.insert_workflow(conn, user.id, fields)
            # Before the commit: a schedule that cannot be written fails the save. A save that
            # fails after it leaves a schedule the scheduler checks against the row per tick.
            await put_schedule(ctx.nc, row.id, cron_trigger(row.nodes))
        return workflow_json(row)

    @get("", summary="Your workflows, most recently changed first")
    async def list_all(
        self, request: Request[Any, Any, State], user: AccountUser
    ) -> list[dict[str, Any]]:
        rows = await store.list_workflows(request.app.state.ctx.pool, user.id)
        return [
            {
                "id": r.id,
                "name": r.name,
                "description": r.description,
                "version": r.version,
                "node_count": len(r.nodes),
                "first_node_type": r.nodes[0].get("type") if r.nodes else None,
                "updated_at": r.updated_at,
            }
            for r in rows
        ]

    @get("/{workflow_id:str}", summary="One workflow")
    async def read(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser
    ) -> dict[str, Any]:
        return workflow_json(await owned(request, workflow_id, user))

    @put(
        "/{workflow_id:str}",
        summary="Update a workflow (records a new version)",
        operation_class=with_body(WORKFLOW),
    )
    async def update(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser
    ) -> dict[str, Any]:
        current = await owned(request, workflow_id, user)
        fields = workflow_fields(await json_object(request), current)
        ctx = request.app.state.ctx
        async with ctx.pool.acquire() as conn, conn.transaction():
            row = await store.update_workflow(conn, current, fields)
            await put_schedule(ctx.nc, row.id, cron_trigger(row.nodes))
        return workflow_json(row)

    @delete("/{workflow_id:str}", summary="Delete a workflow", status_code=204)
    async def remove(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser
    ) -> None:
        await owned(request, workflow_id, user)
        await store.delete_workflow(request.app.state.ctx.pool, workflow_id)
        await put_schedule(request.app.state.ctx.nc, workflow_id, None)

    @get("/{workflow_id:str}/versions", summary="The versions recorded by each save")
    async def versions(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser
    ) -> list[dict[str, Any]]:
        await owned(request, workflow_id, user)
        return await store.list_versions(request.app.state.ctx.pool, workflow_id)
