"""Request bodies in the OpenAPI document for handlers that parse their JSON body themselves.

Handlers read bodies with `bodies.json_object` (clear 400s for bad JSON, depth and NUL
checks), so Litestar cannot see their shape; `with_body(schema)` is the `operation_class` of
such a route and adds the JSON Schema of its body to the document. Clients and the fuzzing
suite (schemathesis) read it from `/schema/openapi.json`.
"""

from __future__ import annotations

from typing import Any

from litestar.openapi.spec import Operation

_TEXT = {"type": "string", "maxLength": 200}

NODE: dict[str, Any] = {
    "type": "object",
    "required": ["id", "type", "data"],
    "properties": {
        "id": {"type": "string"},
        "type": {"type": "string"},
        "position": {"type": "object"},
        "data": {
            "type": "object",
            "required": ["label"],
            "properties": {"label": {"type": "string"}},
        },
    },
}
EDGE: dict[str, Any] = {
    "type": "object",
    "required": ["source", "target"],
    "properties": {
        "id": {"type": "string"},
        "source": {"type": "string"},
        "target": {"type": "string"},
        "sourceHandle": {"type": ["string", "null"]},
        "targetHandle": {"type": ["string", "null"]},
    },
}
WORKFLOW: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": _TEXT,
        "description": {"type": "string"},
        "nodes": {"type": "array", "items": NODE},
        "edges": {"type": "array", "items": EDGE},
        "auth_type": {"enum": ["anonymous", "jwt", "header_auth"]},
        "auth_header_key": {"type": ["string", "null"]},
        "auth_header_value": {"type": ["string", "null"]},
        "sse_enabled": {"type": "boolean"},
        "sse_node_config": {"type": "object"},
    },
}
CREDENTIAL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": _TEXT,
        "type": {"enum": ["openai", "custom", "google"]},
        "base_url": {"type": ["string", "null"]},
        "api_key": {"type": "string"},
    },
}
EXECUTE: dict[str, Any] = {
    "description": "The run's input: any JSON, or {inputs, test_run?, trigger_source?} "
    "(the wrapper keys count only for the workflow's owner)",
}
EVALUATE: dict[str, Any] = {
    "type": "object",
    "required": ["expression"],
    "properties": {
        "expression": {"type": "string", "maxLength": 10_000},
        "workflow_id": {"type": ["string", "null"]},
        "current_node_id": {"type": ["string", "null"]},
        "field_name": {"type": ["string", "null"]},
        "input_body": {},
        "selected_loop_iteration_index": {"type": ["integer", "null"]},
        "node_results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "node_id": {"type": "string"},
                    "label": {"type": "string"},
                    "output": {},
                },
            },
        },
    },
    "additionalProperties": False,
}
NEW_USER: dict[str, Any] = {
    "type": "object",
    "required": ["email"],
    "properties": {"email": {"type": "string"}, "name": _TEXT, "is_admin": {"type": "boolean"}},
    "additionalProperties": False,
}
NEW_KEY: dict[str, Any] = {
    "type": "object",
    "properties": {"name": _TEXT},
    "additionalProperties": False,
}


def links(path: str, methods: tuple[str, ...], **parameters: str) -> dict[str, Any]:
    """OpenAPI links from a 201 answer to the operations on the resource it created."""
    pointer = path.replace("~", "~0").replace("/", "~1")
    return {
        f"{method.capitalize()}{path.rsplit('/', 1)[-1].strip('{}').title().replace('_', '')}": {
            "operationRef": f"#/paths/{pointer}/{method}",
            "parameters": {name: f"$response.body#/{field}" for name, field in parameters.items()},
        }
        for method in methods
    }


def with_body(
    schema: dict[str, Any], *, required: bool = True, created: dict[str, Any] | None = None
) -> type[Operation]:
    """An `operation_class` that documents a JSON request body with ``schema`` and, with
    ``created``, the links from its 201 answer (clients and stateful fuzzing follow them)."""

    class WithJsonBody(Operation):
        def to_schema(self) -> dict[str, Any]:
            out = super().to_schema()
            out["requestBody"] = {
                "required": required,
                "content": {"application/json": {"schema": schema}},
            }
            if created and "201" in out.get("responses", {}):
                out["responses"]["201"]["links"] = created
            return out

    return WithJsonBody


WORKFLOW_LINKS = {
    **links("/api/workflows/{workflow_id}", ("get", "put", "delete"), workflow_id="id"),
    **links("/api/workflows/{workflow_id}/versions", ("get",), workflow_id="id"),
    **links("/api/workflows/{workflow_id}/history", ("get",), workflow_id="id"),
    **links("/api/workflows/{workflow_id}/execute", ("post",), workflow_id="id"),
}
CREDENTIAL_LINKS = links(
    "/api/credentials/{credential_id}", ("get", "put", "delete"), credential_id="id"
)
USER_LINKS = links("/api/users/{user_id}/api-keys", ("get", "post"), user_id="id")
KEY_LINKS = links(
    "/api/users/{user_id}/api-keys/{key_id}", ("delete",), user_id="user_id", key_id="id"
)
