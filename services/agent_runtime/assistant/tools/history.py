"""Reading the user's runs (Heym §12.2): recent executions (workflow runs and chat turns),
active runs, one workflow's run history, analytics. All from the read models, user-scoped."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from services.agent_runtime.assistant.tools.env import (
    Outcome,
    ToolEnv,
    error,
    int_arg,
    text_arg,
)
from services.agent_runtime.assistant.tools.workflows import owned

_RANGES = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
_STATUSES = ("running", "success", "error", "pending", "cancelled")


def since(time_range: str, default: str) -> datetime | None:
    span = _RANGES.get(time_range) if time_range in (*_RANGES, "all") else _RANGES.get(default)
    return datetime.now(UTC) - span if span is not None else None


def _clip(value: Any, limit: int) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) <= limit:
        return value
    return text[:limit] + "…"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


async def get_recent_executions(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    start = since(text_arg(args, "time_range", "24h"), "24h")
    limit = int_arg(args, "limit", 30, 1, 50)
    runs = await env.pool.fetch(
        """SELECT workflow_name, status, trigger_source, requested_at, execution_time_ms, outputs,
                  error
           FROM runs WHERE owner_id = $1 AND NOT test_run AND depth = 0
             AND ($2::timestamptz IS NULL OR requested_at >= $2)
           ORDER BY requested_at DESC LIMIT $3""",
        env.owner_id,
        start,
        limit,
    )
    turns = await env.pool.fetch(
        """SELECT content, status, reply, started_at, execution_time_ms FROM chat_turns
           WHERE owner_id = $1::uuid AND ($2::timestamptz IS NULL OR started_at >= $2)
           ORDER BY started_at DESC LIMIT $3""",
        env.owner_id,
        start,
        limit,
    )
    items = [
        {
            "workflow_name": r["workflow_name"],
            "run_type": "workflow",
            "started_at": _iso(r["requested_at"]),
            "status": r["status"],
            "execution_time_ms": r["execution_time_ms"],
            "trigger_source": r["trigger_source"],
            "output_summary": _clip(r["error"] or r["outputs"] or {}, 300),
        }
        for r in runs
    ] + [
        {
            "workflow_name": "Heym Agent",
            "run_type": "dashboard_chat",
            "started_at": _iso(t["started_at"]),
            "status": t["status"],
            "execution_time_ms": t["execution_time_ms"],
            "trigger_source": "dashboard_chat",
            "output_summary": _clip(t["reply"] or t["content"], 300),
        }
        for t in turns
    ]
    items.sort(key=lambda i: i["started_at"] or "", reverse=True)
    return Outcome({"count": len(items[:limit]), "executions": items[:limit]})


async def get_active_executions(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    rows = await env.pool.fetch(
        """SELECT r.run_id, r.workflow_id, r.workflow_name, r.status, r.requested_at,
                  (SELECT n.node_label FROM run_nodes n WHERE n.run_id = r.run_id
                   ORDER BY n.sequence DESC LIMIT 1) AS last_node
           FROM runs r WHERE r.owner_id = $1 AND r.status IN ('running', 'pending')
           ORDER BY r.requested_at DESC LIMIT 50""",
        env.owner_id,
    )
    now = datetime.now(UTC)
    executions = [
        {
            "execution_id": r["run_id"],
            "workflow_name": r["workflow_name"],
            "running_for": f"{int((now - r['requested_at']).total_seconds())}s",
            "current_nodes": [],
            "last_completed_node": r["last_node"],
            "url": f"/workflows/{r['workflow_id']}",
            "status": r["status"],
            "pending_kind": "hitl" if r["status"] == "pending" else None,
        }
        for r in rows
    ]
    running = sum(1 for e in executions if e["status"] == "running")
    return Outcome(
        {
            "count": len(executions),
            "running_count": running,
            "pending_count": len(executions) - running,
            "executions": executions,
        }
    )


async def get_workflow_run_history(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    row = await owned(env, text_arg(args, "workflow_id"))
    if row is None:
        return error("Workflow not found")
    execution_id = text_arg(args, "execution_id")
    if execution_id:
        return await _one_run(env, row.id, execution_id)
    start = since(text_arg(args, "time_range", "all"), "all")
    status = text_arg(args, "status") or None
    if status is not None and status not in _STATUSES:
        return error(f"status must be one of {list(_STATUSES)}")
    limit = int_arg(args, "limit", 20, 1, 50)
    offset = int_arg(args, "offset", 0, 0, 1_000_000)
    where = """owner_id = $1 AND workflow_id = $2 AND NOT test_run
               AND ($3::timestamptz IS NULL OR requested_at >= $3)"""
    stats = await env.pool.fetchrow(
        f"""SELECT count(*) AS total, min(requested_at) AS first_at, max(requested_at) AS last_at,
                   avg(execution_time_ms) AS avg_ms
            FROM runs WHERE {where}""",
        env.owner_id,
        row.id,
        start,
    )
    counts = await env.pool.fetch(
        f"SELECT status, count(*) AS n FROM runs WHERE {where} GROUP BY status",
        env.owner_id,
        row.id,
        start,
    )
    matching = await env.pool.fetchval(
        f"SELECT count(*) FROM runs WHERE {where} AND ($4::text IS NULL OR status = $4)",
        env.owner_id,
        row.id,
        start,
        status,
    )
    runs = await env.pool.fetch(
        f"""SELECT run_id, status, requested_at, execution_time_ms, trigger_source FROM runs
            WHERE {where} AND ($4::text IS NULL OR status = $4)
            ORDER BY requested_at DESC LIMIT $5 OFFSET $6""",
        env.owner_id,
        row.id,
        start,
        status,
        limit,
        offset,
    )
    listed = [
        {
            "execution_id": r["run_id"],
            "status": r["status"],
            "started_at": _iso(r["requested_at"]),
            "execution_time_ms": r["execution_time_ms"],
            "trigger_source": r["trigger_source"],
        }
        for r in runs
    ]
    assert stats is not None
    return Outcome(
        {
            "total_runs": stats["total"],
            "status_counts": {c["status"]: c["n"] for c in counts},
            "first_run_at": _iso(stats["first_at"]),
            "last_run_at": _iso(stats["last_at"]),
            "last_run": listed[0] if listed and offset == 0 else None,
            "avg_execution_time_ms": stats["avg_ms"],
            "matching_runs": matching,
            "returned": len(listed),
            "has_more": offset + len(listed) < matching,
            "runs": listed,
            "hint": "Pass execution_id to read one run's inputs, outputs and node results.",
        }
    )


async def _one_run(env: ToolEnv, workflow_id: str, execution_id: str) -> Outcome:
    r = await env.pool.fetchrow(
        """SELECT run_id, status, inputs, outputs, error, requested_at, finished_at,
                  execution_time_ms, trigger_source
           FROM runs WHERE run_id = $1 AND owner_id = $2 AND workflow_id = $3""",
        execution_id,
        env.owner_id,
        workflow_id,
    )
    if r is None:
        return error("Execution not found")
    nodes = await env.pool.fetch(
        """SELECT node_label, node_type, status, output, error, execution_time_ms FROM run_nodes
           WHERE run_id = $1 ORDER BY sequence LIMIT 41""",
        execution_id,
    )
    return Outcome(
        {
            "execution_id": r["run_id"],
            "status": r["status"],
            "started_at": _iso(r["requested_at"]),
            "finished_at": _iso(r["finished_at"]),
            "execution_time_ms": r["execution_time_ms"],
            "trigger_source": r["trigger_source"],
            "inputs": _clip(r["inputs"], 4000),
            "outputs": _clip(r["outputs"] or {}, 6000),
            "error": r["error"],
            "nodes": [
                {
                    "label": n["node_label"],
                    "type": n["node_type"],
                    "status": n["status"],
                    "output": _clip(n["output"], 1200),
                    "error": n["error"],
                    "execution_time_ms": n["execution_time_ms"],
                }
                for n in nodes[:40]
            ],
            "nodes_truncated": len(nodes) > 40,
            "recovered": False,
        }
    )


async def get_analytics_stats(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    workflow_id = text_arg(args, "workflow_id") or None
    if workflow_id is not None and await owned(env, workflow_id) is None:
        return error("Workflow not found")
    start = since(text_arg(args, "time_range", "24h"), "24h")
    day = datetime.now(UTC) - timedelta(hours=24)
    r = await env.pool.fetchrow(
        """SELECT count(*) AS total,
                  count(*) FILTER (WHERE status = 'success') AS ok,
                  count(*) FILTER (WHERE status = 'error') AS failed,
                  avg(execution_time_ms) AS avg_ms,
                  percentile_cont(0.5) WITHIN GROUP (ORDER BY execution_time_ms) AS p50,
                  percentile_cont(0.95) WITHIN GROUP (ORDER BY execution_time_ms) AS p95,
                  percentile_cont(0.99) WITHIN GROUP (ORDER BY execution_time_ms) AS p99,
                  count(*) FILTER (WHERE requested_at >= $4) AS total_24h,
                  count(*) FILTER (WHERE requested_at >= $4 AND status = 'success') AS ok_24h,
                  count(*) FILTER (WHERE requested_at >= $4 AND status = 'error') AS failed_24h
           FROM runs WHERE owner_id = $1 AND NOT test_run
             AND ($2::text IS NULL OR workflow_id = $2)
             AND ($3::timestamptz IS NULL OR requested_at >= $3)""",
        env.owner_id,
        workflow_id,
        start,
        day,
    )
    assert r is not None
    total = int(r["total"] or 0)

    def pct(n: int) -> float:
        return round(100.0 * n / total, 2) if total else 0.0

    def ms(value: Any) -> float | None:
        return round(float(value), 2) if value is not None else None

    return Outcome(
        {
            "total_executions": total,
            "success_count": r["ok"],
            "error_count": r["failed"],
            "success_rate": pct(int(r["ok"] or 0)),
            "error_rate": pct(int(r["failed"] or 0)),
            "avg_latency_ms": ms(r["avg_ms"]),
            "p50_latency_ms": ms(r["p50"]),
            "p95_latency_ms": ms(r["p95"]),
            "p99_latency_ms": ms(r["p99"]),
            "total_executions_24h": r["total_24h"],
            "success_count_24h": r["ok_24h"],
            "error_count_24h": r["failed_24h"],
        }
    )
