"""Heym Agent and MCP benchmarks: an MCP `tools/call` of a 3-node workflow over streamable HTTP
(beside the same workflow over REST), and the assistant's overhead per model round with an
instant scripted model."""

from __future__ import annotations

import json
import time

import httpx

from contracts import subjects
from contracts.chat import ChatRoundRecorded
from libs.eventlog import EventLog
from libs.testing.infra import connected
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.bench.harness import Figure, latency
from tests.bench.workflow_bench import chain, running_system
from tests.e2e.assistant.mcp_clients import streamable
from tests.e2e.system import System

ROUNDS = 20
MODEL = "bench-model"


async def _workflow(c: httpx.AsyncClient) -> str:
    nodes, edges = chain("set", 2)  # textInput -> set -> set: three nodes
    r = await c.post("/api/workflows", json={"name": "bench three", "nodes": nodes, "edges": edges})
    assert r.status_code == 201, r.text
    wid = str(r.json()["id"])
    await c.patch(f"/api/mcp/workflows/{wid}", json={"mcp_enabled": True})
    return wid


async def mcp_tools_call(system: System, c: httpx.AsyncClient, key: str, runs: int) -> list[Figure]:
    wid = await _workflow(c)
    rest = []
    for i in range(runs + 5):
        t = time.perf_counter()
        r = await c.post(f"/api/workflows/{wid}/execute", json={"seed": 1})
        if i >= 5:
            rest.append(time.perf_counter() - t)
        assert r.status_code == 200, r.text
    samples = []
    async with streamable(f"{system.base_url}/api/mcp", key) as session:
        for i in range(runs + 5):
            t = time.perf_counter()
            result = await session.call_tool("bench_three", {"seed": "1"})
            if i >= 5:
                samples.append(time.perf_counter() - t)
            assert result.is_error is False, result
            assert json.loads(result.content[0].text)
    rest_fig = latency("3-node workflow over REST (for comparison)", rest, nodes=3)
    fig = latency(
        "MCP tools/call of a 3-node workflow, streamable HTTP (SDK client session)",
        samples,
        nodes=3,
        target_p50_ms=15,
    )
    if rest_fig.p50 is not None and fig.p50 is not None:
        fig.params["minus_rest_p50_ms"] = round(fig.p50 - rest_fig.p50, 2)
    return [rest_fig, fig]


def _script() -> Script:
    return Script(
        rules=[
            Rule(when=Match(last_user_contains="just answer"), reply=Reply(text="done")),
            Rule(
                when=Match(predicate=lambda r: r.assistant_turns < ROUNDS),
                reply=Reply(tool_calls=[ToolCall("list_workflows", {})]),
            ),
            Rule(reply=Reply(text="finished")),
        ]
    )


async def _model_ms(log: EventLog, cid: str) -> float:
    """Time spent inside model calls in a conversation, as recorded with each round."""
    envelopes = await log.read(subjects.chat_all(cid))
    return sum(e.event.elapsed_ms for e in envelopes if isinstance(e.event, ChatRoundRecorded))


async def _turn(c: httpx.AsyncClient, cred: str, text: str) -> tuple[float, str]:
    cid = (await c.post("/api/chats", json={})).json()["id"]
    t = time.perf_counter()
    r = await c.post(
        f"/api/chats/{cid}/messages", json={"content": text, "credential_id": cred, "model": MODEL}
    )
    assert r.status_code == 202, r.text
    async with c.stream("GET", f"/api/chats/{cid}/stream") as s:
        async for line in s.aiter_lines():
            if line.startswith("data:") and json.loads(line[5:])["type"] == "done":
                break
    return time.perf_counter() - t, str(cid)


async def round_overhead(
    log: EventLog, c: httpx.AsyncClient, cred: str, samples_wanted: int
) -> list[Figure]:
    await _turn(c, cred, "warm up: just answer")
    await _turn(c, cred, "warm up the loop")
    samples, own = [], []
    for _ in range(samples_wanted):
        baseline, base_cid = await _turn(c, cred, "just answer")
        looped, loop_cid = await _turn(c, cred, "list my workflows many times")
        samples.append(max(0.0, looped - baseline) / ROUNDS)
        model_s = (await _model_ms(log, loop_cid) - await _model_ms(log, base_cid)) / 1000
        own.append(max(0.0, looped - baseline - model_s) / ROUNDS)
    return [
        latency(
            "assistant overhead per round (model round + list_workflows tool), instant model",
            samples,
            rounds=ROUNDS,
            model="scripted, local HTTP",
            target_p50_ms=10,
        ),
        latency(
            "  of which outside the model call (decide, record, tool, stream)",
            own,
            rounds=ROUNDS,
        ),
    ]


async def run() -> list[Figure]:
    async with running_system() as system:
        with ModelServer(_script()) as server:
            _, key = await system.new_user()
            async with httpx.AsyncClient(
                base_url=system.base_url, headers={"X-MCP-Key": key}, timeout=120
            ) as c:
                r = await c.post(
                    "/api/credentials",
                    json={
                        "name": "bench",
                        "type": "custom",
                        "base_url": server.base_url,
                        "api_key": "sk-bench-0000000000",
                    },
                )
                cred = str(r.json()["id"])
                figures = await mcp_tools_call(system, c, key, runs=200)
                async with connected(system.nats_url) as nc:
                    figures += await round_overhead(EventLog(nc), c, cred, samples_wanted=15)
                return figures
