"""Tool sandbox benchmarks, each against its target (issue #10):

- trivial skill round trip, agent dispatch → result recorded: p50 ≤ 30 ms with the plain
  interpreter, ≤ 60 ms with `uv run` (cache warm);
- Python tool round trip: p50 ≤ 30 ms;
- MCP `call_tool` over stdio to a local server with a warm session: p50 ≤ 3 ms, beside the
  original's fresh session per call (process start + initialize + call + close) and the ratio.

Round trips go through the real service (its own process) and the event log: a
`SandboxToolDispatched` appended, the `ToolCallRecorded` seen on the agent's aggregate.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import nats
import uv

from contracts import subjects
from contracts.agents import ToolCallRecorded
from contracts.tools import SandboxSource, SandboxToolDispatched
from libs.db import apply_migrations
from libs.embedded import EmbeddedNats, EmbeddedPostgres
from libs.eventlog import EventLog
from libs.tools.mcp_config import McpServer
from services.tool_sandbox.containment.policy import Limits, plan
from services.tool_sandbox.mcp.client import McpClient
from tests.bench.harness import Figure, latency
from tests.e2e.system import System

ROUNDS = 40
MCP_ROUNDS = 200
FRESH_ROUNDS = 10
TRIVIAL = {"name": "Trivial", "files": [{"path": "main.py", "content": "print('ok')"}]}


@contextlib.asynccontextmanager
async def sandbox_only(**env: str) -> AsyncIterator[System]:
    with tempfile.TemporaryDirectory(prefix="heym-bench-sbx-") as d:
        root = Path(d)
        server = EmbeddedNats(root / "nats")
        server.start()
        pg = EmbeddedPostgres(root / "pg")
        url = pg.start()
        conn = await asyncpg.connect(url)
        await apply_migrations(conn)
        await conn.close()
        system = System(
            server.url, url, root / "logs", HEYM_LOG_LEVEL="WARNING", HEYM_DATA_DIR=str(root), **env
        )
        try:
            await system.start(("tool_sandbox",))
            yield system
        finally:
            await system.stop()
            pg.stop()
            server.stop()


async def _round_trip(
    log: EventLog, source: SandboxSource, name: str, args: dict[str, Any], meta: dict[str, Any]
) -> float:
    run_id, inv = uuid.uuid4().hex, uuid.uuid4().hex
    ev = SandboxToolDispatched(
        item_id=uuid.uuid4().hex,
        invocation_id=inv,
        tool_call_id=f"call_{uuid.uuid4().hex[:8]}",
        turn=1,
        name=name,
        source=source,
        arguments=json.dumps(args),
        meta=meta,
    )
    async with log.watch(subjects.agent(run_id, inv)) as watch:
        t = time.perf_counter()
        await log.append(
            subjects.work_item(run_id, "tool_sandbox", ev.item_id), [ev], expected_sequence=0
        )
        while True:
            env = await asyncio.wait_for(watch.queue.get(), 30)
            if isinstance(env.event, ToolCallRecorded):
                elapsed = time.perf_counter() - t
                if env.event.status != "success":
                    raise RuntimeError(f"{name} failed: {env.event.result}")
                return elapsed


async def _samples(
    log: EventLog, source: SandboxSource, name: str, args: dict[str, Any], meta: dict[str, Any]
) -> list[float]:
    for _ in range(5):  # warm-up: uv's cache, the page cache, the consumer
        await _round_trip(log, source, name, args, meta)
    return [await _round_trip(log, source, name, args, meta) for _ in range(ROUNDS)]


async def _service_figures(runner: str) -> list[Figure]:
    figures = []
    async with sandbox_only(HEYM_SKILL_RUNNER=runner) as system:
        nc = await nats.connect(system.nats_url)
        try:
            log = EventLog(nc)
            skill = await _samples(
                log, "skill", "skill_trivial", {"input": "x"}, {"skill": TRIVIAL}
            )
            figures.append(
                latency(
                    f"sandbox: trivial skill round trip ({runner})",
                    skill,
                    target_p50_ms=60 if runner == "uv" else 30,
                )
            )
            if runner == "python":
                code = {"code": "def add(a, b):\n    return a + b"}
                tool = await _samples(log, "python", "add", {"a": 1, "b": 2}, code)
                figures.append(latency("sandbox: Python tool round trip", tool, target_p50_ms=30))
        finally:
            await nc.close()
    return figures


async def _no_stored(owner: str, cid: str) -> McpServer | None:
    return None


async def _mcp_figures() -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="heym-bench-mcp-") as d:
        root = Path(d)
        cache = root / "uv-cache"
        cache.mkdir()
        containment = plan(
            bubblewrap="auto",
            data_dir=root,
            uid_base=61000,
            uv_cache=cache,
            uv_bin=str(uv.find_uv_bin()),
        )
        server = {
            "id": "time",
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        }
        args = {"timezone": "UTC"}
        client = McpClient(
            containment,
            work_root=root / "mcp",
            load_stored=_no_stored,
            limits=Limits(memory_kind="data", processes=256, cpu_s=3600),
            first_slot=100,
        )
        try:
            await client.call("bench", server, "get_current_time", args, 30)
            warm = []
            for _ in range(MCP_ROUNDS):
                t = time.perf_counter()
                out = await client.call("bench", server, "get_current_time", args, 30)
                warm.append(time.perf_counter() - t)
                assert out.status == "success", out
            fresh = []
            for _ in range(FRESH_ROUNDS):
                await client.sessions.close()  # the original: a new session for every call
                t = time.perf_counter()
                out = await client.call("bench", server, "get_current_time", args, 30)
                fresh.append(time.perf_counter() - t)
                assert out.status == "success", out
        finally:
            await client.close()
    warm_fig = latency(
        "sandbox: MCP call_tool, stdio, warm session",
        warm,
        target_p50_ms=3,
        sandbox=containment.label,
    )
    fresh_fig = latency("sandbox: MCP call_tool, stdio, fresh session per call", fresh)
    ratio = Figure(
        name="sandbox: MCP fresh / warm (p50)",
        unit="x",
        value=(fresh_fig.p50 or 0) / (warm_fig.p50 or 1),
    )
    return [warm_fig, fresh_fig, ratio]


async def run() -> list[Figure]:
    figures: list[Figure] = []
    figures += await _service_figures("python")
    figures += await _service_figures("uv")
    figures += await _mcp_figures()
    return figures
