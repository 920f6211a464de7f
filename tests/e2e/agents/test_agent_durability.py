"""The agent loop is event-sourced: kill -9 of the runtime mid-loop repeats no recorded turn
and no recorded tool call; compression and redaction of stored copies."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from libs.testing.model_server import (
    ChatRequest,
    HttpError,
    Match,
    ModelServer,
    Reply,
    Rule,
    Script,
    ToolCall,
)
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with HttpTarget() as t:
        yield t


def msgs(entry: Any) -> list[dict[str, Any]]:
    return list(entry.body["messages"])


async def test_kill_9_runtime_mid_loop_repeats_no_recorded_turn(
    system: System, model: ModelServer, target: HttpTarget
) -> None:
    _, key = await system.new_user()
    token = uuid.uuid4().hex
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        rules = [
            Rule(
                name=f"turn{k}",
                when=Match(
                    tool_offered="count_call", predicate=lambda r, k=k: r.assistant_turns == k
                ),
                reply=Reply(tool_calls=[ToolCall("count_call", {})], delay=0.4),
            )
            for k in range(5)
        ]
        rules.append(
            Rule(
                name="final",
                when=Match(tool_offered="count_call"),
                reply=Reply(text="counted five times"),
            )
        )
        model.script = Script(rules=rules)
        nodes = [
            n("in", "textInput", "req"),
            agent("a", "counter", cred),
            n("t", "http", "Count Call", curl=f"curl {target.url}/count/{token}"),
        ]
        wid = await create(c, nodes, [e("in", "a"), e("t", "a", target_handle="tool-input")])
        run = asyncio.create_task(
            c.post(f"/api/workflows/{wid}/execute", json={"text": "count"}, timeout=120)
        )
        # kill while the model is answering turn 3 (turns 1 and 2 and their tools are recorded)
        await eventually(
            lambda: len([r for r in model.chat_requests if r.rule_name == "turn2"]) >= 1, timeout=30
        )
        await system.kill("agent_runtime")
        await system.restart("agent_runtime")
        r = await asyncio.wait_for(run, 90)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "counter": {"text": "counted five times"}
        | {k: v for k, v in r.json()["counter"].items() if k != "text"}
    }
    per_turn = Counter(req.rule_name for req in model.chat_requests if req.rule_name)
    assert per_turn["turn0"] == 1
    assert per_turn["turn1"] == 1
    assert per_turn["turn2"] in (1, 2)  # in flight at the kill: not recorded, so asked again
    assert per_turn["turn3"] == 1
    assert per_turn["turn4"] == 1
    assert target.counts[f"/count/{token}"] == 5  # each tool call ran once


def long_tool_rules(window_model: str, summary: Reply) -> Script:
    def summarising(r: ChatRequest) -> bool:
        return bool(r.messages) and "summarising part of an AI agent" in str(
            r.messages[0].get("content")
        )

    return Script(
        context_windows={window_model: 2000},
        rules=[
            Rule(name="summary", when=Match(predicate=summarising), reply=summary),
            Rule(
                name="loop",
                when=Match(tool_offered="fetch_page", predicate=lambda r: r.assistant_turns < 4),
                reply=Reply(tool_calls=[ToolCall("fetch_page", {})]),
            ),
            Rule(
                name="done",
                when=Match(tool_offered="fetch_page"),
                reply=Reply(text="read everything"),
            ),
        ],
    )


async def _compression_workflow(system: System, model: ModelServer, key: str) -> str:
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        page = n(
            "p", "set", "Fetch Page", mappings=[{"key": "page", "value": "lorem ipsum " * 150}]
        )
        nodes = [
            n("in", "textInput", "req"),
            agent("a", "reader", cred, model="small-window-model"),
            page,
        ]
        return await create(c, nodes, [e("in", "a"), e("p", "a", target_handle="tool-input")])


async def test_compression_replaces_the_middle_and_keeps_anchors(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    model.script = long_tool_rules("small-window-model", Reply(text="SUMMARY: read pages"))
    wid = await _compression_workflow(system, model, key)
    async with system.client(key) as c:
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "read the site"},
            headers={"X-Simple-Response": "false"},
        )
        body = r.json()
        assert body["status"] == "success", body
        after = [
            q
            for q in model.chat_requests
            if q.rule_name in ("loop", "done")
            and any("[Context compressed" in str(m.get("content")) for m in msgs(q))
        ]
        assert after, "no request carried a compressed context"
        sent = msgs(after[0])
        assert sent[0]["role"] == "user"
        assert sent[0]["content"] == "read the site"  # the first user message is kept
        assert sent[1]["role"] == "assistant"
        assert sent[1]["content"].endswith("SUMMARY: read pages")
        assert sent[-1]["role"] == "tool"  # the tail after the summary is kept as it was
        calls = body["outputs"]["reader"]["tool_calls"]
        assert any(c["name"] == "_context_compression" for c in calls)
        real_calls = [c for c in calls if c["name"] != "_context_compression"]
        assert body["outputs"]["reader"]["tool_metrics"]["count"] == len(real_calls)  # not counted

        async def compression_trace() -> list[dict[str, Any]]:
            traces = (
                await c.get("/api/traces", params={"request_type": "context.compression"})
            ).json()
            assert traces["total"] >= 1, traces
            return list(traces["items"])

        (trace, *_) = await eventually(compression_trace, timeout=15)
        detail = (await c.get(f"/api/traces/{trace['id']}")).json()
        assert (
            detail["request"]["tokens_estimated_before"]
            > detail["response"]["tokens_estimated_after"]
        )


async def test_failing_summarisation_leaves_messages_and_run_succeeds(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    model.script = long_tool_rules(
        "small-window-model", Reply(error=HttpError(status=500, message="no summaries today"))
    )
    wid = await _compression_workflow(system, model, key)
    async with system.client(key) as c:
        r = await c.post(f"/api/workflows/{wid}/execute", json={"text": "read the site"})
    assert r.status_code == 200
    assert r.json()["reader"]["text"] == "read everything"
    assert any(q.rule_name == "summary" for q in model.chat_requests)  # it was tried
    assert not any(c["name"] == "_context_compression" for c in r.json()["reader"]["tool_calls"])
    last = msgs(model.chat_requests[-1])
    assert sum(1 for m in last if m["role"] == "tool") == 4  # nothing was summarised away


async def test_secrets_never_reach_stored_traces_or_history_and_big_results_are_bounded(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    api_key = "sk-live-" + "A1b2C3d4" * 4
    bearer = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlc2lnbmF0dXJl"
    blob = "x" * (1024 * 1024)
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        model.script = Script(
            rules=[
                Rule(
                    when=Match(assistant_turns=0),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "leaky", {"api_key": api_key, "header": f"Authorization: {bearer}"}
                            )
                        ]
                    ),
                ),
                Rule(when=Match(last_is_tool_result=True), reply=Reply(text="ok")),
            ]
        )
        leaky = n(
            "l",
            "set",
            "Leaky",
            agentProvidedFields=["api_key", "header"],
            mappings=[
                {"key": "echo", "value": "$input.text"},
                {"key": "token", "value": api_key},
                {"key": "blob", "value": blob},
            ],
        )
        wid = await create(
            c,
            [n("in", "textInput", "req"), agent("a", "careful", cred), leaky],
            [e("in", "a"), e("l", "a", target_handle="tool-input")],
        )
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "hello"},
            headers={"X-Simple-Response": "false"},
        )
        assert r.status_code == 200, r.text[:500]
        run_id = r.json()["execution_history_id"]
        # the model received the whole 1 MB result
        tool_msg = next(m for m in msgs(model.chat_requests[-1]) if m["role"] == "tool")
        assert len(tool_msg["content"]) > 1024 * 1024

        async def stored() -> tuple[str, str]:
            entry = (await c.get(f"/api/workflows/{wid}/history/{run_id}")).json()
            traces = (await c.get("/api/traces", params={"workflow_id": wid})).json()
            assert entry.get("status") == "success", entry.get("status")
            assert traces.get("total", 0) >= 2, traces
            details = [(await c.get(f"/api/traces/{t['id']}")).json() for t in traces["items"]]
            return json.dumps(entry["node_results"]), json.dumps(details)

        history, traces = await eventually(stored, timeout=20)
    for text in (history, traces):
        assert api_key not in text
        assert "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0" not in text
        assert "[REDACTED]" in text or "***" in text
        assert len(text) < 200_000  # the 1 MB result is truncated in stored copies
