"""What the run detail reads: a run, the child runs it started (to depth 5), their node rows
and their human review pauses, all from read models (`runs`, `run_nodes`,
`review_requests`), in four queries whatever the size of the tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import asyncpg

MAX_DEPTH = 5
# Child runs read for one detail page (beyond, the page says some are left out).
MAX_CHILD_RUNS = 200

_RUN_COLUMNS = """run_id, workflow_id, workflow_name, status, trigger_source, inputs, outputs,
                  error, requested_at, started_at, finished_at, execution_time_ms,
                  parent_run_id, parent_invocation_id, http_status"""


@dataclass
class RunData:
    run: dict[str, Any]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    children: list[RunData] = field(default_factory=list)
    pauses: list[dict[str, Any]] = field(default_factory=list)
    children_left_out: bool = False


async def run_head(pool: asyncpg.Pool[Any], owner_id: str, run_id: str) -> dict[str, Any] | None:
    """The run's id, workflow and status, if it is the owner's."""
    row = await pool.fetchrow(
        "SELECT run_id, workflow_id, status FROM runs "
        "WHERE run_id = $1 AND owner_id = $2 AND test_run = false",
        run_id,
        owner_id,
    )
    return dict(row) if row is not None else None


async def run_status(pool: asyncpg.Pool[Any], owner_id: str, run_id: str) -> str | None:
    status: str | None = await pool.fetchval(
        "SELECT status FROM runs WHERE run_id = $1 AND owner_id = $2 AND test_run = false",
        run_id,
        owner_id,
    )
    return status


async def read_run(pool: asyncpg.Pool[Any], owner_id: str, run_id: str) -> RunData | None:
    """The run and everything its detail shows; None when it is not the owner's."""
    row = await pool.fetchrow(
        f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = $1 AND owner_id = $2 AND test_run = false",
        run_id,
        owner_id,
    )
    if row is None:
        return None
    root = RunData(run=dict(row))
    by_id = {run_id: root}
    frontier = [run_id]
    for _ in range(MAX_DEPTH):
        remaining = MAX_CHILD_RUNS - (len(by_id) - 1)
        if not frontier or remaining <= 0:
            break
        rows = await pool.fetch(
            f"SELECT {_RUN_COLUMNS} FROM runs "
            "WHERE parent_run_id = ANY($1::text[]) AND owner_id = $2 "
            "ORDER BY requested_at LIMIT $3",
            frontier,
            owner_id,
            remaining + 1,
        )
        if len(rows) > remaining:
            root.children_left_out = True
            rows = rows[:remaining]
        frontier = []
        for child in rows:
            data = RunData(run=dict(child))
            by_id[child["run_id"]] = data
            by_id[child["parent_run_id"]].children.append(data)
            frontier.append(child["run_id"])
    ids = list(by_id)
    for node in await pool.fetch(
        """SELECT run_id, invocation_id, node_id, node_label, node_type, status, output, error,
                  execution_time_ms, metadata, sequence
           FROM run_nodes WHERE run_id = ANY($1::text[]) ORDER BY run_id, sequence""",
        ids,
    ):
        by_id[node["run_id"]].nodes.append(dict(node))
    for pause in await pool.fetch(
        """SELECT run_id, invocation_id, request_id, status, review_url, agent_label,
                  created_at, resolved_at, expires_at
           FROM review_requests WHERE run_id = ANY($1::text[]) ORDER BY created_at""",
        ids,
    ):
        by_id[pause["run_id"]].pauses.append(dict(pause))
    return root


async def nodes_reached(pool: asyncpg.Pool[Any], run_id: str) -> int:
    """The log position of the newest node row projected for the run (0 if none)."""
    value: int | None = await pool.fetchval(
        "SELECT max(sequence) FROM run_nodes WHERE run_id = $1", run_id
    )
    return value or 0
