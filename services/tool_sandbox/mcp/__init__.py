"""The MCP client (§6.3) on the `mcp` 2.x SDK: transports, warm sessions, results."""
