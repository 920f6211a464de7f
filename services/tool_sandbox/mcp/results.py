"""MCP results and tools in Heym's shapes (§6.3): result extraction and tool conversion."""

from __future__ import annotations

import json
from typing import Any

from mcp_types import CallToolResult, TextContent, Tool

from libs.tools.mcp_config import McpServer


def _texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def extract(result: CallToolResult) -> Any:
    """(1) an error → `{error: first text}`; (2) no content → None; (3) structured content
    wins; (4) the first text parsed as JSON; (5) all texts joined with newlines."""
    texts = _texts(result)
    if result.is_error:
        return {"error": texts[0] if texts else "Unknown MCP tool error"}
    if not result.content and result.structured_content is None:
        return None
    if result.structured_content is not None:
        return result.structured_content
    if not result.content:
        return None
    if texts:
        try:
            return json.loads(texts[0])
        except ValueError:
            pass
    return "\n".join(texts)


def convert(tool: Tool, server: McpServer) -> dict[str, Any]:
    """An MCP tool as the agent offers it (`_source: "mcp"`)."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) and tool.input_schema else {}
    return {
        "name": tool.name,
        "description": tool.description or "",
        "parameters": schema or {"type": "object", "properties": {}},
        "_source": "mcp",
        "_connection": server.dispatch_form(),
        "_connection_id": server.connection_id,
        "_mcp_server": server.name,
    }
