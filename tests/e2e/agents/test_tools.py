"""Each tool source end to end through a workflow run over REST: sub-workflow, canvas node
tool, unknown tool, failing tool, malformed arguments; depth 6 refused for sub-agents and
sub-workflows; model errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from libs.testing.model_server import HttpError, Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


def tool_results(body: dict[str, Any], label: str) -> list[dict[str, Any]]:
    node = next(
        r for r in body["node_results"] if r["node_label"] == label and r["status"] == "success"
    )
    return list(node["output"].get("tool_calls", []))


async def run(system: System, key: str, wid: str, text: str = "go") -> dict[str, Any]:
    async with system.client(key) as c:
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": text},
            headers={"X-Simple-Response": "false"},
        )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_sub_workflow_tool(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        child = await create(
            c,
            [
                n(
                    "in",
                    "textInput",
                    "childIn",
                    inputFields=[{"key": "city"}, {"key": "units", "defaultValue": "km"}],
                ),
                n(
                    "m",
                    "jsonOutputMapper",
                    "out",
                    mappings=[
                        {"key": "where", "value": "$childIn.city"},
                        {"key": "units", "value": "$childIn.units"},
                    ],
                ),
            ],
            [e("in", "m")],
        )
        model.script = Script(
            rules=[
                Rule(
                    when=Match(tool_offered="call_sub_workflow", assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "call_sub_workflow",
                                {"workflow_id": child, "inputs": {"city": "Lyon"}},
                            )
                        ]
                    ),
                ),
                Rule(
                    when=Match(tool_result_for="call_sub_workflow"),
                    reply=Reply(text="child said {tool_results}"),
                ),
            ]
        )
        wid = await create(
            c,
            [n("in", "textInput", "req"), agent("a", "caller", cred, subWorkflowIds=[child])],
            [e("in", "a")],
        )
    body = await run(system, key, wid)
    (call,) = tool_results(body, "caller")
    assert call["status"] == "success"
    assert call["result"]["status"] == "success"
    assert call["result"]["outputs"] == {"where": "Lyon", "units": "km"}  # the default filled in
    text = body["outputs"]["caller"]["text"]
    assert '"where": "Lyon"' in text


async def test_canvas_node_tool_runs_once_and_keeps_its_configuration(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        model.script = Script(
            rules=[
                Rule(
                    when=Match(tool_offered="remember_city", assistant_turns=0),
                    reply=Reply(tool_calls=[ToolCall("remember_city", {"variableValue": "Nice"})]),
                ),
                Rule(
                    when=Match(tool_result_for="remember_city"),
                    reply=Reply(text="found {tool_results}"),
                ),
            ]
        )
        tool_node = n(
            "t",
            "variable",
            "Remember City",
            agentProvidedFields=["variableValue"],
            variableName="city",
            variableValue="Paris",
        )
        nodes = [n("in", "textInput", "req"), agent("a", "asker", cred), tool_node]
        edges = [e("in", "a"), e("t", "a", target_handle="tool-input")]
        wid = await create(c, nodes, edges)
        before = (await c.get(f"/api/workflows/{wid}")).json()
    body = await run(system, key, wid)
    (call,) = tool_results(body, "asker")
    assert call["name"] == "remember_city"
    assert call["result"] == {"name": "city", "value": "Nice", "type": "auto"}
    # the tool node never ran as a workflow node
    assert "Remember City" not in {r["node_label"] for r in body["node_results"]}
    async with system.client(key) as c:
        after = (await c.get(f"/api/workflows/{wid}")).json()
    assert after["nodes"] == before["nodes"]
    assert after["version"] == before["version"]


async def test_unknown_failing_and_malformed_tool_calls_become_tool_errors(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        model.script = Script(
            rules=[
                Rule(
                    when=Match(assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall("does_not_exist", {}),
                            ToolCall("py_tool", {"x": 1}),
                            ToolCall("py_tool", raw_arguments='{"x": 1,,'),
                        ]
                    ),
                ),
                Rule(when=Match(last_is_tool_result=True), reply=Reply(text="recovered")),
            ]
        )
        py = {
            "name": "py_tool",
            "description": "a python tool",
            "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "code": "def py_tool(x): return x",
        }
        wid = await create(
            c, [n("in", "textInput", "req"), agent("a", "worker", cred, tools=[py])], [e("in", "a")]
        )
    body = await run(system, key, wid)
    assert body["status"] == "success"
    assert body["outputs"]["worker"]["text"] == "recovered"
    calls = tool_results(body, "worker")
    assert [c["status"] for c in calls] == ["error", "success", "error"]
    assert calls[0]["result"] == {"error": "Unknown tool: does_not_exist"}
    assert calls[1]["result"] == 1  # the Python tool ran in the tool sandbox
    assert "Invalid JSON arguments" in calls[2]["result"]["error"]
    # the model saw the results as tool messages, in call order
    last = model.chat_requests[-1].body["messages"]
    tool_msgs = [json.loads(m["content"]) for m in last if m["role"] == "tool"]
    assert tool_msgs[1] == 1
    assert [tool_msgs[0]["error"][:12], tool_msgs[2]["error"][:12]] == [
        "Unknown tool",
        "Invalid JSON",
    ]
    assert body["node_results"][-1]["output"]["tool_metrics"]["error"] == 2


async def test_sub_agent_depth_six_is_refused(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        model.script = Script(
            rules=[
                Rule(
                    when=Match(tool_offered="call_sub_agent", assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "call_sub_agent", {"sub_agent_label": "deep", "prompt": "go deeper"}
                            )
                        ]
                    ),
                ),
                Rule(when=Match(last_is_tool_result=True), reply=Reply(text="<{tool_results}>")),
            ]
        )
        nodes = [
            n("in", "textInput", "req"),
            agent("boss", "boss", cred, isOrchestrator=True, subAgentLabels=["deep"]),
            agent(
                "deep",
                "deep",
                cred,
                isOrchestrator=True,
                subAgentLabels=["deep"],
                userMessage="$input.text",
            ),
        ]
        wid = await create(c, nodes, [e("in", "boss")])
    body = await run(system, key, wid)
    assert body["status"] == "success"
    assert "sub-agent depth limit of 5 reached" in body["outputs"]["boss"]["text"]
    depths = [r for r in body["node_results"] if r["node_label"] == "deep"]
    assert len(depths) == 5  # depths 1..5 ran; the sixth call was refused


async def test_sub_workflow_depth_six_is_refused(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await create(
            c, [n("in", "textInput", "req"), agent("a", "recursive", cred)], [e("in", "a")]
        )
        wf = (await c.get(f"/api/workflows/{wid}")).json()
        wf["nodes"][1]["data"]["subWorkflowIds"] = [wid]
        assert (await c.put(f"/api/workflows/{wid}", json=wf)).status_code == 200
        model.script = Script(
            rules=[
                Rule(
                    when=Match(tool_offered="call_sub_workflow", assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "call_sub_workflow",
                                {"workflow_id": wid, "inputs": {"text": "again"}},
                            )
                        ]
                    ),
                ),
                Rule(when=Match(last_is_tool_result=True), reply=Reply(text="<{tool_results}>")),
            ]
        )
    body = await run(system, key, wid)
    assert body["status"] == "success"
    assert "sub-workflow depth limit of 5 reached" in body["outputs"]["recursive"]["text"]


async def test_model_errors_fail_the_node_clearly_and_retry_as_configured(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        model.script = Script(
            rules=[
                Rule(
                    when=Match(last_user_contains="boom"),
                    reply=Reply(error=HttpError(status=500, message="model exploded")),
                )
            ]
        )
        wid = await create(
            c,
            [
                n("in", "textInput", "req"),
                agent(
                    "a",
                    "fragile",
                    cred,
                    retryEnabled=True,
                    retryMaxAttempts=2,
                    retryWaitSeconds=0.1,
                ),
            ],
            [e("in", "a")],
        )
    body = await run(system, key, wid, text="boom")
    assert body["status"] == "error"
    assert "HTTP 500" in body["outputs"]["error"]
    assert "model exploded" in body["outputs"]["error"]
    # Each node attempt tries the model 1 + HEYM_MODEL_RETRIES (2 here) times, then the
    # node's own policy retries once: 2 node attempts x 3 requests.
    assert len([r for r in model.chat_requests if r.status == 500]) == 6
    # a model that does not answer in time is a clear error too (HEYM_MODEL_TIMEOUT_S=3 here)
    model.script = Script(rules=[Rule(reply=Reply(hang=True))])
    async with system.client(key) as c:
        once = await create(
            c, [n("in", "textInput", "req"), agent("a", "fragile", cred)], [e("in", "a")]
        )
    body = await run(system, key, once, text="slow")
    assert body["status"] == "error"
    assert "did not answer within" in body["outputs"]["error"]
    async with system.client(key) as c:
        assert (await c.get("/api/health")).json()["services"]["agent_runtime"][
            "state"
        ] == "healthy"


async def test_test_mode_and_globals_reach_what_an_agent_starts(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        r = await c.post("/api/global-variables", json={"name": "region", "value": "eu-west"})
        assert r.status_code in (200, 201), r.text
        child = await create(
            c,
            [
                n("in", "textInput", "childIn"),
                n("o", "output", "out", message="child sees $global.region"),
            ],
            [e("in", "o")],
        )
        model.script = Script(
            rules=[
                Rule(
                    when=Match(assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall("call_sub_workflow", {"workflow_id": child, "inputs": {}})
                        ]
                    ),
                ),
                Rule(reply=Reply(text="<{tool_results}>")),
            ]
        )
        wid = await create(
            c,
            [
                n("in", "textInput", "req"),
                agent(
                    "a",
                    "caller",
                    cred,
                    subWorkflowIds=[child],
                    systemInstruction="Work in $global.region.",
                ),
            ],
            [e("in", "a")],
        )
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"inputs": {"text": "go"}, "test_run": True},
            headers={"X-Simple-Response": "false"},
        )
        assert r.status_code == 200, r.text
        assert "child sees eu-west" in r.json()["outputs"]["caller"]["text"]
        # the agent's prompt saw the global, the child run saw it too
        first = model.chat_requests[0].body["messages"][0]
        assert first["role"] == "system"
        assert "Work in eu-west." in first["content"]
        # a test run writes no history, through the child an agent started neither
        assert (await c.get(f"/api/workflows/{wid}/history")).json()["total"] == 0
        assert (await c.get(f"/api/workflows/{child}/history")).json()["total"] == 0
