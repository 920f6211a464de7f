"""What the model sees: an attachment routed into a workflow's input (images never reach the
model), and context compression recorded and applied within a turn."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from libs.testing.eventually import eventually
from libs.testing.model_server import ChatRequest, Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import e, model_credential, n
from tests.e2e.assistant.helpers import conversation, of, reply, turn
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

IMAGE = "data:image/png;base64," + "iVBORw0KGgo" * 20


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


async def test_an_image_goes_into_the_workflows_image_input_never_to_the_model(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        nodes = [
            n("in", "textInput", "userInput", inputFields=[{"key": "caption"}, {"key": "photo"}]),
            n("o", "output", "result", message="$userInput.photo"),
        ]
        r = await c.post(
            "/api/workflows", json={"name": "Vision", "nodes": nodes, "edges": [e("in", "o")]}
        )
        wid = r.json()["id"]
        model.script = Script(
            rules=[
                Rule(
                    when=Match(last_is_tool_result=False),
                    reply=Reply(
                        tool_calls=[
                            ToolCall(
                                "execute_workflow",
                                {"workflow_id": wid, "inputs": {"caption": "a cat"}},
                            )
                        ]
                    ),
                ),
                Rule(reply=Reply(text="The workflow got your picture.")),
            ]
        )
        cid = await conversation(c)
        frames = await turn(
            c,
            cid,
            "what is in this picture?",
            cred,
            attachment={"name": "cat.png", "kind": "image", "content": IMAGE},
        )
        assert reply(frames) == "The workflow got your picture."
        (shown,) = of(frames, "tool_output")
        assert shown["images"] == [IMAGE]
        for request in model.chat_requests:
            assert "data:image" not in json.dumps(request.body)
        assert "[Attached image: cat.png]" in model.chat_requests[0].body["messages"][-1]["content"]
        assert (
            "[image omitted - see workflow execution in UI]"
            in model.chat_requests[1].body["messages"][-1]["content"]
        )
        runs = (await c.get("/api/workflows/history/all")).json()["items"]
        entry = (await c.get(f"/api/workflows/history/all/{runs[0]['id']}")).json()
        assert entry["inputs"]["body"] == {"caption": "a cat", "photo": IMAGE}


def _summarising(r: ChatRequest) -> bool:
    return bool(r.messages) and "summarising part of an AI agent" in str(
        r.messages[0].get("content")
    )


async def test_a_long_turn_is_compressed_and_the_summary_recorded(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        nodes = [n("in", "textInput", "userInput")]
        r = await c.post(
            "/api/workflows",
            json={
                "name": "Wordy",
                "description": "lorem ipsum " * 400,
                "nodes": nodes,
                "edges": [],
            },
        )
        assert r.status_code == 201
        model.script = Script(
            context_windows={"chat-model": 2500},
            rules=[
                Rule(
                    name="summary",
                    when=Match(predicate=_summarising),
                    reply=Reply(text="SUMMARY: listed the workflows twice"),
                ),
                Rule(
                    name="list",
                    times=4,  # a count, not the request's turns: compression removes turns
                    reply=Reply(tool_calls=[ToolCall("list_workflows", {})]),
                ),
                Rule(name="done", reply=Reply(text="all read")),
            ],
        )
        cid = await conversation(c)
        frames = await turn(c, cid, "read my workflows again and again", cred)
        assert reply(frames) == "all read"
        compressions = of(frames, "compressed")
        assert compressions, "the turn outgrew its window and was compressed"
        for compressed in compressions:
            assert compressed["messages_compressed"] >= 2
            assert compressed["tokens_after"] < compressed["tokens_before"]
        asked = [q for q in model.chat_requests if q.rule_name != "summary"]
        after = [
            q
            for q in asked
            if any("SUMMARY: listed" in str(m.get("content")) for m in q.body["messages"])
        ]
        assert after, "the rounds after the compression carry the summary"
        # Each compression asked the summariser once: recorded summaries are reused.
        summaries = [q for q in model.chat_requests if q.rule_name == "summary"]
        assert len(summaries) == len(compressions)

        async def stored() -> bool:
            body = (await c.get(f"/api/chats/{cid}")).json()
            names = [t["name"] for t in body["messages"][-1]["tool_calls"]]
            assert "_context_compression" in names
            return True

        await eventually(stored)
