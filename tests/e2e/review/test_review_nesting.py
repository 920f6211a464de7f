"""Reviews at any depth (beyond Heym, which fails such runs): two checkpoints in one run, and
a review inside a sub-agent, inside a sub-workflow called as an agent tool, and inside an
Execute node's child run. Each pauses the root run (status `pending`, the review link in its
outputs); the decision resumes the innermost invocation, then its parents, each by replay."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from libs.testing.http_target import HttpTarget
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.review.helpers import (
    drafting_rules,
    review_workflow,
    token_of,
    wait_entry,
    wait_status,
)
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

WRITER = "You are WRITER."
OUTER = "You are OUTER."


def writer_rules() -> list[Rule]:
    return [
        Rule(
            name="writer-draft",
            when=Match(system_contains=WRITER, assistant_turns=0),
            reply=Reply(
                tool_calls=[ToolCall("request_human_review", {"review_markdown": "Inner draft"})]
            ),
        ),
        Rule(
            name="writer-done",
            when=Match(system_contains=WRITER, tool_result_for="request_human_review"),
            reply=Reply(text="WRITER DONE {tool_results}"),
        ),
    ]


def outer_rules(tool: str, args: dict[str, Any]) -> list[Rule]:
    return [
        Rule(
            name="outer-call",
            when=Match(system_contains=OUTER, assistant_turns=0),
            reply=Reply(tool_calls=[ToolCall(tool, args)]),
        ),
        Rule(
            name="outer-done",
            when=Match(system_contains=OUTER, tool_result_for=tool),
            reply=Reply(text="OUTER DONE {tool_results}"),
        ),
    ]


def writer(cred: str, nid: str = "w", label: str = "writer", **data: Any) -> dict[str, Any]:
    return agent(nid, label, cred, hitlEnabled=True, systemInstruction=WRITER, **data)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=writer_rules())) as server:
        yield server


async def _execute(c: httpx.AsyncClient, wid: str) -> dict[str, Any]:
    r = await c.post(
        f"/api/workflows/{wid}/execute",
        json={"text": "go"},
        headers={"X-Simple-Response": "false"},
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _review_link(outputs: dict[str, Any]) -> str:
    """The one review link in a run's pending outputs, however deep it was asked for."""
    links = [v["reviewUrl"] for v in outputs.values() if isinstance(v, dict) and v.get("reviewUrl")]
    assert len(links) == 1, outputs
    return str(links[0])


async def _decide(c: httpx.AsyncClient, url: str, action: str = "accept") -> None:
    r = await c.post(f"/api/hitl/{token_of(url)}/decision", json={"action": action})
    assert r.status_code == 202, r.text


async def test_two_checkpoints_in_one_run(system: System, model: ModelServer) -> None:
    model.script = Script(
        rules=[
            drafting_rules()[0],
            Rule(
                name="second",
                when=Match(tool_result_for="request_human_review", assistant_turns=1),
                reply=Reply(
                    tool_calls=[
                        ToolCall(
                            "request_human_review",
                            {"summary": "Second step", "review_markdown": "Now the invoice."},
                        )
                    ]
                ),
            ),
            Rule(name="final", when=Match(assistant_turns=2), reply=Reply(text="all approved")),
        ]
    )
    _, key = await system.new_user()
    async with HttpTarget() as target, system.client(key) as c:
        path = f"/echo/{uuid.uuid4().hex}"
        nodes, edges = review_workflow(await model_credential(c, model), target.url + path)
        wid = await create(c, nodes, edges)
        first = await _execute(c, wid)
        assert first["status"] == "pending"
        run_id = first["execution_history_id"]
        url1 = first["outputs"]["writer"]["reviewUrl"]
        await _decide(c, url1)
        # the same history entry pauses again, with the second checkpoint's link
        second = await wait_entry(
            c,
            wid,
            run_id,
            lambda x: x["status"] == "pending" and _review_link(x["outputs"]) != url1,
        )
        url2 = second["outputs"]["writer"]["reviewUrl"]
        assert second["outputs"]["writer"]["summary"] == "Second step"
        assert [h["requestId"] for h in second["outputs"]["writer"]["hitlHistory"]] == [
            first["outputs"]["writer"]["requestId"]
        ]
        # the first link is used up; the second one decides the second checkpoint
        used = await c.post(f"/api/hitl/{token_of(url1)}/decision", json={"action": "accept"})
        assert used.status_code == 409
        await _decide(c, url2)
        done = await wait_status(c, wid, run_id, {"success", "error"})
        assert done["status"] == "success", done
        assert done["id"] == run_id  # the same history entry throughout
        out = next(x for x in done["node_results"] if x["node_label"] == "writer")["output"]
        assert [h["decision"] for h in out["hitlHistory"]] == ["accepted", "accepted"]
        assert out["text"] == "all approved"
        assert [q.rule_name for q in model.chat_requests] == ["draft", "second", "final"]
        # the notification branch ran once per checkpoint, each time with its own link
        notified = [json.loads(q["body"])["url"] for q in target.requests if q["path"] == path]
        assert notified == [url1, url2]


