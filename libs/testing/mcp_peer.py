"""A small MCP server for tests and benchmarks, over sse or streamable HTTP (written with the
`mcp` SDK): `python -m libs.testing.mcp_peer --transport sse --port N [--prefix p_]`.

Tools: `echo(text)`, `add(a, b)` (structured result), `fail()` (a tool error), `whoami()`
(the request's `Authorization` header, to check that configured headers arrive), `tally(key)`
(`count=N`: how many times it was called with `key`, to check a call ran once),
`traceparent()` (the W3C context the call carried in `params._meta`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer


def build(prefix: str = "") -> MCPServer:
    """The peer; `prefix` goes before every tool name (two peers beside one agent)."""
    app = MCPServer("heym-test-peer")

    @app.tool(name=f"{prefix}echo")
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo: {text}"

    @app.tool(name=f"{prefix}add")
    def add(a: int, b: int) -> dict[str, int]:
        """Add two numbers."""
        return {"sum": a + b}

    @app.tool(name=f"{prefix}fail")
    def fail() -> str:
        """Always fails."""
        raise ValueError("this tool always fails")

    tallies: dict[str, int] = {}

    @app.tool(name=f"{prefix}tally")
    def tally(key: str) -> str:
        """Count the calls made with this key."""
        tallies[key] = tallies.get(key, 0) + 1
        return f"count={tallies[key]}"

    @app.tool(name=f"{prefix}whoami")
    def whoami(ctx: Context) -> str:
        """The Authorization header of the request."""
        request: Any = getattr(ctx.request_context, "request", None)
        headers = getattr(request, "headers", None) or {}
        return str(headers.get("authorization", ""))

    @app.tool(name=f"{prefix}traceparent")
    def traceparent(ctx: Context) -> str:
        """The `traceparent` the call carried in its `_meta` (empty without one)."""
        meta: Any = getattr(ctx.request_context, "meta", None) or {}
        return str(meta.get("traceparent", "")) if isinstance(meta, dict) else ""

    return app


class McpPeer:
    """The peer as a child process on a free port (tests start, stop and restart it)."""

    def __init__(self, transport: str, *, prefix: str = "") -> None:
        from libs.embedded.process import free_port

        self.transport = transport  # "sse" or "streamable-http"
        self.prefix = prefix
        self.port = free_port()
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    async def start(self, timeout: float = 15.0) -> None:
        from libs.embedded.process import port_open

        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "libs.testing.mcp_peer",
            "--transport",
            self.transport,
            "--port",
            str(self.port),
            "--prefix",
            self.prefix,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not await asyncio.to_thread(port_open, "127.0.0.1", self.port):
            if self.process.returncode is not None or loop.time() > deadline:
                raise RuntimeError(f"the MCP peer did not start on port {self.port}")
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        self.process = None

    async def __aenter__(self) -> McpPeer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["sse", "streamable-http"], required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", default="")
    args = parser.parse_args()
    app = build(args.prefix)
    if args.transport == "sse":
        app.run("sse", host="127.0.0.1", port=args.port)
    else:
        app.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
