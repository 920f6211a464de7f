"""A2A server benchmarks: `SendMessage` overhead over the agent's own time (instant scripted
model), 200 concurrent tasks with a 100 ms model, and the SSE time to the first event."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx

from contracts import subjects
from contracts.chat import ChatMessagePosted, ChatTurnCompleted
from libs.eventlog import EventLog
from libs.testing.infra import connected
from libs.testing.model_server import Reply, Rule, Script
from tests.bench.harness import Figure, latency, model_process
from tests.bench.workflow_bench import running_system

MODEL = "bench-model"
HEADERS = {"A2A-Version": "1.0"}


def _send(text: str, method: str = "SendMessage") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": text}],
            }
        },
    }


async def _agent_s(log: EventLog, context_id: str) -> float:
    """The agent's own time: its message recorded -> its turn's end recorded (log times)."""
    envs = await log.read(subjects.chat_all(context_id))
    posted = next(e for e in envs if isinstance(e.event, ChatMessagePosted))
    ended = next(e for e in envs if isinstance(e.event, ChatTurnCompleted))
    return (ended.recorded_at - posted.recorded_at).total_seconds()


async def overhead(c: httpx.AsyncClient, log: EventLog, samples: int) -> list[Figure]:
    for _ in range(5):
        await c.post("/api/a2a", json=_send("warm up"), headers=HEADERS)
    walls, over = [], []
    for _ in range(samples):
        t = time.perf_counter()
        r = await c.post("/api/a2a", json=_send("hello"), headers=HEADERS)
        wall = time.perf_counter() - t
        task = r.json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        walls.append(wall)
        over.append(max(0.0, wall - await _agent_s(log, task["contextId"])))
    return [
        latency("A2A SendMessage (blocking), instant model: wall", walls),
        latency(
            "  overhead over the agent's own time (auth, append, wait, fold, answer)",
            over,
            target_p50_ms=10,
            target_p99_ms=10,
        ),
    ]


# httpcore's pool scans every connection of its pool for each request and each response, so
# one client holding 200 connections spends more time in that scan than Heym spends on the
# tasks: the load comes from several clients with small pools instead.
CLIENT_POOL = 20


@contextlib.asynccontextmanager
async def clients(base_url: str, key: str, n: int) -> AsyncIterator[list[httpx.AsyncClient]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=base_url,
                    headers={"X-MCP-Key": key},
                    timeout=120,
                    limits=httpx.Limits(
                        max_connections=CLIENT_POOL, max_keepalive_connections=CLIENT_POOL
                    ),
                )
            )
            for _ in range(max(1, n // CLIENT_POOL))
        ]


async def concurrent(cs: list[httpx.AsyncClient], n: int) -> Figure:
    async def one(i: int) -> bool:
        c = cs[i % len(cs)]
        r = await c.post("/api/a2a", json=_send("slow model please"), headers=HEADERS)
        body = r.json()
        return "result" in body and body["result"]["task"]["status"]["state"] == (
            "TASK_STATE_COMPLETED"
        )

    t = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
    wall = time.perf_counter() - t
    errors = sum(1 for r in results if r is not True)
    return Figure(
        name=f"A2A {n} concurrent SendMessage tasks, 100 ms model: wall",
        unit="s",
        value=wall,
        params={"tasks": n, "errors": errors, "target_s": 1.5, "target_errors": 0},
    )


async def first_event(c: httpx.AsyncClient, samples: int) -> Figure:
    waits = []
    for i in range(samples + 3):
        t = time.perf_counter()
        async with c.stream(
            "POST", "/api/a2a", json=_send("stream", "SendStreamingMessage"), headers=HEADERS
        ) as s:
            async for line in s.aiter_lines():
                if line.startswith("data:"):
                    if i >= 3:
                        waits.append(time.perf_counter() - t)
                    assert "task" in json.loads(line[5:])["result"]
                    break
    return latency("A2A SendStreamingMessage: time to the first SSE event", waits, target_p50_ms=10)


async def run() -> list[Figure]:
    async with (
        running_system() as system,
        model_process(Script(rules=[Rule(reply=Reply(text="ok"))])) as instant,
        model_process(Script(rules=[Rule(reply=Reply(text="ok", delay=0.1))])) as slow,
    ):
        figures: list[Figure] = []
        for model_url, label in ((instant, "instant"), (slow, "slow")):
            _, key = await system.new_user()
            limits = httpx.Limits(max_connections=300, max_keepalive_connections=300)
            async with httpx.AsyncClient(
                base_url=system.base_url,
                headers={"X-MCP-Key": key},
                timeout=120,
                limits=limits,
            ) as c:
                r = await c.post(
                    "/api/credentials",
                    json={
                        "name": "bench",
                        "type": "custom",
                        "base_url": model_url,
                        "api_key": "sk-bench-0000000000",
                    },
                )
                cred = str(r.json()["id"])
                r = await c.patch(
                    "/api/a2a/settings",
                    json={"enabled": True, "credential_id": cred, "model": MODEL},
                )
                assert r.status_code == 200, r.text
                if label == "instant":
                    async with connected(system.nats_url) as nc:
                        figures += await overhead(c, EventLog(nc), samples=100)
                    figures.append(await first_event(c, samples=50))
                else:
                    async with clients(system.base_url, key, 200) as cs:
                        await concurrent(cs, 10)  # warm up
                        figures.append(await concurrent(cs, 200))
        return figures
