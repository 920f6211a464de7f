"""Trace context in and out: a caller's `traceparent` makes the run its child, an agent's
canvas HTTP tool sends its tool span's context, metrics reach the collector, and the status
API shows the configuration without the exporter headers' values."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from libs.testing.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.assistant.helpers import conversation, greeter, reply, turn
from tests.e2e.system import System
from tests.e2e.tracing.conftest import HEADER_SECRET

pytestmark = pytest.mark.e2e

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


async def test_inbound_traceparent_makes_the_run_a_child_of_the_caller(
    traced: System, receiver: OtlpReceiver
) -> None:
    _, key = await traced.new_user()
    async with HttpTarget() as target, traced.client(key) as c:
        wid = await create(
            c,
            [n("in", "textInput", "start"), n("h", "http", "call", curl=f"curl {target.url}/x")],
            [e("in", "h")],
        )
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "go"},
            headers={
                "X-Simple-Response": "false",
                "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01",
            },
        )
        assert r.status_code == 200, r.text
        run_id = r.json()["execution_history_id"]
        root = await eventually(lambda: receiver.run_span(run_id), timeout=30)
        sent = target.requests[0]["headers"]["traceparent"]
    assert root.trace_id == CALLER_TRACE
    assert root.parent_span_id == CALLER_SPAN
    http = await eventually(
        lambda: next(
            (
                s
                for s in receiver.trace(CALLER_TRACE)
                if s.attributes.get("heym.node.label") == "call"
                and s.parent_span_id == root.span_id
            ),
            None,
        ),
        timeout=30,
    )
    assert http.parent_span_id == root.span_id
    # the HTTP node continues the caller's trace downstream, from its own span
    assert sent == f"00-{CALLER_TRACE}-{http.span_id}-01"


async def test_an_http_tool_sends_its_tool_span_and_metrics_are_exported(
    traced: System, receiver: OtlpReceiver, model: ModelServer
) -> None:
    _, key = await traced.new_user()
    async with HttpTarget() as target, traced.client(key) as c:
        cred = await model_credential(c, model)
        model.script = Script(
            rules=[
                Rule(
                    when=Match(tool_offered="fetch_page", assistant_turns=0),
                    reply=Reply(tool_calls=[ToolCall("fetch_page", {})]),
                ),
                Rule(when=Match(tool_result_for="fetch_page"), reply=Reply(text="read it")),
            ]
        )
        nodes = [
            n("in", "textInput", "req"),
            agent("a", "reader", cred),
            n("t", "http", "Fetch Page", curl=f"curl {target.url}/page"),
        ]
        wid = await create(c, nodes, [e("in", "a"), e("t", "a", target_handle="tool-input")])
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "go"},
            headers={"X-Simple-Response": "false"},
        )
        assert r.status_code == 200, r.text
        run_id = r.json()["execution_history_id"]
        root = await eventually(lambda: receiver.run_span(run_id), timeout=30)
        tool = await eventually(
            lambda: next(
                (s for s in receiver.trace(root.trace_id) if s.name == "heym.agent.tool.execute"),
                None,
            ),
            timeout=30,
        )
        sent = target.requests[0]["headers"]["traceparent"]
    assert tool.attributes["heym.agent.tool.source"] == "node_tool"
    assert tool.attributes["heym.agent.tool.name"] == "fetch_page"
    assert sent == f"00-{root.trace_id}-{tool.span_id}-01"

    # OTLP metrics (HEYM_OTEL_METRICS_ENABLED): runs, durations, tokens, tool calls, appends
    def metric(name: str, **attrs: object) -> bool:
        return any(
            p.metric == name and all(p.attributes.get(k) == v for k, v in attrs.items())
            for p in list(receiver.points)
        )

    await eventually(
        lambda: (
            metric("heym.runs", **{"heym.workflow.status": "success"})
            and metric("heym.run.duration")
            and metric("heym.node.duration", **{"heym.node.type": "agent"})
            and metric("gen_ai.client.token.usage", **{"gen_ai.request.model": "test-model"})
            and metric(
                "heym.agent.tool.calls",
                **{"heym.agent.tool.source": "node_tool", "heym.agent.tool.status": "success"},
            )
            and metric("heym.eventlog.append.duration")
        ),
        timeout=30,
        message="metrics exported",
    )


async def test_status_api_shows_where_spans_go_but_never_header_values(
    traced: System, receiver: OtlpReceiver
) -> None:
    _, key = await traced.new_user()
    async with traced.client(key) as c, traced.client() as nobody:
        r = await c.get("/api/settings/observability")
        anonymous = await nobody.get("/api/settings/observability")
    assert anonymous.status_code == 401
    assert r.status_code == 200, r.text
    body = r.json()
    assert HEADER_SECRET not in r.text
    assert body["enabled"] is True
    assert body["endpoint"] == receiver.url
    assert body["traces_endpoint"] == f"{receiver.url}/v1/traces"
    assert body["headers"] == ["authorization", "x-team"]
    assert body["service_name"] == "heym"
    assert body["sampler_ratio"] == 1.0
    assert body["capture_node_io"] is True
    assert body["metrics_enabled"] is True
    assert set(body["services"]) == {
        "gateway",
        "scheduler",
        "agent_runtime",
        "tool_sandbox",
        "review",
    }
    assert body["dropped_spans"] == 0
    # the headers do reach the collector (exporter auth works), only the API hides them
    await eventually(lambda: receiver.requests, timeout=30)
    assert any(h.get("authorization") == f"Bearer {HEADER_SECRET}" for _, h in receiver.requests)


async def test_a_sub_agent_hangs_under_its_orchestrators_tool_call(
    traced: System, receiver: OtlpReceiver, model: ModelServer
) -> None:
    _, key = await traced.new_user()
    async with traced.client(key) as c:
        cred = await model_credential(c, model)
        model.script = Script(
            rules=[
                Rule(
                    when=Match(tool_offered="call_sub_agent", assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "call_sub_agent",
                                {"sub_agent_label": "helper", "prompt": "How far is Paris?"},
                            )
                        ]
                    ),
                ),
                Rule(when=Match(last_user_contains="How far"), reply=Reply(text="450 km")),
                Rule(when=Match(tool_result_for="call_sub_agent"), reply=Reply(text="far")),
            ]
        )
        nodes = [
            n("in", "textInput", "req"),
            agent("o", "boss", cred, isOrchestrator=True, subAgentLabels=["helper"]),
            agent("h", "helper", cred, userMessage="$input.text"),
        ]
        edges = [
            e("in", "o"),
            e("o", "h", source_handle="sub-agents", target_handle="sub-agent-input"),
        ]
        wid = await create(c, nodes, edges)
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "go"},
            headers={"X-Simple-Response": "false"},
        )
        assert r.status_code == 200, r.text
        run_id = r.json()["execution_history_id"]
    root = await eventually(lambda: receiver.run_span(run_id), timeout=30)

    def tree() -> list[ReceivedSpan] | None:
        spans = receiver.trace(root.trace_id)
        return spans if len(spans) >= 7 else None  # run, start, boss, 2 chats, tool, helper

    spans = await eventually(tree, timeout=30)
    nodes_by_label = {
        s.attributes["heym.node.label"]: s for s in spans if s.name == "heym.node.execute"
    }
    boss, helper = nodes_by_label["boss"], nodes_by_label["helper"]
    (tool,) = [s for s in spans if s.name == "heym.agent.tool.execute"]
    assert boss.parent_span_id == root.span_id
    assert tool.parent_span_id == boss.span_id
    assert tool.attributes["heym.agent.tool.source"] == "sub_agent"
    assert helper.parent_span_id == tool.span_id
    assert helper.attributes["gen_ai.operation.name"] == "invoke_agent"
    helper_chats = [
        s for s in spans if s.name.startswith("chat") and s.parent_span_id == helper.span_id
    ]
    assert len(helper_chats) == 1


async def test_a_heym_agent_turn_is_a_trace_with_the_run_it_started(
    traced: System, receiver: OtlpReceiver, model: ModelServer
) -> None:
    _, key = await traced.new_user()
    async with traced.client(key) as c:
        cred = await model_credential(c, model)
        wid = await greeter(c)
        model.script = Script(
            rules=[
                Rule(
                    when=Match(last_is_tool_result=False),
                    reply=Reply(tool_calls=[ToolCall("execute_workflow", {"workflow_id": wid})]),
                ),
                Rule(reply=Reply(text="it ran")),
            ]
        )
        cid = await conversation(c)
        frames = await turn(c, cid, "run the greeter", cred)
    assert reply(frames) == "it ran"

    def turn_span() -> ReceivedSpan | None:
        found = receiver.named("heym.assistant.turn")
        return next((s for s in found if s.attributes.get("gen_ai.conversation.id") == cid), None)

    root = await eventually(turn_span, timeout=30)

    def tree() -> list[ReceivedSpan] | None:
        spans = receiver.trace(root.trace_id)
        # the turn, two model rounds, the tool call, and the run with its three nodes
        return spans if len(spans) >= 8 else None

    spans = await eventually(tree, timeout=30)
    assert root.parent_span_id == ""
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["heym.chat.status"] == "success"
    rounds = [s for s in spans if s.name.startswith("chat")]
    assert len(rounds) == 2
    assert all(s.parent_span_id == root.span_id for s in rounds)
    (tool,) = [s for s in spans if s.name == "heym.agent.tool.execute"]
    assert tool.parent_span_id == root.span_id
    assert tool.attributes["gen_ai.tool.name"] == "execute_workflow"
    (run,) = [s for s in spans if s.name == "heym.workflow.execute"]
    assert run.parent_span_id == tool.span_id
    assert run.attributes["heym.workflow.id"] == wid
    assert {s.attributes["heym.node.label"] for s in spans if s.parent_span_id == run.span_id} == {
        "userInput",
        "greet",
        "result",
    }
