"""Human review benchmark: decision POST → the paused agent's next model request.

For agents whose own log holds 1,000 and 50,000 events before the pause (many tool turns,
two events each, one message per turn, as the runtime writes them), measured two ways:
warm (the runtime still has the invocation's fold cached) and cold (the runtime was
restarted after the pause, so the decision is applied after a replay of the whole aggregate).
Targets: p95 ≤ 50 ms at 1,000 events, ≤ 250 ms at 50,000.

The paused invocations are written to the log directly while the agent runtime is stopped
(a real run would need tens of thousands of model calls to get there), exactly as the runtime
records them; everything after that is the real system: the review service opens each review
(token, read model, expiry timer), the runtime replays and reports the pause, the gateway
takes the decision, the runtime resumes and asks the scripted model.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import asyncpg
import httpx
import nats

from contracts import subjects
from contracts.agents import (
    AgentRequested,
    AgentStarted,
    DispatchedCall,
    LlmCallRecorded,
    ToolCallRecorded,
    ToolCallsDispatched,
)
from contracts.base import Event
from contracts.review import ReviewRequested
from contracts.runs import WorkflowSnapshot
from libs.eventlog import EventLog
from libs.eventlog.log import H_MSG_ID
from libs.testing.model_server import ModelServer, Reply, Rule, Script
from tests.bench.harness import Figure, latency
from tests.bench.workflow_bench import running_system
from tests.e2e.system import System

MODEL = "bench-model"
SIZES = {1_000: 16, 50_000: 6}  # events before the pause: paused runs (half warm, half cold)


def _tool_turn(turn: int) -> list[Event]:
    call = f"c{turn}"
    return [
        LlmCallRecorded(
            turn=turn,
            model=MODEL,
            message={
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "lookup", "arguments": "{}"},
                    }
                ],
            },
            usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        ),
        ToolCallRecorded(
            turn=turn,
            tool_call_id=call,
            name="lookup",
            source="python",
            arguments="{}",
            result={"v": turn},
            status="success",
            started_at_ms=0,
            finished_at_ms=1,
            elapsed_ms=1.0,
        ),
    ]


class Fabricator:
    """Writes paused agent invocations to the log, as the runtime would have recorded them."""

    def __init__(self, nc: nats.NATS, owner: str, cred: str) -> None:
        self.log = EventLog(nc)
        self.js = nc.jetstream()
        self.owner = owner
        self.cred = cred

    async def paused(self, events: int) -> str:
        run_id = uuid.uuid4().hex
        inv = "i2"
        subject = subjects.agent(run_id, inv)
        data = {"label": "writer", "credentialId": self.cred, "model": MODEL, "hitlEnabled": True}
        node_dict = {"id": "w", "type": "agent", "data": data}
        head: list[list[Event]] = [
            [
                AgentRequested(
                    invocation_id=inv,
                    node_id="w",
                    node_label="writer",
                    node=node_dict,
                    inputs={"request": {"text": "go"}},
                    owner_id=self.owner,
                    workflow_id="bench",
                    workflow=WorkflowSnapshot(id="bench", name="bench", nodes=[node_dict]),
                )
            ],
            [
                AgentStarted(
                    invocation_id=inv,
                    node_id="w",
                    node_label="writer",
                    model=MODEL,
                    credential_id=self.cred,
                    messages=[
                        {"role": "system", "content": "You write."},
                        {"role": "user", "content": "go"},
                    ],
                    tools=[
                        {
                            "name": "request_human_review",
                            "source": "hitl",
                            "description": "review",
                            "parameters": {"type": "object", "properties": {}},
                            "meta": {},
                        },
                        {
                            "name": "lookup",
                            "source": "python",
                            "description": "look up",
                            "parameters": {"type": "object", "properties": {}},
                            "meta": {"code": ""},
                        },
                    ],
                    max_tool_iterations=1_000_000,
                    started_at_ms=int(time.time() * 1000),
                )
            ],
        ]
        turns = max(0, (events - 5) // 2)
        batches = head + [_tool_turn(t) for t in range(1, turns + 1)]
        last = turns + 1
        rid = uuid.uuid4().hex
        requested = ReviewRequested(
            request_id=rid,
            invocation_id=inv,
            turn=last,
            tool_call_id="rv",
            summary="Approve the bench step",
            draft_text="bench draft",
            workflow_id="bench",
            workflow_name="bench",
            node_id="w",
            node_label="writer",
            owner_id=self.owner,
            requested_at_ms=int(time.time() * 1000),
        )
        review_call = {
            "id": "rv",
            "type": "function",
            "function": {"name": "request_human_review", "arguments": "{}"},
        }
        batches.append(
            [
                LlmCallRecorded(
                    turn=last,
                    model=MODEL,
                    message={"role": "assistant", "content": None, "tool_calls": [review_call]},
                ),
                requested,
                ToolCallsDispatched(
                    turn=last,
                    calls=[
                        DispatchedCall(
                            tool_call_id="rv",
                            name="request_human_review",
                            source="hitl",
                            target=rid,
                        )
                    ],
                ),
            ]
        )
        acks = []
        for i, batch in enumerate(batches):
            acks.append(
                await self.js.publish_async(
                    subject, self.log.codec.encode(batch), headers={H_MSG_ID: f"{run_id}-{i}"}
                )
            )
            if len(acks) >= 2000:
                await asyncio.gather(*acks)
                acks.clear()
        done = await asyncio.gather(*acks)
        sequence = done[-1].seq
        copy = ReviewRequested(**{**_fields(requested), "agent_sequence": sequence})
        await self.log.append(
            subjects.work_item(run_id, "review", rid), [copy], expected_sequence=0
        )
        return run_id


def _fields(event: ReviewRequested) -> dict[str, Any]:
    return {f: getattr(event, f) for f in event.__struct_fields__}


async def _tokens(pool_url: str, run_ids: list[str], timeout: float = 300) -> dict[str, str]:
    """Each paused run's review link once its pause was reported (the runtime replayed it)."""
    conn = await asyncpg.connect(pool_url)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = await conn.fetch(
                "SELECT run_id, review_url FROM review_requests WHERE run_id = ANY($1)", run_ids
            )
            if len(rows) == len(run_ids):
                return {r["run_id"]: r["review_url"].rsplit("/review/", 1)[1] for r in rows}
            await asyncio.sleep(0.2)
    finally:
        await conn.close()
    raise TimeoutError("reviews were not opened")


