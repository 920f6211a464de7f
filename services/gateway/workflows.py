"""`/api/workflows`: create, list, read, update (recording a version), delete, versions."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, delete, get, post, put
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException, NotFoundException

from libs.accounts import AccountUser
from libs.memory.erase import erase_workflow_memory
from libs.schedules import cron_trigger, put_schedule
from libs.workflow.fields import checked_fields, problem_summary, workflow_json
from services.gateway import store, throttle
from services.gateway.agent_checks import agent_problems
from services.gateway.auth import required_user
from services.gateway.bodies import json_object, refuse_nul
from services.gateway.openapi import WORKFLOW, WORKFLOW_LINKS, with_body


async def check_agents(
    request: Request[Any, Any, State], user: AccountUser, fields: dict[str, Any], wid: str | None
) -> None:
    """The agent-node checks that need the database (guardrail credential, memory shares)."""
    problems = await agent_problems(request.app.state.ctx.pool, user.id, wid, fields["nodes"])
    if problems:
        summary = "; ".join(p["message"] for p in problems[:5])
        raise HTTPException(status_code=422, detail=f"invalid workflow: {summary}", extra=problems)


def workflow_fields(body: dict[str, Any], base: store.WorkflowRow | None = None) -> dict[str, Any]:
    """Merge a request body over the stored workflow; 422 naming every problem found."""
    refuse_nul(body, "a workflow")
    fields, problems = checked_fields(body, base)
    problems.extend(throttle.settings_problems(fields["settings"]))
    if problems:
        raise HTTPException(status_code=422, detail=problem_summary(problems), extra=problems)
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
        await check_agents(request, user, fields, None)
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
        await check_agents(request, user, fields, workflow_id)
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
        ctx = request.app.state.ctx
        # Memory first: a failure here leaves the workflow in place, so a retry erases it.
        await erase_workflow_memory(ctx.nc, ctx.event_log, workflow_id)
        await store.delete_workflow(ctx.pool, workflow_id)
        await put_schedule(ctx.nc, workflow_id, None)

    @get("/{workflow_id:str}/versions", summary="The versions recorded by each save")
    async def versions(
        self, request: Request[Any, Any, State], workflow_id: str, user: AccountUser
    ) -> list[dict[str, Any]]:
        await owned(request, workflow_id, user)
        return await store.list_versions(request.app.state.ctx.pool, workflow_id)
