"""The agent runtime holds no work in memory: children's ends drive their parents, restarts
lose nothing, a cancel reaches every invocation and child run, rate limits are retried inside
the invocation. Ordering is read off the model server's request log, never from sleeps."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from contracts.agents import (
    AgentFinished,
    AgentStarted,
    LlmCallRecorded,
    ModelCallFailed,
    ToolCallsDispatched,
)
from contracts.base import Envelope
from contracts.runs import RunCompleted
from libs.testing.eventually import eventually
from libs.testing.model_server import HttpError, Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

AGENT_CONSUMERS = ("agent_runtime-work", "agent_runtime-agents")


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


def asked(model: ModelServer) -> Counter[str]:
    return Counter(r.rule_name for r in model.chat_requests if r.rule_name)


def has_tool_result(r: Any) -> bool:
    return any(m.get("role") == "tool" for m in r.messages)


def wait_workflow(seconds: float, label: str = "slow") -> list[dict[str, Any]]:
    return [
        n("in", "textInput", "req"),
        n("w", "wait", "pause", duration=int(seconds * 1000)),
        n("o", "output", label, message="waited $req.text"),
    ]


WAIT_EDGES = [e("in", "w"), e("w", "o")]


def of(events: list[Envelope], kind: type[Any]) -> list[Any]:
    return [env.event for env in events if isinstance(env.event, kind)]


async def test_rate_limited_model_is_retried_inside_the_invocation(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        limited = HttpError(
            status=429, message="slow down", type="rate_limit", headers={"Retry-After": "1"}
        )
        model.script = Script(
            rules=[
                Rule(name="limited", times=2, reply=Reply(error=limited)),
                Rule(name="ok", reply=Reply(text="answered after the limit")),
            ]
        )
        wid = await create(
            c, [n("in", "textInput", "req"), agent("a", "patient", cred)], [e("in", "a")]
        )
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "hi"},
            headers={"X-Simple-Response": "false"},
        )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["outputs"]["patient"]["text"] == "answered after the limit"
    assert [x.status for x in model.chat_requests] == [429, 429, 200]
    times = [x.received_at for x in model.chat_requests]
    assert times[1] - times[0] >= 1.0  # Retry-After: 1 honoured
    assert times[2] - times[1] >= 1.0
    events = await system.events(body["execution_history_id"])
    assert len(of(events, AgentStarted)) == 1  # one invocation, no node retry
    failures = of(events, ModelCallFailed)
    assert [(f.attempt, f.status_code, f.retry_after_s) for f in failures] == [
        (1, 429, 1.0),
        (2, 429, 1.0),
    ]
    (answer,) = of(events, LlmCallRecorded)
    assert answer.attempt == 3


async def test_kill_9_while_a_grandchild_runs_holds_no_message_and_repeats_no_turn(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        child = await create(c, wait_workflow(4), WAIT_EDGES)
        model.script = Script(
            rules=[
                Rule(
                    name="boss1",
                    when=Match(system_contains="BOSS", assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall("call_sub_agent", {"sub_agent_label": "quick", "prompt": "q"}),
                            ToolCall("call_sub_agent", {"sub_agent_label": "deep", "prompt": "d"}),
                        ]
                    ),
                ),
                Rule(
                    name="boss2", when=Match(system_contains="BOSS"), reply=Reply(text="all done")
                ),
                Rule(name="quick", when=Match(system_contains="QUICK"), reply=Reply(text="fast")),
                Rule(
                    name="deep1",
                    when=Match(system_contains="DEEP", assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "call_sub_workflow", {"workflow_id": child, "inputs": {"text": "x"}}
                            )
                        ]
                    ),
                ),
                Rule(
                    name="deep2", when=Match(system_contains="DEEP"), reply=Reply(text="deep done")
                ),
            ]
        )
        nodes = [
            n("in", "textInput", "req"),
            agent(
                "b",
                "boss",
                cred,
                isOrchestrator=True,
                subAgentLabels=["quick", "deep"],
                systemInstruction="BOSS",
            ),
            agent("q", "quick", cred, systemInstruction="QUICK", userMessage="$input.text"),
            agent(
                "d",
                "deep",
                cred,
                systemInstruction="DEEP",
                userMessage="$input.text",
                subWorkflowIds=[child],
            ),
        ]
        wid = await create(c, nodes, [e("in", "b")])
        run = asyncio.create_task(
            c.post(
                f"/api/workflows/{wid}/execute",
                json={"text": "go"},
                headers={"X-Simple-Response": "false"},
                timeout=120,
            )
        )
        # the grandchild (a run with a 4 s wait) is running once `deep` recorded its dispatch
        # and `quick` its answer; from then on everyone waits
        await eventually(lambda: asked(model)["deep1"] == 1 and asked(model)["quick"] == 1)
        run_id = (await eventually(lambda: _history(c, wid)))[0]["id"]
        await eventually(lambda: _waiting_on_grandchild(system, run_id), timeout=10)
        # nobody holds a message for the orchestrator or the sub-agents while they wait
        idle = dict.fromkeys(AGENT_CONSUMERS, 0)
        await eventually(lambda: _ack_pending_is(system, idle), timeout=5)
        await system.kill("agent_runtime")
        await system.restart("agent_runtime")
        r = await asyncio.wait_for(run, 90)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["outputs"]["boss"]["text"] == "all done"
    assert asked(model) == {"boss1": 1, "boss2": 1, "quick": 1, "deep1": 1, "deep2": 1}


async def test_a_30_second_sub_workflow_survives_two_runtime_restarts(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        child = await create(c, wait_workflow(30), WAIT_EDGES)
        model.script = Script(
            rules=[
                Rule(
                    name="ask",
                    when=Match(assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "call_sub_workflow", {"workflow_id": child, "inputs": {"text": "z"}}
                            )
                        ]
                    ),
                ),
                Rule(name="answer", reply=Reply(text="<{tool_results}>")),
            ]
        )
        wid = await create(
            c,
            [n("in", "textInput", "req"), agent("a", "waiter", cred, subWorkflowIds=[child])],
            [e("in", "a")],
        )
        run = asyncio.create_task(
            c.post(f"/api/workflows/{wid}/execute", json={"text": "go"}, timeout=120)
        )
        await eventually(lambda: asked(model)["ask"] == 1)
        run_id = (await eventually(lambda: _history(c, wid)))[0]["id"]
        idle = dict.fromkeys(AGENT_CONSUMERS, 0)
        for _ in range(2):
            # the child run is waiting on its 30 s timer and the agent on the child
            await eventually(lambda: _dispatch_recorded(system, run_id), timeout=10)
            await eventually(lambda: _ack_pending_is(system, idle), timeout=5)
            await system.kill("agent_runtime")
            await system.restart("agent_runtime")
        r = await asyncio.wait_for(run, 90)
    assert r.status_code == 200, r.text
    assert "waited z" in r.json()["waiter"]["text"]
    assert asked(model) == {"ask": 1, "answer": 1}


async def test_cancel_reaches_every_invocation_and_child_run(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        child = await create(c, wait_workflow(20), WAIT_EDGES)
        model.script = Script(
            rules=[
                Rule(
                    name="boss1",
                    when=Match(system_contains="BOSS", assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall("call_sub_agent", {"sub_agent_label": "one", "prompt": "1"}),
                            ToolCall("call_sub_agent", {"sub_agent_label": "two", "prompt": "2"}),
                            ToolCall("call_sub_workflow", {"workflow_id": child, "inputs": {}}),
                        ]
                    ),
                ),
                Rule(name="boss2", when=Match(system_contains="BOSS"), reply=Reply(text="never")),
                Rule(name="sub", reply=Reply(hang=True)),  # in flight until cancelled
            ]
        )
        nodes = [
            n("in", "textInput", "req"),
            agent(
                "b",
                "boss",
                cred,
                isOrchestrator=True,
                subAgentLabels=["one", "two"],
                systemInstruction="BOSS",
                subWorkflowIds=[child],
            ),
            agent("s1", "one", cred, userMessage="$input.text"),
            agent("s2", "two", cred, userMessage="$input.text"),
        ]
        wid = await create(c, nodes, [e("in", "b")], sse_enabled=True)
        frames: list[dict[str, Any]] = []

        async def follow() -> None:
            async with c.stream(
                "POST",
                f"/api/workflows/{wid}/execute/stream",
                json={"text": "go"},
                headers={"X-Simple-Response": "false"},
            ) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data:"):
                        frames.append(json.loads(line[5:]))
                        if frames[-1]["type"] == "execution_complete":
                            return

        stream = asyncio.create_task(follow())
        # both sub-agents are waiting on the model and the child run is waiting on its timer
        await eventually(lambda: asked(model)["sub"] == 2 and frames)
        run_id = frames[0]["execution_id"]
        cancel = await c.post(f"/api/workflows/{wid}/executions/{run_id}/cancel")
        assert cancel.status_code == 200, cancel.text
        cancelled_at = time.time()
        await asyncio.wait_for(stream, 30)
    assert frames[-1]["status"] == "cancelled"

    async def everything_ended() -> list[Envelope]:
        events = await system.events(run_id)
        ends = of(events, AgentFinished)
        assert len(ends) == 3, ends
        return events

    events = await eventually(everything_ended, timeout=20)
    ends = of(events, AgentFinished)
    assert {f.status for f in ends} == {"cancelled"}
    # the sub-agents' model requests (which never answer) were dropped at once, not waited
    # out: the model timeout here is 3 s, with retries after it
    assert max(f.finished_at_ms for f in ends) / 1000 - cancelled_at < 2.5
    child_runs = [d.target for d in _dispatched(events) if d.source == "sub_workflow"]
    assert len(child_runs) == 1
    child_events = await eventually(lambda: _ended(system, child_runs[0]), timeout=20)
    assert of(child_events, RunCompleted)[0].status == "cancelled"
    # the model server received no request after the cancel was recorded
    assert cancelled_at
    assert all(x.received_at <= cancelled_at for x in model.chat_requests)
    assert "boss2" not in asked(model)


def _dispatched(events: list[Envelope]) -> list[Any]:
    return [call for ev in of(events, ToolCallsDispatched) for call in ev.calls]


async def _ended(system: System, run_id: str) -> list[Envelope]:
    events = await system.events(run_id)
    assert of(events, RunCompleted), "child run still running"
    return events


async def _history(c: Any, wid: str) -> list[dict[str, Any]]:
    r = await c.get(f"/api/workflows/{wid}/history")
    assert r.status_code == 200, r.text
    items = list(r.json()["items"])
    assert items, "no run yet"
    return items


async def _ack_pending_is(system: System, expected: dict[str, int]) -> bool:
    found = await system.ack_pending(*expected)
    assert found == expected, found
    return True


async def _dispatch_recorded(system: System, run_id: str) -> bool:
    events = await system.events(run_id)
    assert _dispatched(events), "no tool dispatch recorded yet"
    return True


async def _waiting_on_grandchild(system: System, run_id: str) -> bool:
    events = await system.events(run_id)
    sources = {d.source for d in _dispatched(events)}
    assert sources == {"sub_agent", "sub_workflow"}, sources
    answered = [
        env.event
        for env in events
        if type(env.event).__name__ == "ToolCallRecorded"
        and getattr(env.event, "source", "") == "sub_agent"
    ]
    assert answered, "quick has not answered yet"
    return True


async def test_an_answer_at_once_is_one_append_after_the_request(
    system: System, model: ModelServer
) -> None:
    """The start (prompt, tools) and the model's answer are acted on only by the next step,
    so they go into the append of the step that ends the invocation: one append, not three,
    on the path of every agent that answers without tools."""
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        model.script = Script(rules=[Rule(name="answer", reply=Reply(text="at once"))])
        wid = await create(
            c, [n("in", "textInput", "req"), agent("a", "quick", cred)], [e("in", "a")]
        )
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "hi"},
            headers={"X-Simple-Response": "false"},
        )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["outputs"]["quick"]["text"] == "at once"
    events = await system.events(body["execution_history_id"])
    agent_messages: dict[int, list[str]] = {}
    for env in events:
        if env.subject.startswith("heym.agent."):
            agent_messages.setdefault(env.sequence, []).append(type(env.event).__name__)
    assert list(agent_messages.values()) == [
        ["AgentRequested"],
        ["AgentStarted", "LlmCallRecorded", "AgentFinished"],
    ]
