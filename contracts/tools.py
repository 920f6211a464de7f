"""Tool calls the agent runtime sends to the tool sandbox (python tools, skills, MCP):
request/reply on `heym.query.tool_sandbox.run_tool`."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from contracts.subjects import query

TOOL_SUBJECT: Final = query("tool_sandbox", "run_tool")


class SandboxToolRequest(msgspec.Struct, kw_only=True):
    source: str
    name: str
    arguments: dict[str, Any]
    meta: dict[str, Any]
    timeout_s: float
    run_id: str
    invocation_id: str
    tool_call_id: str


class SandboxToolReply(msgspec.Struct, kw_only=True):
    result: Any = None
    error: str | None = None
    status: str = "success"
