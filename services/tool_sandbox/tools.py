"""Agent tool calls routed to the sandbox (python tools, skills, MCP servers).

Executing them is the tool sandbox's own work item, still to come: until then every call is
answered with a clear error result, which the agent's model sees like any tool error.
"""

from __future__ import annotations

import msgspec

from contracts.tools import SandboxToolReply, SandboxToolRequest

_decode = msgspec.json.Decoder(SandboxToolRequest).decode
_encode = msgspec.json.Encoder().encode


async def answer_tool_request(data: bytes) -> bytes:
    try:
        request = _decode(data)
    except msgspec.DecodeError as exc:
        return _encode(SandboxToolReply(error=f"malformed tool request: {exc}", status="error"))
    return _encode(
        SandboxToolReply(
            error=(
                f"{request.source} tools are not available in this tool sandbox yet "
                f"(tool {request.name!r} was not run)"
            ),
            status="error",
        )
    )
