"""The assistant's tools against real data: reading history, analytics, schedules, globals and
the docs; following a run on durable timers; building and editing with the AI Builder."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from libs.testing.eventually import eventually
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import e, model_credential, n
from tests.e2e.assistant.helpers import conversation, greeter, of, reply, turn
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


def tool_results(model: ModelServer) -> dict[str, Any]:
    """The tool messages of the last request, by tool call id, parsed."""
    messages = model.chat_requests[-1].body["messages"]
    return {m["tool_call_id"]: json.loads(m["content"]) for m in messages if m["role"] == "tool"}


async def test_read_tools_answer_from_the_users_data(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await greeter(c)
        for name in ("Ada", "Bob"):
            assert (
                await c.post(f"/api/workflows/{wid}/execute", json={"text": name})
            ).status_code == 200

        async def both_recorded() -> bool:
            history = (await c.get(f"/api/workflows/{wid}/history")).json()
            return int(history["total"]) == 2

        # the history is a projection: the tools read it, so wait until it shows both runs
        await eventually(both_recorded, timeout=20)
        cron = [
            n("c", "cron", "every9", cronExpression="0 9 * * *"),
            n("s", "set", "x", mappings=[]),
        ]
        r = await c.post(
            "/api/workflows", json={"name": "Morning", "nodes": cron, "edges": [e("c", "s")]}
        )
        assert r.status_code == 201, r.text
        r = await c.post(
            "/api/global-variables", json={"name": "apiBase", "value": "https://x.example"}
        )
        assert r.status_code == 201, r.text
        calls = [
            ToolCall("get_workflow_definition", {"workflow_id": wid}, id="def"),
            ToolCall("get_recent_executions", {"time_range": "24h"}, id="recent"),
            ToolCall("get_workflow_run_history", {"workflow_id": wid}, id="history"),
            ToolCall("get_analytics_stats", {"workflow_id": wid}, id="stats"),
            ToolCall("get_schedule_events", {"view_window": "week"}, id="schedule"),
            ToolCall("get_global_variables", {}, id="globals"),
            ToolCall("get_global_variables", {"name": "apiBase"}, id="one_global"),
            ToolCall("search_documentation", {"query": "MCP server named servers"}, id="docs"),
            ToolCall("get_active_executions", {}, id="active"),
        ]
        model.script = Script(
            rules=[
                Rule(when=Match(last_is_tool_result=False), reply=Reply(tool_calls=calls)),
                Rule(reply=Reply(text="read it all")),
            ]
        )
        frames = await turn(c, await conversation(c), "tell me about my account", cred)
    assert [s["label"] for s in of(frames, "tool_start")] == [
        'Reading "Greeter" content...',
        "Listing recent executions...",
        "Reading run history...",
        "Fetching analytics...",
        "Loading scheduled runs...",
        "Querying global variables...",
        'Getting variable "apiBase"...',
        'Searching docs for "MCP server named servers"...',
        "Checking running workflows...",
    ]
    assert {x["status"] for x in of(frames, "tool_end")} == {"success"}
    got = tool_results(model)
    assert [node["type"] for node in got["def"]["nodes"]] == ["textInput", "set", "output"]
    assert {x["workflow_name"] for x in got["recent"]["executions"]} >= {"Greeter"}
    assert got["history"]["total_runs"] == 2
    assert got["history"]["status_counts"] == {"success": 2}
    assert got["stats"]["total_executions"] == 2
    assert got["stats"]["success_rate"] == 100.0
    assert len(got["schedule"]["events"]) == 7  # daily at 09:00, Monday to Sunday
    assert {x["workflow_name"] for x in got["schedule"]["events"]} == {"Morning"}
    assert got["globals"]["variables"] == [{"name": "apiBase", "value_type": "string"}]
    assert "https://x.example" not in json.dumps(got["globals"])  # values only by name
    assert got["one_global"]["value"] == "https://x.example"
    assert got["docs"]["results"]
    assert any("MCP" in r["title"] or "MCP" in r["content"] for r in got["docs"]["results"])
    assert got["active"]["count"] == 0
    assert reply(frames) == "read it all"


async def test_wait_for_execution_update_checks_on_timers_until_the_run_ends(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        nodes = [n("in", "textInput", "userInput"), n("w", "wait", "pause", duration=2500)]
        r = await c.post(
            "/api/workflows", json={"name": "Slowish", "nodes": nodes, "edges": [e("in", "w")]}
        )
        wid = r.json()["id"]
        running = asyncio.create_task(c.post(f"/api/workflows/{wid}/execute", json={}))

        async def run_id() -> str:
            items = (
                await c.get("/api/workflows/history/all", params={"status": "running"})
            ).json()["items"]
            assert items
            return str(items[0]["id"])

        rid = await eventually(run_id, timeout=20)
        model.script = Script(
            rules=[
                Rule(
                    when=Match(last_is_tool_result=False),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "wait_for_execution_update",
                                {
                                    "execution_history_id": rid,
                                    "interval_seconds": 1,
                                    "max_checks": 10,
                                },
                                id="w",
                            )
                        ]
                    ),
                ),
                Rule(reply=Reply(text="it finished")),
            ]
        )
        frames = await turn(c, await conversation(c), "is my run done?", cred)
        await running
    assert reply(frames) == "it finished"
    (start,) = of(frames, "tool_start")
    assert start["label"] == "Waiting for workflow update..."
    result = tool_results(model)["w"]
    assert result["status"] == "success"
    assert result["execution_history_id"] == rid
    statuses = [x["status"] for x in result["checks"]]
    assert statuses[0] == "running"
    assert statuses[-1] == "success"
    assert result["checks_performed"] == len(statuses) >= 2


BUILT = """Here is the workflow.
```json
{"name": "Greeter Bot", "description": "Greets people",
 "nodes": [
   {"id": "in", "type": "textInput", "position": {"x": 0, "y": 0}, "data": {"label": "userInput"}},
   {"id": "o", "type": "output", "position": {"x": 300, "y": 0},
    "data": {"label": "result", "message": "Hello $userInput.text"}},
 ],
 "edges": [{"id": "e1", "source": "in", "target": "o"}],}
```"""

EDITED = BUILT.replace("Hello $userInput.text", "Good morning $userInput.text")


def _builder(request: Any) -> bool:
    return "Heym workflow DSL" in request.system_text


async def test_create_and_edit_workflow_through_the_ai_builder(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        model.script = Script(
            rules=[
                Rule(name="builder", when=Match(predicate=_builder), reply=Reply(text=BUILT)),
                Rule(
                    when=Match(last_is_tool_result=False),
                    reply=Reply(tool_calls=[ToolCall("create_workflow", {"goal": "greet people"})]),
                ),
                Rule(reply=Reply(text="Created it.")),
            ]
        )
        cid = await conversation(c)
        frames = await turn(c, cid, "build a greeter", cred)
        (created,) = of(frames, "workflow_created")
        wid = created["workflow_id"]
        (end,) = of(frames, "tool_end")
        assert end["response_summary"] == "Created workflow: Greeter Bot"
        saved = (await c.get(f"/api/workflows/{wid}")).json()
        assert saved["nodes"][1]["data"]["message"] == "Hello $userInput.text"
        builder = next(q for q in model.chat_requests if q.rule_name == "builder")
        assert "heym-clarify" not in builder.body["messages"][0]["content"]

        model.script = Script(
            rules=[
                Rule(name="builder", when=Match(predicate=_builder), reply=Reply(text=EDITED)),
                Rule(
                    when=Match(last_is_tool_result=False),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "edit_workflow",
                                {"workflow_id": wid, "instructions": "say good morning"},
                            )
                        ]
                    ),
                ),
                Rule(reply=Reply(text="Changed it.")),
            ]
        )
        frames = await turn(c, cid, "make it say good morning", cred)
        (start,) = of(frames, "tool_start")
        assert start["label"] == 'Editing workflow "Greeter Bot"...'
        (end,) = of(frames, "tool_end")
        assert end["response_summary"] == "Updated workflow: Greeter Bot"
        saved = (await c.get(f"/api/workflows/{wid}")).json()
        assert saved["nodes"][1]["data"]["message"] == "Good morning $userInput.text"
        versions = (await c.get(f"/api/workflows/{wid}/versions")).json()
        assert [v["version"] for v in versions] == [2, 1]
        # The first reply carried the hidden workflow marker: the model saw it in the history.
        history = model.chat_requests[-1].body["messages"]
        assert f"heym-workflow-id:{wid}" in history[2]["content"]
        r = await c.get(f"/api/chats/{cid}")
        assert f"heym-workflow-id:{wid}" in r.json()["messages"][1]["content"]
