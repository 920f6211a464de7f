"""A small MCP server for tests and benchmarks, over sse or streamable HTTP (written with the
`mcp` SDK): `python -m libs.testing.mcp_peer --transport sse --port N`.

Tools: `echo(text)`, `add(a, b)` (structured result), `fail()` (a tool error), `whoami()`
(the request's `Authorization` header, to check that configured headers arrive).
"""

from __future__ import annotations

import argparse
from typing import Any

from mcp.server.mcpserver import Context, MCPServer


def build() -> MCPServer:
    app = MCPServer("heym-test-peer")

    @app.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo: {text}"

    @app.tool()
    def add(a: int, b: int) -> dict[str, int]:
        """Add two numbers."""
        return {"sum": a + b}

    @app.tool()
    def fail() -> str:
        """Always fails."""
        raise ValueError("this tool always fails")

    @app.tool()
    def whoami(ctx: Context) -> str:
        """The Authorization header of the request."""
        request: Any = getattr(ctx.request_context, "request", None)
        headers = getattr(request, "headers", None) or {}
        return str(headers.get("authorization", ""))

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["sse", "streamable-http"], required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = build()
    if args.transport == "sse":
        app.run("sse", host="127.0.0.1", port=args.port)
    else:
        app.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