async def _reported(system: System, run_ids: list[str], timeout: float = 600) -> None:
    """Wait until the runtime replayed every paused invocation and reported its pause."""
    nc = await nats.connect(system.nats_url)
    log = EventLog(nc)
    try:
        deadline = time.monotonic() + timeout
        pending = set(run_ids)
        while pending and time.monotonic() < deadline:
            for run_id in list(pending):
                if await log.last_sequence(subjects.node(run_id, "i2")):
                    pending.discard(run_id)
            await asyncio.sleep(0.2)
        if pending:
            raise TimeoutError(f"{len(pending)} pauses were never reported")
    finally:
        await nc.close()


async def _decide(
    c: httpx.AsyncClient, model: ModelServer, log: EventLog, run_id: str, token: str
) -> float:
    """One decision, timed to the model's next request; then wait for the invocation to end
    (so the next sample does not share the runtime with this one's last steps)."""
    node = subjects.node(run_id, "i2")
    marker = await log.last_sequence(node)
    before = len(model.chat_requests)
    t = time.time()
    r = await c.post(f"/api/hitl/{token}/decision", json={"action": "accept"})
    assert r.status_code == 202, r.text
    import sys

    print(f"post t0={t:.4f} done={time.time():.4f}", file=sys.stderr)
    deadline = time.monotonic() + 120
    while len(model.chat_requests) == before:
        if time.monotonic() > deadline:
            raise TimeoutError("the agent never asked the model again")
        await asyncio.sleep(0.001)
    elapsed = model.chat_requests[before].received_at - t
    while await log.last_sequence(node) == marker:
        if time.monotonic() > deadline:
            raise TimeoutError("the resumed agent never finished")
        await asyncio.sleep(0.005)
    return elapsed


async def _size(
    system: System, model: ModelServer, c: httpx.AsyncClient, owner: str, cred: str, events: int
) -> list[Figure]:
    samples = SIZES[events]
    await system.children["agent_runtime"].stop(10)
    nc = await nats.connect(system.nats_url)
    try:
        fab = Fabricator(nc, owner, cred)
        run_ids = [await fab.paused(events) for _ in range(samples)]
    finally:
        await nc.close()
    tokens = await _tokens(system.database_url, run_ids)
    await system.restart("agent_runtime")
    await _reported(system, run_ids)
    half = samples // 2
    nc = await nats.connect(system.nats_url)
    try:
        log = EventLog(nc)
        warm = [await _decide(c, model, log, r, tokens[r]) for r in run_ids[:half]]
        await system.kill("agent_runtime")  # the folds cached in memory are gone
        await system.restart("agent_runtime")
        cold = [await _decide(c, model, log, r, tokens[r]) for r in run_ids[half:]]
    finally:
        await nc.close()
    target = 50 if events <= 1_000 else 250
    return [
        latency(
            f"review decision → next model request, {events:,} events, warm",
            warm,
            events=events,
            target_p95_ms=target,
        ),
        latency(
            f"review decision → next model request, {events:,} events, cold (replayed)",
            cold,
            events=events,
            target_p95_ms=target,
        ),
    ]


async def run() -> list[Figure]:
    figures: list[Figure] = []
    script = Script(rules=[Rule(reply=Reply(text="done"))], context_windows={MODEL: 1_000_000_000})
    async with running_system() as system:
        with ModelServer(script) as model:
            owner, key = await system.new_user()
            async with httpx.AsyncClient(
                base_url=system.base_url, headers={"X-MCP-Key": key}, timeout=120
            ) as c:
                r = await c.post(
                    "/api/credentials",
                    json={
                        "name": "bench",
                        "type": "custom",
                        "base_url": model.base_url,
                        "api_key": "sk-bench-0000000000",
                    },
                )
                cred = str(r.json()["id"])
                for events in SIZES:
                    figures.extend(await _size(system, model, c, owner, cred, events))
    return figures
