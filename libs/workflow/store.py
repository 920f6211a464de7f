"""Workflow configuration in Postgres: rows, versions, and the sub-workflow cache of a run."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import msgspec

from contracts.runs import WorkflowSnapshot
from libs.db import workflows as db_workflows
from libs.db.types import Conn

_COLUMNS = (
    "id, owner_id, name, description, nodes, edges, auth_type, auth_header_key, "
    "auth_header_value, sse_enabled, sse_node_config, settings, mcp_enabled, version, created_at, "
    "updated_at"
)


class WorkflowRow(msgspec.Struct, kw_only=True):
    id: str
    owner_id: str
    name: str
    description: str
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    auth_type: str
    auth_header_key: str | None
    auth_header_value: str | None
    sse_enabled: bool
    sse_node_config: dict[str, Any]
    settings: dict[str, Any]
    mcp_enabled: bool
    version: int
    created_at: str
    updated_at: str


def _row(r: asyncpg.Record) -> WorkflowRow:
    return WorkflowRow(
        id=str(r["id"]),
        owner_id=str(r["owner_id"]),
        name=r["name"],
        description=r["description"],
        nodes=r["nodes"],
        edges=r["edges"],
        auth_type=r["auth_type"],
        auth_header_key=r["auth_header_key"],
        auth_header_value=r["auth_header_value"],
        sse_enabled=r["sse_enabled"],
        sse_node_config=r["sse_node_config"],
        settings=r["settings"],
        mcp_enabled=r["mcp_enabled"],
        version=r["version"],
        created_at=r["created_at"].isoformat(),
        updated_at=r["updated_at"].isoformat(),
    )


def parse_id(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError):
        return None


async def get_workflow(conn: Conn | asyncpg.Pool[Any], workflow_id: str) -> WorkflowRow | None:
    wid = parse_id(workflow_id)
    if wid is None:
        return None
    r = await conn.fetchrow(f"SELECT {_COLUMNS} FROM workflows WHERE id = $1", wid)
    return _row(r) if r else None


async def list_workflows(conn: Conn | asyncpg.Pool[Any], owner_id: str) -> list[WorkflowRow]:
    rows = await conn.fetch(
        f"SELECT {_COLUMNS} FROM workflows WHERE owner_id = $1 ORDER BY updated_at DESC",
        uuid.UUID(owner_id),
    )
    return [_row(r) for r in rows]


# The columns a save writes, in the order both statements below bind them.
_EDITABLE = (
    "name",
    "description",
    "nodes",
    "edges",
    "auth_type",
    "auth_header_key",
    "auth_header_value",
    "sse_enabled",
    "sse_node_config",
    "settings",
    "mcp_enabled",
)


def _editable(fields: dict[str, Any]) -> list[Any]:
    return [fields[name] for name in _EDITABLE]


async def _saved(conn: Conn, r: asyncpg.Record | None) -> WorkflowRow:
    """Every save records a version of what was saved."""
    assert r is not None
    row = _row(r)
    await _record_version(conn, row)
    return row


async def insert_workflow(
    conn: Conn, owner_id: str, fields: dict[str, Any], *, workflow_id: uuid.UUID | None = None
) -> WorkflowRow:
    """Create a workflow. With a fixed `workflow_id` a repeated insert (a retried save) returns
    the row the first one made and records no second version."""
    wid = workflow_id or uuid.uuid4()
    r = await conn.fetchrow(
        f"""INSERT INTO workflows (id, owner_id, name, description, nodes, edges, auth_type,
                                   auth_header_key, auth_header_value, sse_enabled,
                                   sse_node_config, settings, mcp_enabled)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            ON CONFLICT (id) DO NOTHING RETURNING {_COLUMNS}""",
        wid,
        uuid.UUID(owner_id),
        *_editable(fields),
    )
    if r is None:
        existing = await conn.fetchrow(f"SELECT {_COLUMNS} FROM workflows WHERE id = $1", wid)
        if existing is None or str(existing["owner_id"]) != owner_id:
            raise ValueError(f"workflow id {wid} is taken")
        return _row(existing)
    return await _saved(conn, r)


async def update_workflow(conn: Conn, current: WorkflowRow, fields: dict[str, Any]) -> WorkflowRow:
    r = await conn.fetchrow(
        f"""UPDATE workflows SET name = $2, description = $3, nodes = $4, edges = $5,
                   auth_type = $6, auth_header_key = $7, auth_header_value = $8,
                   sse_enabled = $9, sse_node_config = $10, settings = $11,
                   mcp_enabled = $12, version = version + 1, updated_at = now()
            WHERE id = $1 RETURNING {_COLUMNS}""",
        uuid.UUID(current.id),
        *_editable(fields),
    )
    return await _saved(conn, r)


async def _record_version(conn: Conn, row: WorkflowRow) -> None:
    await conn.execute(
        """INSERT INTO workflow_versions (workflow_id, version, name, nodes, edges, settings)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        uuid.UUID(row.id),
        row.version,
        row.name,
        row.nodes,
        row.edges,
        row.settings,
    )


async def delete_workflow(conn: Conn | asyncpg.Pool[Any], workflow_id: str) -> None:
    await conn.execute("DELETE FROM workflows WHERE id = $1", uuid.UUID(workflow_id))


async def list_versions(conn: Conn | asyncpg.Pool[Any], workflow_id: str) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        """SELECT version, name, created_at, jsonb_array_length(nodes) AS node_count
           FROM workflow_versions WHERE workflow_id = $1 ORDER BY version DESC""",
        uuid.UUID(workflow_id),
    )
    return [
        {
            "version": r["version"],
            "name": r["name"],
            "created_at": r["created_at"].isoformat(),
            "node_count": r["node_count"],
        }
        for r in rows
    ]


async def workflow_cache(
    conn: Conn | asyncpg.Pool[Any], owner_id: str, root: WorkflowRow
) -> dict[str, WorkflowSnapshot]:
    """Every workflow reachable from `root` (Execute nodes, agent sub-workflows), same owner."""
    snapshot = WorkflowSnapshot(id=root.id, name=root.name, nodes=root.nodes, edges=root.edges)
    return await db_workflows.workflow_cache(conn, owner_id, snapshot)
