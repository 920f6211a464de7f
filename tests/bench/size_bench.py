"""Cost growth with workflow size: a `set` chain of n nodes over REST, created and run.

Flat means the per-node time of a run, and the per-node time of creating the workflow, do not
grow with n. The largest size is the documented limit (`MAX_NODES`).
"""

from __future__ import annotations

import time

import httpx

from libs.workflow import MAX_NODES
from tests.bench.harness import Figure, latency
from tests.bench.workflow_bench import chain
from tests.e2e.system import System

SIZES = (200, 500, MAX_NODES)


async def one_size(c: httpx.AsyncClient, size: int, runs: int) -> list[Figure]:
    nodes, edges = chain("set", size - 1)
    created = []
    wid = ""
    for i in range(3):
        body = {"name": f"chain{size}-{i}", "nodes": nodes, "edges": edges}
        t = time.perf_counter()
        r = await c.post("/api/workflows", json=body)
        created.append(time.perf_counter() - t)
        assert r.status_code == 201, r.text
        wid = r.json()["id"]
    r = await c.post(f"/api/workflows/{wid}/execute", json={"seed": 1})  # warm-up
    assert r.status_code == 200, r.text
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        r = await c.post(f"/api/workflows/{wid}/execute", json={"seed": 1})
        samples.append((time.perf_counter() - t) / size)
        assert r.status_code == 200, r.text
    return [
        latency(f"set chain of {size} nodes over REST, per node", samples, nodes=size),
        latency(f"create a {size}-node workflow over REST", created, nodes=size),
    ]


async def run_sizes(system: System, runs: int = 5) -> list[Figure]:
    figures: list[Figure] = []
    _, key = await system.new_user()
    async with httpx.AsyncClient(
        base_url=system.base_url, headers={"X-MCP-Key": key}, timeout=120
    ) as c:
        for size in SIZES:
            figures.extend(await one_size(c, size, runs))
    return figures
