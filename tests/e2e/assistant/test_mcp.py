"""Heym as an MCP server, driven by the `mcp` SDK's own client sessions."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from libs.testing.eventually import eventually
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import model_credential
from tests.e2e.assistant.helpers import MODEL, greeter
from tests.e2e.assistant.mcp_clients import legacy_sse, streamable
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


async def test_workflow_tools_and_heym_chat_over_streamable_http(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await greeter(c)
        await greeter(c, "Not Offered")
        r = await c.patch(f"/api/mcp/workflows/{wid}", json={"mcp_enabled": True})
        assert r.status_code == 200, r.text
        r = await c.patch(
            "/api/mcp/chat-tool", json={"enabled": True, "credential_id": cred, "model": MODEL}
        )
        assert r.status_code == 200, r.text
    model.script = Script(
        rules=[
            Rule(when=Match(last_user_contains="thanks"), reply=Reply(text="Any time.")),
            Rule(
                when=Match(last_is_tool_result=False),
                reply=Reply(tool_calls=[ToolCall("list_workflows", {})]),
            ),
            Rule(
                when=Match(tool_result_for="list_workflows"),
                reply=Reply(
                    tool_calls=[
                        ToolCall(
                            "execute_workflow", {"workflow_id": wid, "inputs": {"text": "Ada"}}
                        )
                    ]
                ),
            ),
            Rule(
                when=Match(tool_result_for="execute_workflow"),
                reply=Reply(text="It said hello to Ada."),
            ),
        ]
    )
    async with streamable(f"{system.base_url}/api/mcp", key) as session:
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == ["greeter", "heym_chat"]
        greeter_tool = listed.tools[0]
        assert greeter_tool.description == "Greets someone"
        assert greeter_tool.input_schema["required"] == ["text"]

        called = await session.call_tool("greeter", {"text": "Ada"})
        assert called.is_error is False
        assert json.loads(called.content[0].text) == {"result": {"result": "Hello Ada"}}

        progress: list[str] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")

        chat = await session.call_tool(
            "heym_chat", {"message": "greet Ada please"}, progress_callback=on_progress
        )
        assert chat.is_error is False
        text = chat.content[0].text
        assert text.startswith("It said hello to Ada.\n\nconversation_id: ")
        assert "heym actions: list_workflows, execute_workflow" in text
        assert progress == ["Listing workflows...", 'Running workflow "Greeter"...']
        found = re.search(r"conversation_id: (\S+)", text)
        assert found is not None
        cid = found.group(1)

        again = await session.call_tool("heym_chat", {"message": "thanks", "conversation_id": cid})
        assert again.is_error is False
        assert again.content[0].text.startswith("Any time.\n\nconversation_id: " + cid)
        history = [m["role"] for m in model.chat_requests[-1].body["messages"]]
        assert history == ["system", "user", "assistant", "user"]

    async with system.client(key) as c:

        async def mcp_runs() -> int:
            r = await c.get("/api/workflows/history/all", params={"trigger_source": "MCP"})
            return int(r.json()["total"])

        await eventually(mcp_runs, timeout=20)  # the history is a projection
        assert await mcp_runs() == 1
        listed = (await c.get("/api/chats")).json()
        assert [(x["id"], x["source"]) for x in listed] == [(cid, "mcp")]


async def test_legacy_sse_transport_lists_and_calls(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = await greeter(c)
        await c.patch(f"/api/mcp/workflows/{wid}", json={"mcp_enabled": True})
    async with legacy_sse(f"{system.base_url}/api/mcp/sse", key) as session:
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == ["greeter"]
        called = await session.call_tool("greeter", {"text": "Bob"})
        assert json.loads(called.content[0].text) == {"result": {"result": "Hello Bob"}}
