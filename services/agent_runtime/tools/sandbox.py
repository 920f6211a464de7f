"""Tools the tool sandbox executes (python tools, skills, MCP), reached by request/reply."""

from __future__ import annotations

from typing import Any

import msgspec
import nats.errors
from nats.aio.client import Client as NATS

from contracts.tools import TOOL_SUBJECT, SandboxToolReply, SandboxToolRequest
from services.agent_runtime.tools.spec import ToolOutcome, ToolSpec


async def run_sandbox_tool(
    nc: NATS,
    spec: ToolSpec,
    args: dict[str, Any],
    *,
    timeout: float,
    run_id: str,
    invocation_id: str,
    tool_call_id: str,
) -> ToolOutcome:
    request = SandboxToolRequest(
        source=spec.source,
        name=spec.name,
        arguments=args,
        meta=spec.meta,
        timeout_s=timeout,
        run_id=run_id,
        invocation_id=invocation_id,
        tool_call_id=tool_call_id,
    )
    try:
        msg = await nc.request(TOOL_SUBJECT, msgspec.json.encode(request), timeout=timeout + 2)
    except nats.errors.TimeoutError:
        return ToolOutcome.error(
            f"tool {spec.name!r} timed out after {timeout:.0f}s", status="timeout"
        )
    except nats.errors.NoRespondersError:
        return ToolOutcome.error("the tool sandbox service is not running")
    reply = msgspec.json.decode(msg.data, type=SandboxToolReply)
    if reply.error is not None:
        status = "timeout" if reply.status == "timeout" else "error"
        return ToolOutcome.error(reply.error, status=status)  # type: ignore[arg-type]
    return ToolOutcome(result=reply.result)