async def test_review_inside_a_sub_agent(system: System, model: ModelServer) -> None:
    model.script = Script(
        rules=[
            *writer_rules(),
            *outer_rules("call_sub_agent", {"sub_agent_label": "writer", "prompt": "write"}),
        ]
    )
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        nodes = [
            n("in", "textInput", "req"),
            agent(
                "o",
                "boss",
                cred,
                isOrchestrator=True,
                subAgentLabels=["writer"],
                systemInstruction=OUTER,
            ),
            writer(cred, userMessage="$input.text"),
            n("out", "output", "answer", message="$boss.text"),
        ]
        edges = [
            e("in", "o"),
            e("o", "out"),
            e("o", "w", source_handle="sub-agents", target_handle="sub-agent-input"),
        ]
        wid = await create(c, nodes, edges)
        body = await _execute(c, wid)
        assert body["status"] == "pending", body
        url = _review_link(body["outputs"])
        assert body["outputs"]["boss"]["draftText"] == "Inner draft"
        await _decide(c, url)
        done = await wait_status(c, wid, body["execution_history_id"], {"success", "error"})
        assert done["status"] == "success", done
        answer = done["outputs"]["answer"]["result"]
        assert answer.startswith("OUTER DONE")
        assert "WRITER DONE" in answer
        assert [q.rule_name for q in model.chat_requests] == [
            "outer-call",
            "writer-draft",
            "writer-done",
            "outer-done",
        ]


async def _child(c: httpx.AsyncClient, cred: str) -> str:
    return await create(
        c,
        [
            n("in", "textInput", "childIn"),
            writer(cred, userMessage="$childIn.text"),
            n("o", "output", "childAnswer", message="$writer.text"),
        ],
        [e("in", "w"), e("w", "o")],
    )


async def _caller_of_a_reviewing_child(c: httpx.AsyncClient, model: ModelServer) -> tuple[str, str]:
    """An agent calling, as its `call_sub_workflow` tool, a child workflow whose agent asks for
    a review: (the caller's workflow id, the child's)."""
    cred = await model_credential(c, model)
    child = await _child(c, cred)
    model.script = Script(
        rules=[
            *writer_rules(),
            *outer_rules("call_sub_workflow", {"workflow_id": child, "inputs": {"text": "x"}}),
        ]
    )
    wid = await create(
        c,
        [
            n("in", "textInput", "req"),
            agent("a", "caller", cred, subWorkflowIds=[child], systemInstruction=OUTER),
        ],
        [e("in", "a")],
    )
    return wid, child


