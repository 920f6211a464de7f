"""`McpClient`: the sandbox's MCP client: resolve a connection, list its tools, call one.

A stored connection (`{"stored": true, "id"}`) is loaded from Postgres with its sealed
headers and env, for the owner that dispatched the call only. Results follow §6.3.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from contracts.tools import McpListReply
from libs.tools.mcp_config import McpConfigError, McpServer, normalise
from services.tool_sandbox.containment.policy import Containment, Limits
from services.tool_sandbox.mcp.results import convert, extract
from services.tool_sandbox.mcp.sessions import McpSessions, McpUnavailable, describe
from services.tool_sandbox.mcp.transports import HttpTransport, StdioTransport, Transport
from services.tool_sandbox.outcome import Outcome

log = logging.getLogger(__name__)

LoadStored = Callable[[str, str], Awaitable[McpServer | None]]


class IdentityPool:
    """Identity slots for stdio servers (after the ones calls use)."""

    def __init__(self, first: int, size: int) -> None:
        self._free = list(range(first + size - 1, first - 1, -1))

    def take(self) -> int:
        if not self._free:
            raise McpUnavailable("too many MCP stdio servers are running in this sandbox")
        return self._free.pop()

    def give(self, slot: int) -> None:
        self._free.append(slot)


class McpClient:
    def __init__(
        self,
        containment: Containment,
        *,
        work_root: Path,
        load_stored: LoadStored,
        limits: Limits,
        first_slot: int,
        max_sessions: int = 64,
        idle_s: float = 300.0,
        default_timeout_s: float = 30.0,
    ) -> None:
        self.containment = containment
        self.work_root = work_root
        self.limits = limits
        self._load = load_stored
        self._slots = IdentityPool(first_slot, max_sessions + 8)
        self.default_timeout_s = default_timeout_s
        self.sessions = McpSessions(self._transport, idle_s=idle_s, max_sessions=max_sessions)

    def _transport(self, server: McpServer, owner: str) -> Transport:
        timeout = server.timeout_s or self.default_timeout_s
        if server.transport == "stdio":
            return StdioTransport(
                server,
                self.containment,
                work_root=self.work_root,
                slot=self._slots.take(),
                limits=self.limits,
                network=True,
                release=self._slots.give,
            )
        return HttpTransport(server, timeout)

    async def resolve(self, owner: str, raw: dict[str, Any]) -> McpServer:
        if raw.get("stored"):
            server = await self._load(owner, str(raw.get("id") or ""))
            if server is None:
                raise McpConfigError(f"MCP connection {raw.get('id')} was not found")
            label = str(raw.get("label") or "")
            return server if not label else _relabel(server, label)
        return normalise(raw)

    async def call(
        self,
        owner: str,
        raw: dict[str, Any],
        tool: str,
        arguments: dict[str, Any],
        timeout_s: float,
        traceparent: str | None = None,
    ) -> Outcome:
        try:
            server = await self.resolve(owner, raw)
        except McpConfigError as exc:
            return Outcome.error(str(exc))
        timeout = server.timeout_s or timeout_s
        extra = {"mcp_server": server.name}
        try:
            async with asyncio.timeout(timeout + 5):
                result = await self.sessions.call_tool(
                    owner, server, tool, arguments, timeout, traceparent=traceparent
                )
        except TimeoutError:
            return Outcome.error(
                f"MCP tool {tool!r} timed out after {timeout:g}s", status="timeout", **extra
            )
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                raise
            message = describe(exc)
            if "timed out" in message.lower():
                return Outcome.error(
                    f"MCP tool {tool!r} timed out: {message}", status="timeout", **extra
                )
            return Outcome.error(f"MCP tool {tool!r} failed: {message}", extra=extra)
        value = extract(result)
        if result.is_error:
            return Outcome(result=value, status="error", extra=extra)
        return Outcome(result=value, extra=extra)

    async def list_tools(
        self, owner: str, connections: list[dict[str, Any]], timeout_s: float
    ) -> McpListReply:
        clock = time.perf_counter()
        reply = McpListReply()

        found: list[list[dict[str, Any]]] = [[] for _ in connections]

        async def one(index: int, raw: dict[str, Any]) -> None:
            name = str(raw.get("label") or raw.get("id") or "MCP server")
            try:
                server = await self.resolve(owner, raw)
                name = server.name or name
                timeout = server.timeout_s or timeout_s
                async with asyncio.timeout(timeout + 1):
                    tools = await self.sessions.list_tools(owner, server, timeout)
                found[index] = [convert(t, server) for t in tools]
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                reason = "timed out" if isinstance(exc, TimeoutError) else describe(exc)
                log.warning("MCP server %s skipped at listing: %s", name, reason)
                reply.errors[name] = reason

        await asyncio.gather(*(one(i, c) for i, c in enumerate(connections)))
        # in the connections' order, whichever answered first (the agent records the list)
        reply.tools = [tool for tools in found for tool in tools]
        reply.elapsed_ms = round((time.perf_counter() - clock) * 1000, 3)
        return reply

    async def close(self) -> None:
        await self.sessions.close()


def _relabel(server: McpServer, label: str) -> McpServer:
    import msgspec

    return msgspec.structs.replace(server, label=label)
