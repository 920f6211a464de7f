"""Heym as an MCP server (Heym §6.4, §12.10): the user's MCP-enabled workflows as tools, plus
`heym_chat` (the Heym Agent), over streamable HTTP and the legacy SSE transport, on the
default endpoint and on named servers; and the REST settings behind them."""
