"""Containment of the processes the tool sandbox runs (skills, Python tools, MCP stdio servers)."""
