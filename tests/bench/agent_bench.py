"""Agent benchmarks: parallel sub-agents against the slowest one; loop overhead per iteration."""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx

from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.bench.harness import Figure, latency
from tests.bench.workflow_bench import node, running_system
from tests.e2e.system import System

SUB_AGENTS = ["alpha", "beta", "gamma", "delta"]
DELAY_S = 0.3


def agent_script(iterations: int) -> Script:
    return Script(
        rules=[
            Rule(
                when=Match(tool_offered="call_sub_agent", assistant_turns=0),
                reply=Reply(
                    tool_calls=[
                        ToolCall("call_sub_agent", {"sub_agent_label": s, "prompt": f"task {s}"})
                        for s in SUB_AGENTS
                    ]
                ),
            ),
            Rule(when=Match(last_user_contains="task "), reply=Reply(text="done", delay=DELAY_S)),
            Rule(when=Match(tool_result_for="call_sub_agent"), reply=Reply(text="all done")),
            Rule(
                when=Match(tool_offered="step", predicate=lambda r: r.assistant_turns < iterations),
                reply=Reply(tool_calls=[ToolCall("step", {})]),
            ),
            Rule(reply=Reply(text="finished")),
        ]
    )


async def add_credential(c: httpx.AsyncClient, server: ModelServer) -> str:
    r = await c.post(
        "/api/credentials",
        json={
            "name": "bench",
            "type": "custom",
            "base_url": server.base_url,
            "api_key": "sk-bench-0000000000",
        },
    )
    return str(r.json()["id"])


def _agent(nid: str, label: str, cred: str, **data: Any) -> dict[str, Any]:
    return node(nid, "agent", label, credentialId=cred, model="bench-model", **data)


async def _workflow(
    c: httpx.AsyncClient, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]
) -> str:
    r = await c.post("/api/workflows", json={"name": "bench-agent", "nodes": nodes, "edges": edges})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def _timed(c: httpx.AsyncClient, wid: str) -> float:
    t = time.perf_counter()
    r = await c.post(f"/api/workflows/{wid}/execute", json={"text": "go"})
    assert r.status_code == 200, r.text
    return time.perf_counter() - t


async def parallel_sub_agents(system: System, c: httpx.AsyncClient, cred: str) -> Figure:
    nodes = [
        node("in", "textInput", "req"),
        _agent("o", "orchestrator", cred, isOrchestrator=True, subAgentLabels=SUB_AGENTS),
    ]
    nodes += [_agent(f"s{i}", s, cred, userMessage="$input.text") for i, s in enumerate(SUB_AGENTS)]
    wid = await _workflow(c, nodes, [{"id": "e", "source": "in", "target": "o"}])
    await _timed(c, wid)
    samples = [await _timed(c, wid) for _ in range(10)]
    fig = latency(
        "orchestrator with 4 sub-agents (300 ms replies), whole run", samples, sub_agents=4
    )
    fig.params["ratio_to_slowest_p50"] = round(statistics.median(samples) / DELAY_S, 3)
    return fig


async def loop_overhead(system: System, c: httpx.AsyncClient, cred: str, iterations: int) -> Figure:
    tool = node("t", "set", "Step", mappings=[{"key": "ok", "value": "1"}])
    base_nodes = [node("in", "textInput", "req"), _agent("a", "looper", cred), tool]
    edges = [
        {"id": "e", "source": "in", "target": "a"},
        {"id": "t", "source": "t", "target": "a", "targetHandle": "tool-input"},
    ]
    wid = await _workflow(c, base_nodes, edges)
    plain = await _workflow(
        c, [node("in", "textInput", "req"), _agent("a", "answer", cred)], edges[:1]
    )
    await _timed(c, wid)
    samples = []
    for _ in range(10):
        baseline = await _timed(c, plain)
        looped = await _timed(c, wid)
        samples.append(max(0.0, looped - baseline) / iterations)
    return latency(
        "agent loop overhead per tool iteration (instant model)",
        samples,
        iterations=iterations,
        model="scripted, local HTTP",
    )


async def run() -> list[Figure]:
    iterations = 20
    async with running_system() as system:
        with ModelServer(agent_script(iterations)) as server:
            _, key = await system.new_user()
            async with httpx.AsyncClient(
                base_url=system.base_url, headers={"X-MCP-Key": key}, timeout=120
            ) as c:
                cred = await add_credential(c, server)
                return [
                    await parallel_sub_agents(system, c, cred),
                    await loop_overhead(system, c, cred, iterations),
                ]
