"""One run that crosses every service is one trace, with the seed's tree and attributes:
parallel nodes (scheduler and tool sandbox), an HTTP node, an Execute node's sub-workflow, and
an agent whose tool call starts a sub-workflow of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from libs.telemetry import node_span_id, run_span_id, tool_span_id
from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from libs.testing.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

SECRET_ARG = "Lyon-7f3a"  # a tool argument: must never be attached to a span


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


def by_name(spans: list[ReceivedSpan], name: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name == name]


def node(spans: list[ReceivedSpan], label: str) -> ReceivedSpan:
    (found,) = [
        s
        for s in spans
        if s.name == "heym.node.execute" and s.attributes["heym.node.label"] == label
    ]
    return found


async def execute(system: System, key: str, wid: str, **headers: str) -> dict[str, Any]:
    async with system.client(key) as c:
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "go"},
            headers={"X-Simple-Response": "false", **headers},
        )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_one_run_across_every_service_is_one_trace(
    traced: System, receiver: OtlpReceiver, model: ModelServer
) -> None:
    _, key = await traced.new_user()
    async with HttpTarget() as target, traced.client(key) as c:
        cred = await model_credential(c, model)
        child = await create(
            c,
            [n("cin", "textInput", "childIn"), n("cs", "set", "childSet", mappings=[])],
            [e("cin", "cs")],
        )
        model.script = Script(
            rules=[
                Rule(
                    when=Match(tool_offered="call_sub_workflow", assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "call_sub_workflow",
                                {"workflow_id": child, "inputs": {"city": SECRET_ARG}},
                            )
                        ]
                    ),
                ),
                Rule(when=Match(tool_result_for="call_sub_workflow"), reply=Reply(text="done")),
            ]
        )
        wid = await create(
            c,
            [
                n("in", "textInput", "start"),
                n("a", "set", "left", mappings=[{"key": "v", "value": "1"}]),
                n("b", "set", "right", mappings=[{"key": "v", "value": "2"}]),
                n("h", "http", "call", curl=f"curl {target.url}/echo"),
                n("m", "merge", "join"),
                n("x", "execute", "sub", executeWorkflowId=child),
                agent("ag", "helper", cred, subWorkflowIds=[child]),
            ],
            [
                e("in", "a"),
                e("in", "b"),
                e("in", "h"),
                e("a", "m"),
                e("b", "m"),
                e("h", "m"),
                e("m", "x"),
                e("x", "ag"),
            ],
        )
        body = await execute(traced, key, wid)
        assert body["status"] == "success", body
        run_id = body["execution_history_id"]

        root = await eventually(lambda: receiver.run_span(run_id), timeout=30)
        trace = root.trace_id
        # The run, its 7 nodes, the Execute child (run + 2 nodes), the agent's two model
        # calls and its tool call, and the tool's child run (run + 2 nodes).
        await eventually(lambda: len(receiver.trace(trace)) >= 17, timeout=30)
        spans = receiver.trace(trace)
        outbound = target.requests[0]["headers"]["traceparent"]

    # -- the run's root span -------------------------------------------------------------
    assert root.parent_span_id == ""  # no caller's context: a trace of its own
    assert root.span_id == f"{run_span_id(run_id):016x}"
    assert root.attributes["heym.workflow.id"] == wid
    assert root.attributes["heym.node.count"] == 7
    assert root.attributes["heym.workflow.test_mode"] is False
    assert root.attributes["heym.sub_workflow.depth"] == 0
    assert root.attributes["heym.workflow.status"] == "success"
    assert root.resource["heym.component"] == "scheduler"
    assert root.resource["service.name"] == "heym"
    assert root.resource["service.instance.id"].startswith("scheduler-")

    # -- node spans: every node, under the run, parallel ones side by side -------------------
    top = [s for s in by_name(spans, "heym.node.execute") if s.parent_span_id == root.span_id]
    assert {s.attributes["heym.node.label"] for s in top} == {
        "start",
        "left",
        "right",
        "call",
        "join",
        "sub",
        "helper",
    }
    for s in top:
        assert s.attributes["heym.node.status"] == "success"
        assert s.attributes["heym.node.id"]
        assert s.attributes["heym.node.type"]
        assert s.attributes["heym.node.duration_ms"] >= 0
        assert s.start_ns >= root.start_ns
        assert s.end_ns <= root.end_ns
    left, right, http = node(spans, "left"), node(spans, "right"), node(spans, "call")
    assert left.parent_span_id == right.parent_span_id == http.parent_span_id == root.span_id
    # written by the process that ran each node
    assert left.resource["heym.component"] == "scheduler"
    assert http.resource["heym.component"] == "tool_sandbox"
    assert node(spans, "helper").resource["heym.component"] == "agent_runtime"
    # node input and output are captured (HEYM_OTEL_CAPTURE_NODE_IO) and bounded
    assert '"v"' in left.attributes["heym.node.output"]
    assert "start" in http.attributes["heym.node.input"]

    # -- the HTTP node sent its own span's context downstream ------------------------------
    assert outbound == f"00-{trace}-{http.span_id}-01"

    # -- Execute node: the child run is a child of the node's span ---------------------------
    sub = node(spans, "sub")
    child_roots = [s for s in by_name(spans, "heym.workflow.execute") if s is not root]
    via_execute = next(s for s in child_roots if s.parent_span_id == sub.span_id)
    assert via_execute.attributes["heym.sub_workflow.depth"] == 1
    assert via_execute.attributes["heym.workflow.id"] == child
    child_nodes = [s for s in spans if s.parent_span_id == via_execute.span_id]
    assert {s.attributes["heym.node.label"] for s in child_nodes} == {"childIn", "childSet"}

    # -- the agent: model calls and its tool call under its node span ------------------------
    helper = node(spans, "helper")
    assert helper.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert helper.attributes["heym.llm.model"] == "test-model"
    assert helper.attributes["heym.llm.total_tokens"] > 0
    assert helper.attributes["gen_ai.usage.input_tokens"] > 0
    assert (
        helper.attributes["heym.llm.prompt_tokens"]
        == helper.attributes["gen_ai.usage.input_tokens"]
    )
    chats = [s for s in spans if s.parent_span_id == helper.span_id and s.name.startswith("chat")]
    assert len(chats) == 2
    assert all(c.attributes["gen_ai.operation.name"] == "chat" for c in chats)
    assert all(c.attributes["gen_ai.usage.output_tokens"] > 0 for c in chats)
    (tool,) = by_name(spans, "heym.agent.tool.execute")
    assert tool.parent_span_id == helper.span_id
    invocation = helper.attributes["heym.invocation.id"]
    call_id = tool.attributes["heym.agent.tool.call_id"]
    assert tool.span_id == f"{tool_span_id(run_id, invocation, call_id):016x}"
    assert helper.span_id == f"{node_span_id(run_id, invocation):016x}"
    assert tool.attributes["heym.agent.tool.name"] == "call_sub_workflow"
    assert tool.attributes["heym.agent.tool.source"] == "sub_workflow"
    assert tool.attributes["heym.agent.tool.iteration"] == 1
    assert tool.attributes["heym.agent.tool.status"] == "success"
    assert tool.attributes["heym.agent.tool.args_bytes"] > len(SECRET_ARG)
    assert tool.attributes["heym.agent.tool.result_bytes"] > 0
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "call_sub_workflow"
    assert tool.attributes["gen_ai.tool.call.id"] == call_id
    # the agent's sub-workflow run hangs under the tool call
    via_tool = next(s for s in child_roots if s.parent_span_id == tool.span_id)
    assert via_tool.attributes["heym.sub_workflow.depth"] == 1
    # raw tool arguments and results are never attached
    assert not any(
        SECRET_ARG in str(v)
        for s in by_name(spans, "heym.agent.tool.execute")
        for v in s.attributes.values()
    )
