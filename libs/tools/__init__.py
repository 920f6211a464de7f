"""Agent tools outside the agent loop: stored skills and MCP connections, their resolution into
dispatchable tools, skill file rules, and the MCP tool listing query."""
