"""The seed's Paris example: an orchestrator calls two sub-agents in one turn; they run
concurrently and the orchestrator answers with both results."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from contracts.agents import ToolCallRecorded
from contracts.nodes import NodeCompleted
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def paris_model() -> Iterator[ModelServer]:
    script = Script(
        rules=[
            Rule(
                name="orchestrate",
                when=Match(tool_offered="call_sub_agent", assistant_turns=0),
                reply=Reply(
                    tool_calls=[
                        ToolCall(
                            "call_sub_agent",
                            {"sub_agent_label": "distanceAgent", "prompt": "How far is Paris?"},
                        ),
                        ToolCall(
                            "call_sub_agent",
                            {"sub_agent_label": "foodAgent", "prompt": "What to eat in Paris?"},
                        ),
                    ]
                ),
            ),
            Rule(
                name="distance",
                when=Match(last_user_contains="How far"),
                reply=Reply(text="Paris is 450 km away.", delay=0.3),
            ),
            Rule(
                name="food",
                when=Match(last_user_contains="What to eat"),
                reply=Reply(text="Try a croissant.", delay=0.3),
            ),
            Rule(
                name="answer",
                when=Match(tool_result_for="call_sub_agent"),
                reply=Reply(text="Plan: {tool_results}"),
            ),
        ]
    )
    with ModelServer(script) as server:
        yield server


async def test_paris_orchestrator_runs_sub_agents_concurrently(
    system: System, paris_model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, paris_model)
        nodes = [
            n("in", "textInput", "userInput"),
            agent(
                "orch",
                "planner",
                cred,
                isOrchestrator=True,
                subAgentLabels=["distanceAgent", "foodAgent"],
                systemInstruction="You plan trips.",
                userMessage="$userInput.text",
            ),
            agent("d", "distanceAgent", cred, userMessage="$input.text"),
            agent("f", "foodAgent", cred, userMessage="$input.text"),
            n("o", "output", "answer", message="$planner.text"),
        ]
        edges = [
            e("in", "orch"),
            e("orch", "o"),
            e("orch", "d", source_handle="sub-agents", target_handle="sub-agent-input"),
            e("orch", "f", source_handle="sub-agents", target_handle="sub-agent-input"),
        ]
        wid = await create(c, nodes, edges)
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "A day in Paris"},
            headers={"X-Simple-Response": "false"},
        )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "success", body
    answer = body["outputs"]["answer"]["result"]
    assert "450 km" in answer
    assert "croissant" in answer
    # both sub-agent requests reached the model before either had answered (300 ms each)
    ledger = {entry.rule_name: entry for entry in paris_model.chat_requests}
    assert abs(ledger["distance"].received_at - ledger["food"].received_at) < 0.25
    planner = next(r for r in body["node_results"] if r["node_label"] == "planner")
    calls = planner["output"]["tool_calls"]
    assert [c["name"] for c in calls] == ["call_sub_agent", "call_sub_agent"]
    assert all(c["status"] == "success" and c["tool_call_id"] for c in calls)
    assert planner["output"]["tool_metrics"]["count"] == 2
    delegated = [
        r for r in body["node_results"] if r["metadata"].get("invocation") == "sub_agent_tool"
    ]
    assert sorted(r["node_label"] for r in delegated) == ["distanceAgent", "foodAgent"]
    # Each sub-agent's node result is in the log before its answer reaches the orchestrator
    # (the two are sent together, in this order).
    events = await system.events(body["execution_history_id"])
    node_seq = {
        env.event.invocation_id: env.sequence
        for env in events
        if isinstance(env.event, NodeCompleted) and env.subject.split(".")[3] == "node"
    }
    answers = [env for env in events if isinstance(env.event, ToolCallRecorded)]
    assert len(answers) == 2
    for env in answers:
        assert node_seq[env.event.extra["invocation_id"]] < env.sequence


async def test_agent_progress_streams_over_sse(system: System, paris_model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, paris_model)
        nodes = [
            n("in", "textInput", "userInput"),
            agent(
                "orch",
                "planner",
                cred,
                isOrchestrator=True,
                subAgentLabels=["distanceAgent", "foodAgent"],
            ),
            agent("d", "distanceAgent", cred, userMessage="$input.text"),
            agent("f", "foodAgent", cred, userMessage="$input.text"),
        ]
        wid = await create(c, nodes, [e("in", "orch")], sse_enabled=True)
        frames = []
        async with c.stream(
            "POST", f"/api/workflows/{wid}/execute/stream", json={"text": "Paris"}
        ) as r:
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    frames.append(json.loads(line[5:]))
    progress = [f for f in frames if f["type"] == "agent_progress" and f["node_label"] == "planner"]
    phases = [(p["entry"]["phase"], p["entry"]["name"]) for p in progress]
    assert phases.count(("start", "call_sub_agent")) == 2
    assert phases.count(("result", "call_sub_agent")) == 2
    labels = {
        p["entry"]["arguments"].get("sub_agent_label")
        for p in progress
        if p["entry"]["phase"] == "start"
    }
    assert labels == {"distanceAgent", "foodAgent"}
    started = {f["node_label"] for f in frames if f["type"] == "node_start"}
    assert {"distanceAgent", "foodAgent", "planner"} <= started
    assert frames[-1]["type"] == "execution_complete"
