"""A run paused for human review, every service killed and restarted during the pause, then
resumed by the reviewer's decision, is one trace: the spans written before the pause and
after the restart hang under the same run and agent spans, and the review tool call spans the
pause."""

from __future__ import annotations

import uuid

import pytest

from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from libs.testing.model_server import ModelServer
from libs.testing.otlp_receiver import OtlpReceiver
from tests.e2e.agents.helpers import create, model_credential
from tests.e2e.review.helpers import drafting_rules, review_workflow, script, token_of, wait_status
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

CALLER_TRACE = "0c1d2e3f405162738495a6b7c8d9eaf1"
CALLER = f"00-{CALLER_TRACE}-a1b2c3d4e5f60718-01"


def labelled(receiver: OtlpReceiver, label: str) -> bool:
    return any(s.attributes.get("heym.node.label") == label for s in receiver.trace(CALLER_TRACE))


def chat_count(receiver: OtlpReceiver) -> int:
    return len([s for s in receiver.trace(CALLER_TRACE) if s.name.startswith("chat")])


async def test_a_review_paused_across_a_restart_of_every_service_is_one_trace(
    traced: System, receiver: OtlpReceiver
) -> None:
    _, key = await traced.new_user()
    with ModelServer(script(*drafting_rules())) as model:
        async with HttpTarget() as target:
            async with traced.client(key) as c:
                cred = await model_credential(c, model)
                nodes, edges = review_workflow(cred, f"{target.url}/echo/{uuid.uuid4().hex}")
                wid = await create(c, nodes, edges)
                r = await c.post(
                    f"/api/workflows/{wid}/execute",
                    json={"text": "go"},
                    headers={"X-Simple-Response": "false", "traceparent": CALLER},
                )
                assert r.status_code == 200, r.text
                body = r.json()
                assert body["status"] == "pending", body
                run_id = body["execution_history_id"]
                token = token_of(body["outputs"]["writer"]["reviewUrl"])
                await wait_status(c, wid, run_id, {"pending"})
            # the review branch ran at the pause, the model was asked once: their spans reached
            # the collector (a process killed with -9 loses what it had not exported yet)
            await eventually(
                lambda: labelled(receiver, "notify") and chat_count(receiver), timeout=30
            )
            for name in list(traced.children):
                await traced.kill(name)
            for name in list(traced.children):
                await traced.restart(name)
            async with traced.client(key) as c:
                decision = await c.post(
                    f"/api/hitl/{token}/decision",
                    json={"action": "edit", "edited_text": "After the restart."},
                )
                assert decision.status_code == 202, decision.text
                done = await wait_status(c, wid, run_id, {"success", "error"})
                assert done["status"] == "success", done
    root = await eventually(lambda: receiver.run_span(run_id), timeout=30)
    await eventually(lambda: labelled(receiver, "answer") and labelled(receiver, "writer"))

    await eventually(lambda: chat_count(receiver) >= 2, timeout=30)
    spans = receiver.trace(CALLER_TRACE)
    nodes_by_label = {
        s.attributes["heym.node.label"]: s for s in spans if s.name == "heym.node.execute"
    }
    assert {"request", "writer", "notify", "answer"} <= set(nodes_by_label)
    assert root.parent_span_id == CALLER.split("-")[2]
    assert root.attributes["heym.workflow.status"] == "success"
    for label in ("request", "writer", "notify", "answer"):
        assert nodes_by_label[label].parent_span_id == root.span_id, label
    writer = nodes_by_label["writer"]
    # the review call spans the pause, under the agent's span
    (review,) = [s for s in spans if s.name == "heym.agent.tool.execute"]
    assert review.parent_span_id == writer.span_id
    assert review.attributes["heym.agent.tool.name"] == "request_human_review"
    assert review.attributes["heym.review.decision"] == "edited"
    assert review.start_ns >= writer.start_ns
    assert review.end_ns <= writer.end_ns
    chats = sorted((s for s in spans if s.name.startswith("chat")), key=lambda s: s.start_ns)
    assert all(s.parent_span_id == writer.span_id for s in chats)
    # before the pause and after the restart: other processes, one tree
    before, after = chats[0].resource, chats[-1].resource
    assert before["service.instance.id"] != after["service.instance.id"]
    assert chats[0].start_ns < review.start_ns
    assert chats[-1].start_ns >= review.end_ns
    assert nodes_by_label["notify"].resource["heym.component"] == "tool_sandbox"
