"""Inspector benchmarks: the run detail page of a 200-node run with 50 agent tool calls, and
the history list of a user with 10,000 runs, paged (targets: ≤ 200 ms and ≤ 50 ms server
time).

The gateway runs as a process against nats-server and Postgres; the read models are filled
directly (rows as the projections write them: 10,000 runs, and one run of 200 node rows, five
of them agents whose outputs carry 10 tool calls each, one compression and a sub-agent).
Server time is the page handler's own (`Server-Timing: render`: its queries and rendering);
the round trip (a local client, the session lookup and the response) is reported beside it.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from libs.db import apply_migrations
from libs.db.pool import init_connection
from libs.embedded import EmbeddedNats, EmbeddedPostgres
from tests.bench.harness import Figure, latency
from tests.e2e.system import System

RUNS = 10_000
NODES = 200
AGENTS = 5
CALLS_PER_AGENT = 10
SAMPLES = 40
_TIMING = re.compile(r"render;dur=([\d.]+)")


@contextlib.asynccontextmanager
async def gateway_only() -> AsyncIterator[System]:
    with tempfile.TemporaryDirectory(prefix="heym-bench-") as d:
        root = Path(d)
        nats_server = EmbeddedNats(root / "nats")
        nats_server.start()
        pg = EmbeddedPostgres(root / "pg")
        url = pg.start()
        conn = await asyncpg.connect(url)
        await apply_migrations(conn)
        await conn.close()
        system = System(nats_server.url, url, root / "logs", HEYM_LOG_LEVEL="WARNING")
        try:
            await system.start(("gateway",))
            yield system
        finally:
            await system.stop()
            pg.stop()
            nats_server.stop()


def _tool(i: int, at: datetime) -> dict[str, Any]:
    return {
        "tool_call_id": f"call_{i}",
        "name": f"lookup_{i % 4}",
        "arguments": '{"query": "' + "q" * 80 + '", "page": ' + str(i) + "}",
        "result": {"rows": [{"id": k, "title": f"result {k}"} for k in range(5)]},
        "status": "success",
        "source": "python",
        "started_at": at.isoformat(),
        "finished_at": (at + timedelta(milliseconds=40)).isoformat(),
        "elapsed_ms": 40.0,
    }


def _node_rows(run_id: str, t0: datetime) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    ms0 = int(t0.timestamp() * 1000)
    calls = 0
    for i in range(NODES):
        start = ms0 + (i % 20) * 50 + (i // 20) * 400  # ten waves of twenty parallel nodes
        end = start + 30 + (i % 7) * 10
        metadata: dict[str, Any] = {
            "invocation_id": f"i{i}",
            "started_at_ms": start,
            "ended_at_ms": end,
            "attempt": 1,
            "sequence": (i + 1) * 1000,
        }
        output: dict[str, Any] = {"value": i, "text": f"node {i} output " * 4}
        ntype = "set"
        if i % (NODES // AGENTS) == 0 and calls < AGENTS * CALLS_PER_AGENT:
            ntype = "agent"
            end = start + 600
            metadata["ended_at_ms"] = end
            at = datetime.fromtimestamp(start / 1000, UTC)
            tools = [
                _tool(calls + k, at + timedelta(milliseconds=50 * k))
                for k in range(CALLS_PER_AGENT)
            ]
            calls += CALLS_PER_AGENT
            tools.insert(
                5,
                {
                    "name": "_context_compression",
                    "arguments": {"messages_compressed": 12},
                    "result": {"tokens_before": 110_000, "tokens_after": 9_000},
                    "elapsed_ms": 800.0,
                },
            )
            output = {
                "text": "## Findings\n\n- one\n- two\n\n**done**",
                "model": "bench-model",
                "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280},
                "tool_calls": tools,
                "tool_metrics": {"count": CALLS_PER_AGENT, "success": CALLS_PER_AGENT, "error": 0},
            }
        rows.append(
            (run_id, f"i{i}", f"n{i}", f"node {i}", ntype, "success", output, None,
             float(end - start), metadata, (i + 1) * 1000)
        )  # fmt: skip
    return rows


async def _fill(database_url: str, owner: str) -> str:
    conn = await asyncpg.connect(database_url)
    await init_connection(conn)
    try:
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        runs = [
            (uuid.uuid4().hex, str(uuid.uuid4()), f"workflow {i % 37}", owner,
             ("success", "error", "cancelled")[i % 3], "API", {"body": {"i": i}},
             {"answer": {"result": i}}, t0 + timedelta(seconds=i), t0 + timedelta(seconds=i),
             t0 + timedelta(seconds=i, milliseconds=120), 120.0, i)
            for i in range(RUNS)
        ]  # fmt: skip
        big = runs[-1][0]
        await conn.executemany(
            """INSERT INTO runs (run_id, workflow_id, workflow_name, owner_id, status,
                                 trigger_source, inputs, outputs, requested_at, started_at,
                                 finished_at, execution_time_ms, last_sequence)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)""",
            runs,
        )
        await conn.executemany(
            """INSERT INTO run_nodes (run_id, invocation_id, node_id, node_label, node_type,
                                      status, output, error, execution_time_ms, metadata,
                                      sequence)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)""",
            _node_rows(big, runs[-1][9]),
        )
        await conn.execute("ANALYZE")
        return big
    finally:
        await conn.close()


async def _timed(c: httpx.AsyncClient, path: str) -> tuple[float, float]:
    t = time.perf_counter()
    r = await c.get(path)
    took = time.perf_counter() - t
    assert r.status_code == 200, (path, r.status_code)
    found = _TIMING.search(r.headers.get("server-timing", ""))
    assert found, path
    return float(found.group(1)) / 1000, took


async def run() -> list[Figure]:
    async with gateway_only() as system:
        owner, key = await system.new_user()
        big = await _fill(system.database_url, owner)
        async with httpx.AsyncClient(base_url=system.base_url, timeout=60) as c:
            form = await c.get("/ui/signin")
            csrf = re.search(r'name=csrf value="([^"]+)"', form.text)
            assert csrf
            signed = await c.post("/ui/signin", data={"csrf": csrf.group(1), "api_key": key})
            assert signed.status_code == 303, signed.text
            page = await c.get(f"/ui/runs/{big}")
            assert page.text.count('class="tl-row tl-tool') == AGENTS * CALLS_PER_AGENT
            detail_server, detail_trip = [], []
            for _ in range(SAMPLES):
                server, trip = await _timed(c, f"/ui/runs/{big}")
                detail_server.append(server)
                detail_trip.append(trip)
            list_server, list_trip = [], []
            last_page = (RUNS // 50 - 1) * 50
            for i in range(SAMPLES):
                offset = (i * 50 * 7) % RUNS if i % 4 else last_page  # all over the list
                server, trip = await _timed(c, f"/ui/history?offset={offset}")
                list_server.append(server)
                list_trip.append(trip)
    size = len(page.content)
    return [
        latency(
            "inspector run detail (server)",
            detail_server,
            nodes=NODES,
            tool_calls=AGENTS * CALLS_PER_AGENT,
            html_bytes=size,
            target_ms=200,
        ),
        latency("inspector run detail (round trip)", detail_trip, nodes=NODES),
        latency("inspector history page (server)", list_server, runs=RUNS, page=50, target_ms=50),
        latency("inspector history page (round trip)", list_trip, runs=RUNS, page=50),
    ]
