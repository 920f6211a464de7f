"""`ToolSpec` (a tool offered to the model, with where calls go) and what running one returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contracts.agents import ToolStatus


@dataclass
class ToolSpec:
    name: str
    source: str  # python | skill | mcp | a2a | sub_agent | sub_workflow | node_tool | hitl
    description: str
    parameters: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass
class ToolOutcome:
    result: Any
    status: ToolStatus = "success"
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def error(
        cls, message: str, status: ToolStatus = "error", extra: dict[str, Any] | None = None
    ) -> ToolOutcome:
        return cls(result={"error": message}, status=status, extra=extra or {})


def object_schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema
