"""`list_workflows` and `get_workflow_definition` (Heym §12.2), scoped to the user."""

from __future__ import annotations

import contextlib
from typing import Any

from libs.workflow import store
from services.agent_runtime.assistant.tools.env import Outcome, ToolEnv, error, text_arg

CURL_CHARS = 500


def input_fields(nodes: list[dict[str, Any]]) -> list[str]:
    """The input keys a caller sends: the textInput nodes' `inputFields`, else `text`."""
    keys: list[str] = []
    for node in nodes:
        if isinstance(node, dict) and node.get("type") == "textInput":
            for f in (node.get("data") or {}).get("inputFields") or []:
                if isinstance(f, dict) and f.get("key") and str(f["key"]) not in keys:
                    keys.append(str(f["key"]))
    has_input = any(isinstance(n, dict) and n.get("type") == "textInput" for n in nodes)
    return keys or (["text"] if has_input else [])


def output_node(nodes: list[dict[str, Any]]) -> str | None:
    for node in nodes:
        if isinstance(node, dict) and node.get("type") in ("output", "jsonOutputMapper"):
            return str((node.get("data") or {}).get("label") or node.get("id"))
    return None


def light(row: store.WorkflowRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "description": row.description,
        "input_fields": input_fields(row.nodes),
        "output_node": output_node(row.nodes),
    }


async def owned(env: ToolEnv, workflow_id: str) -> store.WorkflowRow | None:
    row = await store.get_workflow(env.pool, workflow_id)
    return row if row is not None and row.owner_id == env.owner_id else None


async def list_workflows(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    rows = await store.list_workflows(env.pool, env.owner_id)
    return Outcome({"count": len(rows), "workflows": [light(r) for r in rows]})


async def get_workflow_definition(env: ToolEnv, args: dict[str, Any]) -> Outcome:
    row = await owned(env, text_arg(args, "workflow_id"))
    if row is None:
        return error("Workflow not found")
    if args.get("full_details") is True:
        return Outcome(
            {
                "name": row.name,
                "description": row.description,
                "nodes": row.nodes,
                "edges": row.edges,
            }
        )
    return Outcome(
        {
            "name": row.name,
            "nodes": [_node_summary(n) for n in row.nodes if isinstance(n, dict)],
            "edges": [
                {"source": e.get("source"), "target": e.get("target")}
                for e in row.edges
                if isinstance(e, dict)
            ],
        }
    )


def _node_summary(node: dict[str, Any]) -> dict[str, Any]:
    data = node.get("data") if isinstance(node.get("data"), dict) else {}
    assert isinstance(data, dict)
    out: dict[str, Any] = {"type": node.get("type"), "label": data.get("label")}
    if data.get("note"):
        out["note"] = data["note"]
    if data.get("cronExpression"):
        out["cron_expression"] = data["cronExpression"]
    if node.get("type") == "wait" and data.get("duration") is not None:
        with contextlib.suppress(TypeError, ValueError):
            out["duration_seconds"] = float(data["duration"]) / 1000
    if data.get("to"):
        out["to"] = data["to"]
    if isinstance(data.get("curl"), str):
        out["curl"] = data["curl"][:CURL_CHARS]
    return out
