"""A workflow as the API shows it, and a save's fields merged over the stored row and checked.

Shared by `POST/PUT /api/workflows` (gateway) and the assistant's saves (agent runtime), so a
workflow the assistant writes is held to exactly the rules of the API.
"""

from __future__ import annotations

from typing import Any

from libs.schedules import CronError, cron_trigger
from libs.workflow.store import WorkflowRow
from libs.workflow.validation import validate_workflow

AUTH_TYPES = ("anonymous", "jwt", "header_auth")
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
    "mcp_enabled",
}


def workflow_json(row: WorkflowRow) -> dict[str, Any]:
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
        "mcp_enabled": row.mcp_enabled,
        "version": row.version,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def checked_fields(
    body: dict[str, Any], base: WorkflowRow | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Merge a request body over the stored workflow (an update may send only some fields);
    returns the fields and every problem found (none means the save may go ahead)."""
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
        "mcp_enabled": body.get("mcp_enabled", current.get("mcp_enabled", False)),
        "settings": {
            **(base.settings if base else {}),
            **{k: v for k, v in body.items() if k not in _COLUMNS and k not in _READ_ONLY},
        },
    }
    problems: list[dict[str, Any]] = []
    name = fields["name"]
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        problems.append({"field": "name", "message": "name must be a non-empty string (max 200)"})
    # Every column gets the type it is stored as; a wrong type must be a 422, not a 500.
    if not isinstance(fields["description"], str) or len(fields["description"]) > 10_000:
        problems.append({"field": "description", "message": "must be a string (max 10000)"})
    for header in ("auth_header_key", "auth_header_value"):
        value = fields[header]
        if value is not None and (not isinstance(value, str) or len(value) > 1_000):
            problems.append({"field": header, "message": "must be a string (max 1000) or null"})
    if fields["auth_type"] not in AUTH_TYPES:
        problems.append({"field": "auth_type", "message": f"auth_type must be one of {AUTH_TYPES}"})
    if fields["auth_type"] == "header_auth" and not (
        fields["auth_header_key"] and fields["auth_header_value"]
    ):
        problems.append(
            {"field": "auth_header_key", "message": "header_auth needs auth_header_key and value"}
        )
    if not isinstance(fields["sse_node_config"], dict):
        problems.append({"field": "sse_node_config", "message": "must be an object"})
    if not isinstance(fields["mcp_enabled"], bool):
        problems.append({"field": "mcp_enabled", "message": "mcp_enabled must be a boolean"})
    problems.extend(
        {
            "field": i.field,
            "node_id": i.node_id,
            "edge_id": i.edge_id,
            "code": i.code,
            "message": i.message,
        }
        for i in validate_workflow(fields["nodes"], fields["edges"])
    )
    if isinstance(fields["nodes"], list):
        try:
            cron_trigger(fields["nodes"])
        except CronError as exc:
            problems.append({"field": "nodes", "code": "cron_expression", "message": str(exc)})
    return fields, problems


def problem_summary(problems: list[dict[str, Any]]) -> str:
    return "invalid workflow: " + "; ".join(p["message"] for p in problems[:5])
