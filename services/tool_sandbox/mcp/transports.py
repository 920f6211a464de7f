"""MCP transports (§6.3): stdio (contained like a skill), sse and streamable HTTP.

An stdio server runs through the launcher (limits, its own identity, death with the sandbox)
and, where installed, bubblewrap; its environment is the connection's `env` over a minimal
base (never the service's variables). Its stderr goes to a file in its private workspace,
bounded by the file-size limit, and is logged when the session fails.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from libs.tools.mcp_config import McpServer
from services.tool_sandbox.containment.policy import LAUNCHER, Containment, Limits
from services.tool_sandbox.processes import BASE_PATH

Streams = tuple[Any, Any]
SSE_CONNECT_S = 5.0


class Transport(Protocol):
    def connect(self) -> contextlib.AbstractAsyncContextManager[Streams]: ...

    def cleanup(self) -> None: ...


class HttpTransport:
    def __init__(self, server: McpServer, timeout_s: float) -> None:
        self.server = server
        self.timeout_s = timeout_s

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        server = self.server
        if server.transport == "sse":
            async with sse_client(
                server.url,
                headers=dict(server.headers),
                timeout=min(SSE_CONNECT_S, self.timeout_s),
                sse_read_timeout=max(self.timeout_s, 300.0),
            ) as streams:
                yield streams[0], streams[1]
            return
        async with (
            create_mcp_http_client(headers=dict(server.headers)) as client,
            streamable_http_client(server.url, http_client=client) as streams,
        ):
            yield streams[0], streams[1]

    def cleanup(self) -> None:
        return None


class StdioTransport:
    """A contained stdio server; `release` gives its identity slot back when it ends."""

    def __init__(
        self,
        server: McpServer,
        containment: Containment,
        *,
        work_root: Path,
        slot: int,
        limits: Limits,
        network: bool,
        release: Callable[[int], None],
    ) -> None:
        self.server = server
        self.containment = containment
        self.work_root = work_root
        self.slot = slot
        self.limits = limits
        self.network = network
        self._release = release
        self._dir: Path | None = None
        self._released = False

    def _workspace(self) -> Path:
        self.work_root.mkdir(parents=True, exist_ok=True, mode=0o711)
        path = Path(tempfile.mkdtemp(prefix="mcp-", dir=self.work_root))
        ident = self.containment.identity(self.slot)
        if ident is not None:
            import os

            os.chown(path, *ident)
        self._dir = path
        return path

    def params(self) -> tuple[StdioServerParameters, Path]:
        ws = self._workspace()
        inner = "/tmp/workspace" if self.containment.bwrap else str(ws)
        settings = self.containment.launcher_args(
            mode="exec", limits=self.limits, slot=self.slot, site=False
        )
        argv = [
            self.containment.python,
            "-I",
            "-S",
            LAUNCHER,
            *settings,
            self.server.command,
            *self.server.args,
        ]
        # The connection's env may hold keys: it travels in the process environment, never on
        # a command line (which every local user can read in /proc).
        env = {
            "PATH": BASE_PATH,
            "HOME": inner,
            "TMPDIR": "/tmp" if self.containment.bwrap else inner,
            "LANG": "C.UTF-8",
            **self.server.env,
        }
        wrapped = self.containment.wrap(
            argv, workspace=str(ws), env=None, network=self.network, cwd=inner
        )
        return (
            StdioServerParameters(
                command=wrapped[0],
                args=wrapped[1:],
                env=env,
                cwd=None if self.containment.bwrap else ws,
            ),
            ws,
        )

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        params, ws = self.params()
        with (ws / "_stderr.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as streams:
                yield streams[0], streams[1]

    def stderr_tail(self, limit: int = 2000) -> str:
        if self._dir is None:
            return ""
        try:
            return (self._dir / "_stderr.log").read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def cleanup(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        if not self._released:
            self._released = True
            self._release(self.slot)
