"""The Heym Agent over REST with the scripted model: list, run, report, continue; replay."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from libs.testing.eventually import eventually
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import model_credential
from tests.e2e.assistant.helpers import conversation, greeter, of, reply, stream, turn
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


async def test_chat_lists_runs_reports_and_continues(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await greeter(c)
        model.script = Script(
            rules=[
                Rule(
                    name="list",
                    when=Match(last_user_contains="greet Ada", last_is_tool_result=False),
                    reply=Reply(tool_calls=[ToolCall("list_workflows", {})]),
                ),
                Rule(
                    name="run",
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
                    name="report",
                    when=Match(tool_result_for="execute_workflow"),
                    reply=Reply(text="The workflow said: {tool_results}"),
                ),
                Rule(
                    name="thanks",
                    when=Match(last_user_contains="thanks"),
                    reply=Reply(text="You're welcome."),
                ),
            ]
        )
        cid = await conversation(c)
        frames = await turn(c, cid, "Please greet Ada with one of my workflows", cred)
        starts = of(frames, "tool_start")
        assert [s["label"] for s in starts] == [
            "Listing workflows...",
            'Running workflow "Greeter"...',
        ]
        ends = of(frames, "tool_end")
        assert [e["status"] for e in ends] == ["success", "success"]
        assert ends[0]["response_summary"] == "1 workflow(s) listed"
        assert ends[1]["response_summary"].startswith("Status: success · result")
        text = reply(frames)
        assert "Hello Ada" in text
        assert "dashboard_chat" not in text
        (done,) = of(frames, "assistant_done")
        assert done["paused_for_clarification"] is False
        assert of(frames, "title") == [
            {"type": "title", "title": "Please greet Ada with one of my workflows"}
        ]
        assert frames[-1] == {"type": "done"}

        # A late subscriber gets the finished turn replayed.
        again = await stream(c, cid)
        assert [f["type"] for f in again] == [f["type"] for f in frames]
        assert reply(again) == text

        # The run went through the scheduler: a normal run in history, from the chat.
        async def in_history() -> bool:
            history = await c.get(
                "/api/workflows/history/all", params={"trigger_source": "dashboard_chat"}
            )
            assert history.status_code == 200
            assert [i["workflow_id"] for i in history.json()["items"]] == [wid]
            return True

        # the history read model is a projection: it follows the log shortly after
        await eventually(in_history, timeout=20)

        # The conversation goes on, with the earlier turn as history.
        second = await turn(c, cid, "thanks!", cred)
        assert reply(second) == "You're welcome."
        last = model.chat_requests[-1].body["messages"]
        roles = [m["role"] for m in last]
        assert roles == ["system", "user", "assistant", "user"]
        assert "Hello Ada" in last[2]["content"]
        assert last[3]["content"].startswith("thanks!\n\nDate: ")

        async def stored() -> bool:
            r = await c.get(f"/api/chats/{cid}")
            body = r.json()
            assert [m["role"] for m in body["messages"]] == [
                "user",
                "assistant",
                "user",
                "assistant",
            ]
            assert [t["name"] for t in body["messages"][1]["tool_calls"]] == [
                "list_workflows",
                "execute_workflow",
            ]
            assert body["is_running"] is False
            assert body["title"] == "Please greet Ada with one of my workflows"
            return True

        await eventually(stored, timeout=10)

        # One LLM trace per model round, source dashboard_chat, session = the conversation.
        async def traced() -> bool:
            r = await c.get("/api/traces", params={"source": "dashboard_chat"})
            items = r.json()["items"]
            assert len(items) == 4
            assert {i["session_id"] for i in items} == {cid}
            assert {i["credential_id"] for i in items} == {cred}
            return True

        await eventually(traced, timeout=10)
        listed = (await c.get("/api/chats")).json()
        assert [x["id"] for x in listed] == [cid]
