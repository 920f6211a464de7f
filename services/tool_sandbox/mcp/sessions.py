"""Warm MCP sessions: one initialised `ClientSession` per server and owner, reused by calls.

The original opened a fresh session for every listing and every call (a process start and
an initialize handshake each time). Here a session stays open while it is used and closes
after `idle_s` without use (or when the pool is full, least recently used first). A call that
fails because the connection is gone (the stdio server exited, the HTTP server restarted or
forgot the session) re-initialises the session and is sent once more; a call that timed out
or that the server answered with an error is never repeated.

Each session is owned by one task, which enters and leaves the transport and the session
(anyio requires both in one task); other tasks send requests through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import anyio
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, CallToolResult, RequestParamsMeta, Tool

from libs.tools.mcp_config import McpServer
from services.tool_sandbox.mcp.transports import Transport

log = logging.getLogger(__name__)

MAX_PAGES = 20


class McpUnavailable(Exception):
    """The server could not be reached or the connection broke (the message says why)."""


def root_cause(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the SDK wraps transport errors in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    cause = root_cause(exc)
    text = str(cause) or type(cause).__name__
    return f"{type(cause).__name__}: {text}"[:500]


def _connection_lost(exc: BaseException) -> bool:
    cause = root_cause(exc)
    if isinstance(cause, MCPError):
        return cause.code == CONNECTION_CLOSED or "session" in cause.error.message.lower()
    return isinstance(
        cause,
        (
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            anyio.EndOfStream,
            ConnectionError,
            OSError,
            McpUnavailable,
        ),
    )


class _Session:
    def __init__(self, server: McpServer, transport: Transport) -> None:
        self.server = server
        self.transport = transport
        self.session: ClientSession | None = None
        self.used_at = time.monotonic()
        self.users = 0
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self.session is not None and self._task is not None and not self._task.done()

    async def open(self, timeout_s: float) -> None:
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.server.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout_s)
        except BaseException:
            await self.close()
            raise

    async def _own(self) -> None:
        try:
            async with (
                self.transport.connect() as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                self.session = session
                if not self._ready.done():
                    self._ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(McpUnavailable(describe(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                log.info("MCP session %s ended: %s", self.server.name, describe(exc))
        finally:
            self.session = None
            self.transport.cleanup()

    async def close(self) -> None:
        self._closing.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 5)
            except (TimeoutError, Exception):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if not self._ready.done():
            self._ready.cancel()
        with contextlib.suppress(BaseException):
            self._ready.exception()


TransportFactory = Callable[[McpServer, str], Transport]


class McpSessions:
    """The warm sessions of one sandbox replica, keyed by owner and server fingerprint."""

    def __init__(
        self, factory: TransportFactory, *, idle_s: float = 300.0, max_sessions: int = 64
    ) -> None:
        self._factory = factory
        self._idle_s = idle_s
        self._max = max_sessions
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._janitor: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._sessions)

    @contextlib.asynccontextmanager
    async def session(
        self, owner: str, server: McpServer, timeout_s: float, *, fresh: bool = False
    ) -> AsyncIterator[ClientSession]:
        key = f"{owner}:{server.fingerprint()}"
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            current = self._sessions.get(key)
            if current is not None and (fresh or not current.alive):
                self._sessions.pop(key, None)
                await current.close()
                current = None
            if current is None:
                current = _Session(server, self._factory(server, owner))
                await current.open(timeout_s)
                self._sessions[key] = current
                await self._evict()
            self._sessions.move_to_end(key)
            current.users += 1
        self._ensure_janitor()
        try:
            assert current.session is not None
            yield current.session
        finally:
            current.users -= 1
            current.used_at = time.monotonic()

    async def call_tool(
        self,
        owner: str,
        server: McpServer,
        name: str,
        arguments: dict[str, Any],
        timeout_s: float,
        *,
        traceparent: str | None = None,
    ) -> CallToolResult:
        # The tool call's span goes in `params._meta.traceparent` (OpenTelemetry's convention
        # for MCP): sessions are shared by calls, so it cannot be a transport header.
        meta = cast(RequestParamsMeta, {"traceparent": traceparent}) if traceparent else None
        for attempt in (1, 2):
            try:
                async with self.session(owner, server, timeout_s, fresh=attempt == 2) as s:
                    return await s.call_tool(
                        name, arguments, read_timeout_seconds=timeout_s, meta=meta
                    )
            except BaseException as exc:
                if attempt == 1 and _connection_lost(exc) and not _timed_out(exc):
                    log.info(
                        "MCP %s: connection lost (%s); reconnecting", server.name, describe(exc)
                    )
                    continue
                raise
        raise AssertionError("unreachable")

    async def list_tools(self, owner: str, server: McpServer, timeout_s: float) -> list[Tool]:
        for attempt in (1, 2):
            try:
                async with self.session(owner, server, timeout_s, fresh=attempt == 2) as s:
                    return await _all_tools(s, timeout_s)
            except BaseException as exc:
                if attempt == 1 and _connection_lost(exc) and not _timed_out(exc):
                    continue
                raise
        raise AssertionError("unreachable")

    async def _evict(self) -> None:
        while len(self._sessions) > self._max:
            key, oldest = next(iter(self._sessions.items()))
            if oldest.users:
                break
            self._sessions.pop(key, None)
            await oldest.close()

    def _ensure_janitor(self) -> None:
        if self._janitor is None or self._janitor.done():
            self._janitor = asyncio.create_task(self._sweep())

    async def _sweep(self) -> None:
        while self._sessions:
            await asyncio.sleep(min(30.0, self._idle_s / 2))
            now = time.monotonic()
            for key, s in list(self._sessions.items()):
                if s.users == 0 and now - s.used_at > self._idle_s:
                    self._sessions.pop(key, None)
                    await s.close()

    async def close(self) -> None:
        if self._janitor is not None:
            self._janitor.cancel()
        sessions = list(self._sessions.values())
        self._sessions.clear()
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


def _timed_out(exc: BaseException) -> bool:
    cause = root_cause(exc)
    if isinstance(cause, MCPError):
        return (
            "timed out" in cause.error.message.lower() or "timeout" in cause.error.message.lower()
        )
    return isinstance(cause, TimeoutError)


async def _all_tools(session: ClientSession, timeout_s: float) -> list[Tool]:
    from mcp_types import PaginatedRequestParams

    tools: list[Tool] = []
    cursor: str | None = None
    with anyio.fail_after(timeout_s):
        for _ in range(MAX_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
    return tools
