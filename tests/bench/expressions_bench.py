"""`POST /api/expressions/evaluate` latency: the editor calls it on every keystroke (target:
p50 <= 2 ms for a typical expression against a saved workflow)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.bench.harness import Figure, latency
from tests.bench.workflow_bench import node, running_system
from tests.e2e.system import System

CASES = {
    "path": "$userInput.text.upper()",
    "template": "Hello $userInput.name, you have $userInput.items.length items",
    "array methods": "$userInput.items.filter('item > 1').map('item * 2')",
}


async def preview(system: System, runs: int) -> list[Figure]:
    _, key = await system.new_user()
    figures = []
    async with httpx.AsyncClient(
        base_url=system.base_url, timeout=30, headers={"X-MCP-Key": key}
    ) as c:
        nodes = [
            node("in", "textInput", "userInput"),
            node("s", "set", "shape", mappings=[{"key": "a", "value": "$userInput.text"}]),
            node("o", "output", "out"),
        ]
        edges = [
            {"id": "e1", "source": "in", "target": "s"},
            {"id": "e2", "source": "s", "target": "o"},
        ]
        wid = (
            await c.post("/api/workflows", json={"name": "bench", "nodes": nodes, "edges": edges})
        ).json()["id"]
        results = [
            {
                "node_id": "in",
                "label": "userInput",
                "output": {"text": "hi", "name": "Ada", "items": [1, 2, 3]},
            }
        ]
        for name, expression in CASES.items():
            body: dict[str, Any] = {
                "expression": expression,
                "workflow_id": wid,
                "current_node_id": "s",
                "node_results": results,
            }
            for _ in range(20):
                await c.post("/api/expressions/evaluate", json=body)  # warm-up
            samples = []
            for _ in range(runs):
                t = time.perf_counter()
                r = await c.post("/api/expressions/evaluate", json=body)
                samples.append(time.perf_counter() - t)
                assert r.status_code == 200, r.text
                assert r.json()["error"] is None, r.text
            figures.append(
                latency(f"expression preview over REST ({name})", samples, target_p50_ms=2)
            )
    return figures


async def run() -> list[Figure]:
    async with running_system() as system:
        return await preview(system, 500)
