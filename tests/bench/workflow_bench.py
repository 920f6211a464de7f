"""Workflow engine benchmarks: per-node overhead, a 3-node run over REST, throughput.

The whole system runs as in production (five service processes, nats-server with
`sync_interval: always`, Postgres); figures include every durable append.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from contracts import subjects
from contracts.runs import RunCompleted, RunRequested
from libs.db import apply_migrations
from libs.embedded import EmbeddedNats, EmbeddedPostgres
from libs.eventlog import EventLog
from libs.testing.http_target import HttpTarget
from libs.testing.infra import connected
from tests.bench.harness import Figure, latency, rate
from tests.e2e.system import System


def node(nid: str, ntype: str, label: str, **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": 0, "y": 0},
        "data": {"label": label, **data},
    }


def chain(
    kind: str, count: int, target: str = ""
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [node("in", "textInput", "start")]
    edges = []
    prev = "in"
    for i in range(count):
        if kind == "http":
            nodes.append(node(f"n{i}", "http", f"call{i}", curl=f"curl {target}/echo"))
        else:
            nodes.append(
                node(
                    f"n{i}",
                    "set",
                    f"step{i}",
                    mappings=[{"key": "v", "value": f"$start.seed + {i}"}],
                )
            )
        edges.append({"id": f"e{i}", "source": prev, "target": f"n{i}"})
        prev = f"n{i}"
    return nodes, edges


def fan_out(width: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [node("in", "textInput", "start"), node("m", "merge", "join")]
    edges = []
    for i in range(width):
        nodes.append(node(f"b{i}", "set", f"branch{i}", mappings=[{"key": "i", "value": str(i)}]))
        edges.append({"id": f"a{i}", "source": "in", "target": f"b{i}"})
        edges.append({"id": f"j{i}", "source": f"b{i}", "target": "m"})
    return nodes, edges


@contextlib.asynccontextmanager
async def running_system() -> AsyncIterator[System]:
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
            await system.start()
            yield system
        finally:
            await system.stop()
            pg.stop()
            nats_server.stop()


async def run_once(
    log: EventLog, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]
) -> float:
    """Request a run through the event log and time it until RunCompleted is appended.

    A core subscription watches the run (no consumer per run: thousands of short-lived
    ordered consumers load the server and, at a few hundred runs/s, hit its consumer limit)."""
    run_id = uuid.uuid4().hex
    request = RunRequested(
        workflow_id="bench", nodes=nodes, edges=edges, inputs={"body": {"seed": 1}}
    )
    async with log.watch(subjects.run_all(run_id)) as watch:
        queue = watch.queue
        t = time.perf_counter()
        await log.append(subjects.run_commands(run_id), [request], expected_sequence=0)
        while True:
            env = await asyncio.wait_for(queue.get(), 60)
            if isinstance(env.event, RunCompleted):
                assert env.event.status == "success", env.event
                return time.perf_counter() - t


async def per_node(
    log: EventLog,
    name: str,
    graph: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    runs: int,
    **params: Any,
) -> Figure:
    nodes, edges = graph
    count = len(nodes)
    for _ in range(3):
        await run_once(log, nodes, edges)  # warm-up
    samples = [await run_once(log, nodes, edges) / count for _ in range(runs)]
    return latency(name, samples, nodes=count, unit_of="per node", **params)


async def rest_three_node(system: System, runs: int) -> Figure:
    async with httpx.AsyncClient(base_url=system.base_url, timeout=30) as c:
        _, key = await system.new_user()
        c.headers["X-MCP-Key"] = key
        nodes, edges = chain("set", 1)
        nodes.append(node("o", "output", "result", message="$step0.v"))
        edges.append({"id": "eo", "source": "n0", "target": "o"})
        wid = (
            await c.post("/api/workflows", json={"name": "bench3", "nodes": nodes, "edges": edges})
        ).json()["id"]
        for _ in range(5):
            await c.post(f"/api/workflows/{wid}/execute", json={"seed": 1})
        samples = []
        for _ in range(runs):
            t = time.perf_counter()
            r = await c.post(f"/api/workflows/{wid}/execute", json={"seed": 1})
            samples.append(time.perf_counter() - t)
            assert r.status_code == 200, r.text
    return latency("3-node workflow over REST, end to end", samples, nodes=3)


async def throughput(log: EventLog, total: int, in_flight: int) -> Figure:
    nodes, edges = chain("set", 9)
    sem = asyncio.Semaphore(in_flight)

    async def one() -> None:
        async with sem:
            await run_once(log, nodes, edges)

    t = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    return rate(
        "10-node workflow throughput",
        total,
        time.perf_counter() - t,
        unit="runs/s",
        in_flight=in_flight,
    )


async def run() -> list[Figure]:
    from tests.bench.resources import MemoryProfile
    from tests.bench.size_bench import run_sizes

    figures: list[Figure] = []
    async with running_system() as system, connected(system.nats_url) as nc, HttpTarget() as target:
        log = EventLog(nc)
        memory = MemoryProfile(system)
        figures.append(
            await per_node(log, "engine overhead, 50-node chain of set nodes", chain("set", 49), 30)
        )
        figures.append(
            await per_node(log, "engine overhead, 20-wide fan-out into merge", fan_out(20), 30)
        )
        figures.append(
            await per_node(
                log,
                "engine overhead, 10-node chain of HTTP nodes",
                chain("http", 9, target.url),
                30,
                side_effecting=True,
            )
        )
        figures.append(await rest_three_node(system, 200))
        # Idle after the warm-up above; two identical rounds of load show a leak per run.
        memory.mark_idle()
        rounds = []
        for _ in range(2):
            async with memory.under_load():
                rounds.append(await throughput(log, 500, 50))
            await memory.mark_after()
        each = [round(f.value or 0) for f in rounds]
        both = rounds[0]
        both.value = sum(f.value or 0 for f in rounds) / len(rounds)
        both.params["rounds_runs_per_s"] = each
        both.params["cpu_ms_per_run"] = memory.cpu_ms_per_run(1000)
        figures.append(both)
        figures.extend(memory.figures("10-node throughput, 2 rounds of 500 runs", 500))
        figures.extend(await run_sizes(system))
    return figures
