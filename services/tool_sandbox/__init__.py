"""The tool sandbox service: HTTP node calls, skills and Python tools, MCP clients."""
