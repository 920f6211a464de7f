"""Loading a workflow to run it: its snapshot and every sub-workflow it can reach (by owner)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from contracts.runs import WorkflowSnapshot
from libs.db.types import Conn


def parse_id(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError):
        return None


def referenced_workflows(nodes: list[dict[str, Any]]) -> set[str]:
    """Workflow ids a run may start: Execute nodes' targets and agents' sub-workflows."""
    found: set[str] = set()
    for node in nodes:
        data = node.get("data") if isinstance(node, dict) else None
        if not isinstance(data, dict):
            continue
        if node.get("type") == "execute" and data.get("executeWorkflowId"):
            found.add(str(data["executeWorkflowId"]))
        for wid in data.get("subWorkflowIds") or []:
            found.add(str(wid))
    return found


async def load_snapshot(
    conn: Conn | asyncpg.Pool[Any], workflow_id: str
) -> tuple[WorkflowSnapshot, str] | None:
    """A workflow as it is now, with its owner's id; None if there is no such workflow."""
    wid = parse_id(workflow_id)
    if wid is None:
        return None
    r = await conn.fetchrow(
        "SELECT id, owner_id, name, nodes, edges FROM workflows WHERE id = $1", wid
    )
    if r is None:
        return None
    snapshot = WorkflowSnapshot(id=str(r["id"]), name=r["name"], nodes=r["nodes"], edges=r["edges"])
    return snapshot, str(r["owner_id"])


async def workflow_cache(
    conn: Conn | asyncpg.Pool[Any], owner_id: str, root: WorkflowSnapshot
) -> dict[str, WorkflowSnapshot]:
    """Every workflow reachable from `root` through Execute nodes and agent sub-workflows,
    owned by the same user, loaded once so the run never reads configuration again."""
    cache: dict[str, WorkflowSnapshot] = {}
    pending = referenced_workflows(root.nodes)
    while pending:
        ids = [u for u in (parse_id(w) for w in pending - cache.keys()) if u is not None]
        pending = set()
        if not ids:
            break
        rows = await conn.fetch(
            "SELECT id, name, nodes, edges FROM workflows WHERE id = ANY($1::uuid[])"
            " AND owner_id = $2",
            ids,
            uuid.UUID(owner_id),
        )
        for r in rows:
            snap = WorkflowSnapshot(
                id=str(r["id"]), name=r["name"], nodes=r["nodes"], edges=r["edges"]
            )
            cache[snap.id] = snap
            pending |= referenced_workflows(snap.nodes) - cache.keys()
    if root.id not in cache:
        cache[root.id] = root
    return cache
