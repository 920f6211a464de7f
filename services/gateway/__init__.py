"""The gateway service: REST, SSE, A2A and MCP over HTTP; auth; reads from read models."""