async def test_review_inside_a_sub_workflow_tool(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid, _child_wid = await _caller_of_a_reviewing_child(c, model)
        body = await _execute(c, wid)
        assert body["status"] == "pending", body
        url = _review_link(body["outputs"])
        await _decide(c, url, "refuse")
        done = await wait_status(c, wid, body["execution_history_id"], {"success", "error"})
        assert done["status"] == "success", done
        text = done["outputs"]["caller"]["text"]
        assert text.startswith("OUTER DONE")
        result = json.loads(text.removeprefix("OUTER DONE "))
        assert result["status"] == "success"  # the child run completed after the refusal
        assert result["outputs"]["childAnswer"]["result"] == ""
        assert "writer-done" not in [q.rule_name for q in model.chat_requests]


async def test_review_inside_an_execute_child(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        child = await _child(c, cred)
        wid = await create(
            c,
            [
                n("in", "textInput", "req"),
                n("x", "execute", "runChild", executeWorkflowId=child),
                n("o", "output", "answer", message="$runChild.outputs.childAnswer.result"),
            ],
            [e("in", "x"), e("x", "o")],
        )
        body = await _execute(c, wid)
        assert body["status"] == "pending", body
        url = _review_link(body["outputs"])
        entry = await wait_status(c, wid, body["execution_history_id"], {"pending"})
        assert _review_link(entry["outputs"]) == url
        await _decide(c, url)
        done = await wait_status(c, wid, body["execution_history_id"], {"success", "error"})
        assert done["status"] == "success", done
        assert done["outputs"]["answer"]["result"].startswith("WRITER DONE")


async def _only_entry(c: httpx.AsyncClient, wid: str, status: str) -> dict[str, Any]:
    """The workflow's one history entry, once the read model shows it with `status`."""
    for _ in range(200):
        r = await c.get(f"/api/workflows/{wid}/history")
        assert r.status_code == 200, r.text
        items: list[dict[str, Any]] = r.json()["items"]
        if items and items[0]["status"] == status:
            assert len(items) == 1, items
            return items[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {status} entry for {wid}: {items}")


async def test_cancel_during_a_nested_pause_cancels_every_level(
    system: System, model: ModelServer
) -> None:
    """A run paused by a review deep inside it (a sub-workflow called as a tool, whose agent
    paused) is cancelled: the root run and the child run end `cancelled`, the review link is
    gone (410), and no model is asked anything more at any level."""
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid, child = await _caller_of_a_reviewing_child(c, model)
        body = await _execute(c, wid)
        assert body["status"] == "pending", body
        run_id = body["execution_history_id"]
        token = token_of(_review_link(body["outputs"]))
        paused_child = await _only_entry(c, child, "pending")

        r = await c.post(f"/api/workflows/{wid}/executions/{run_id}/cancel")
        assert r.status_code == 200, r.text
        done = await wait_status(c, wid, run_id, {"cancelled", "success", "error"})
        assert done["status"] == "cancelled", done
        child_done = await wait_status(
            c, child, paused_child["id"], {"cancelled", "success", "error"}
        )
        assert child_done["status"] == "cancelled", child_done
        assert (await c.get(f"/api/hitl/{token}")).status_code == 410
        late = await c.post(f"/api/hitl/{token}/decision", json={"action": "accept"})
        assert late.status_code == 410, late.text
        assert [q.rule_name for q in model.chat_requests] == ["outer-call", "writer-draft"]


async def test_no_agent_beneath_a_review_branch_may_pause(
    system: System, model: ModelServer
) -> None:
    """The review branch of a paused agent runs an Execute node whose child workflow has a
    HITL agent: that agent asks for a review and fails with "cannot pause" (the flag travels
    into the child run) instead of pausing the child run while its parent waits on a review."""
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        child = await _child(c, cred)
        wid = await create(
            c,
            [
                n("in", "textInput", "req"),
                writer(cred, userMessage="$req.text"),
                n("x", "execute", "notifyChild", executeWorkflowId=child),
            ],
            [e("in", "w"), e("w", "x", source_handle="hitl")],
        )
        body = await _execute(c, wid)
        assert body["status"] == "pending", body
        failed = await _only_entry(c, child, "error")
        child_done = await wait_status(c, child, failed["id"], {"error"})
        assert "cannot pause for another human review" in (child_done["error"] or ""), child_done
        await _decide(c, _review_link(body["outputs"]))
        done = await wait_status(c, wid, body["execution_history_id"], {"success", "error"})
        # the Execute node's failure fails the run, as an agent's own refusal there does; the
        # reviewed agent itself resumed and finished
        assert done["status"] == "error", done
        assert "cannot pause for another human review" in done["error"]
        writer_row = next(x for x in done["node_results"] if x["node_label"] == "writer")
        assert writer_row["status"] == "success"
        assert writer_row["output"]["text"].startswith("WRITER DONE")
