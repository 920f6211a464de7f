"""Agent memory over REST (Heym §7): read a node's graph, and edit it by hand.

Reads come from the memory read model; every edit is decided against the graph's own events
and appended to `heym.memory.<workflow>.<node>` with the subject's expected sequence (the same
events as extraction, naming the user who wrote them), then the answer waits briefly until
the projection shows it, so a following read sees the edit. Only the workflow's owner sees or
edits its memory; anyone else gets 404, as for a workflow that does not exist.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from litestar import Controller, Request, delete, get, post, put
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException, NotFoundException

from contracts.base import Event
from contracts.memory import MemoryOrigin
from libs.accounts import AccountUser
from libs.memory import edits, read_model
from libs.memory.graph import MemoryGraph
from libs.memory.writer import MemoryBusy, MemoryWriter
from services.gateway import store
from services.gateway.auth import required_user
from services.gateway.bodies import json_object

PROJECTION_WAIT_S = 5.0


async def _workflow(
    request: Request[Any, Any, State], workflow_id: str, user: AccountUser
) -> store.WorkflowRow:
    row = await store.get_workflow(request.app.state.ctx.pool, workflow_id)
    if row is None or row.owner_id != user.id:
        raise NotFoundException(detail=f"workflow {workflow_id} not found")
    return row


def _agent_node(row: store.WorkflowRow, node_id: str) -> None:
    if not any(n.get("id") == node_id and n.get("type") == "agent" for n in row.nodes):
        raise NotFoundException(detail=f"workflow {row.id} has no agent node {node_id!r}")


async def _edit(
    request: Request[Any, Any, State],
    workflow_id: str,
    node_id: str,
    decide: Callable[[MemoryGraph], list[Event]],
) -> int:
    ctx = request.app.state.ctx
    try:
        change = await MemoryWriter(ctx.event_log).change(workflow_id, node_id, decide)
    except edits.EditRefused as exc:
        raise HTTPException(status_code=exc.status, detail=str(exc)) from None
    except MemoryBusy as exc:
        raise HTTPException(status_code=409, detail=str(exc)) from None
    await _projected(request, workflow_id, node_id, change.sequence)
    return change.sequence


async def _projected(
    request: Request[Any, Any, State], workflow_id: str, node_id: str, sequence: int
) -> None:
    """Wait (briefly) until the read model shows the edit; an edit is durable either way."""
    pool = request.app.state.ctx.pool
    deadline = time.monotonic() + PROJECTION_WAIT_S
    while time.monotonic() < deadline:
        if await read_model.projected_sequence(pool, workflow_id, node_id) >= sequence:
            return
        await asyncio.sleep(0.02)


def _origin(user: AccountUser) -> MemoryOrigin:
    return MemoryOrigin(source="api", user_id=user.id)


def _graph_of(workflow_id: str, found: tuple[str, str] | None, what: str) -> str:
    """The canvas node whose graph holds the entity or relationship (of this workflow)."""
    if found is None or found[0] != workflow_id:
        raise NotFoundException(detail=f"memory {what} not found")
    return found[1]


class AgentMemoryController(Controller):
    path = "/api/workflows"
    tags = ["agent memory"]
    dependencies = {"user": Provide(required_user)}

    @get(
        "/{workflow_id:str}/nodes/{node_id:str}/agent-memory/graph",
        summary="An agent node's memory graph: entities (nodes) and relationships (edges)",
    )
    async def graph(
        self, request: Request[Any, Any, State], workflow_id: str, node_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await _workflow(request, workflow_id, user)
        return await read_model.graph_json(request.app.state.ctx.pool, row.id, node_id)

    @post(
        "/{workflow_id:str}/nodes/{node_id:str}/agent-memory/nodes",
        summary="Add an entity to an agent node's memory",
        status_code=201,
    )
    async def create_entity(
        self, request: Request[Any, Any, State], workflow_id: str, node_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await _workflow(request, workflow_id, user)
        _agent_node(row, node_id)
        try:
            fields = edits.entity_fields(await json_object(request), partial=False)
        except edits.EditRefused as exc:
            raise HTTPException(status_code=exc.status, detail=str(exc)) from None
        new_id = str(uuid.uuid4())
        origin = _origin(user)
        await _edit(
            request, row.id, node_id, lambda g: edits.create_entity(g, fields, origin, new_id)
        )
        return await self._entity(request, new_id)

    @post(
        "/{workflow_id:str}/nodes/{node_id:str}/agent-memory/edges",
        summary="Add a relationship between two entities (by name) of an agent node's memory",
        status_code=201,
    )
    async def create_relationship(
        self, request: Request[Any, Any, State], workflow_id: str, node_id: str, user: AccountUser
    ) -> dict[str, Any]:
        row = await _workflow(request, workflow_id, user)
        _agent_node(row, node_id)
        body = await json_object(request)
        try:
            fields = edits.relationship_fields(body, partial=False)
        except edits.EditRefused as exc:
            raise HTTPException(status_code=exc.status, detail=str(exc)) from None
        new_id = str(uuid.uuid4())
        origin = _origin(user)
        await _edit(
            request,
            row.id,
            node_id,
            lambda g: edits.create_relationship(
                g,
                body.get("source_entity_name"),
                body.get("target_entity_name"),
                fields,
                origin,
                new_id,
            ),
        )
        return await self._relationship(request, new_id)

    @put("/{workflow_id:str}/agent-memory/nodes/{entity_id:str}", summary="Change an entity")
    async def update_entity(
        self,
        request: Request[Any, Any, State],
        workflow_id: str,
        entity_id: str,
        user: AccountUser,
    ) -> dict[str, Any]:
        row = await _workflow(request, workflow_id, user)
        pool = request.app.state.ctx.pool
        node_id = _graph_of(row.id, await read_model.entity_graph(pool, entity_id), "entity")
        try:
            fields = edits.entity_fields(await json_object(request), partial=True)
        except edits.EditRefused as exc:
            raise HTTPException(status_code=exc.status, detail=str(exc)) from None
        origin = _origin(user)
        await _edit(
            request, row.id, node_id, lambda g: edits.update_entity(g, entity_id, fields, origin)
        )
        return await self._entity(request, entity_id)

    @delete(
        "/{workflow_id:str}/agent-memory/nodes/{entity_id:str}",
        summary="Remove an entity (and its relationships)",
        status_code=200,
    )
    async def delete_entity(
        self,
        request: Request[Any, Any, State],
        workflow_id: str,
        entity_id: str,
        user: AccountUser,
    ) -> dict[str, str]:
        row = await _workflow(request, workflow_id, user)
        pool = request.app.state.ctx.pool
        node_id = _graph_of(row.id, await read_model.entity_graph(pool, entity_id), "entity")
        origin = _origin(user)
        await _edit(request, row.id, node_id, lambda g: edits.delete_entity(g, entity_id, origin))
        return {"status": "deleted"}

    @put(
        "/{workflow_id:str}/agent-memory/edges/{relationship_id:str}",
        summary="Change a relationship",
    )
    async def update_relationship(
        self,
        request: Request[Any, Any, State],
        workflow_id: str,
        relationship_id: str,
        user: AccountUser,
    ) -> dict[str, Any]:
        row = await _workflow(request, workflow_id, user)
        pool = request.app.state.ctx.pool
        node_id = _graph_of(
            row.id,
            await read_model.relationship_graph(pool, relationship_id),
            "relationship",
        )
        try:
            fields = edits.relationship_fields(await json_object(request), partial=True)
        except edits.EditRefused as exc:
            raise HTTPException(status_code=exc.status, detail=str(exc)) from None
        origin = _origin(user)
        await _edit(
            request,
            row.id,
            node_id,
            lambda g: edits.update_relationship(g, relationship_id, fields, origin),
        )
        return await self._relationship(request, relationship_id)

    @delete(
        "/{workflow_id:str}/agent-memory/edges/{relationship_id:str}",
        summary="Remove a relationship",
        status_code=200,
    )
    async def delete_relationship(
        self,
        request: Request[Any, Any, State],
        workflow_id: str,
        relationship_id: str,
        user: AccountUser,
    ) -> dict[str, str]:
        row = await _workflow(request, workflow_id, user)
        pool = request.app.state.ctx.pool
        node_id = _graph_of(
            row.id,
            await read_model.relationship_graph(pool, relationship_id),
            "relationship",
        )
        origin = _origin(user)
        await _edit(
            request,
            row.id,
            node_id,
            lambda g: edits.delete_relationship(g, relationship_id, origin),
        )
        return {"status": "deleted"}

    @staticmethod
    async def _entity(request: Request[Any, Any, State], entity_id: str) -> dict[str, Any]:
        found = await read_model.entity_row(request.app.state.ctx.pool, entity_id)
        return found if found is not None else {"id": entity_id, "status": "recorded"}

    @staticmethod
    async def _relationship(
        request: Request[Any, Any, State], relationship_id: str
    ) -> dict[str, Any]:
        found = await read_model.relationship_row(request.app.state.ctx.pool, relationship_id)
        return found if found is not None else {"id": relationship_id, "status": "recorded"}
