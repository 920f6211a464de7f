"""`Outcome`: what running one tool call produced, before it is recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contracts.agents import ToolStatus


@dataclass
class Outcome:
    result: Any
    status: ToolStatus = "success"
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def error(cls, message: str, *, status: ToolStatus = "error", **extra: Any) -> Outcome:
        return cls(result={"error": message}, status=status, extra=dict(extra))


class ToolFailure(Exception):
    """A tool call that cannot run (bad configuration, refused input); the model sees it."""

    def __init__(self, message: str, *, status: ToolStatus = "error") -> None:
        super().__init__(message)
        self.status: ToolStatus = status
