"""The A2A client: an `a2a` node and an agent's `a2aAgents` tool call a second Heym server's
Heym Agent (another `heym up`, its own data directory and ports) over A2A 1.0."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.agents.test_tools import run
from tests.e2e.assistant.helpers import MODEL
from tests.e2e.stack import RunningStack, heym_up
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

REMOTE_KEY = "heym_remote_" + uuid.uuid4().hex
README = Path(__file__).resolve().parents[3] / "README.md"
CLARIFY = (
    "Which city?\n\n```heym-clarify\n"
    '{"questions": [{"id": "city", "text": "Which city?", "type": "text"}]}\n```'
)


@pytest.fixture(scope="module")
def remote_model() -> Iterator[ModelServer]:
    """The model behind the second server's Heym Agent."""
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


@pytest.fixture(scope="module")
async def remote(
    tmp_path_factory: pytest.TempPathFactory, remote_model: ModelServer
) -> AsyncIterator[RunningStack]:
    """A second Heym (`heym up`) whose admin has the Heym Agent on over A2A."""
    data_dir: Path = tmp_path_factory.mktemp("remote-heym") / "data"
    async with heym_up(data_dir, REMOTE_KEY) as stack:
        async with httpx.AsyncClient(
            base_url=stack.base_url, headers={"X-MCP-Key": REMOTE_KEY}, timeout=30
        ) as c:
            cred = await model_credential(c, remote_model, name="remote model")
            r = await c.patch(
                "/api/a2a/settings", json={"enabled": True, "credential_id": cred, "model": MODEL}
            )
            assert r.status_code == 200, r.text
        yield stack


async def key_credential(c: httpx.AsyncClient, key: str, name: str = "remote heym") -> str:
    """A stored credential holding the remote server's API key."""
    r = await c.post("/api/credentials", json={"name": name, "type": "openai", "api_key": key})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def a2a_node(url: str, cred: str, **data: Any) -> dict[str, Any]:
    return n("call", "a2a", "ask peer", agentUrl=url, credentialId=cred, **data)


def node_output(body: dict[str, Any], label: str) -> dict[str, Any]:
    (result,) = [r for r in body["node_results"] if r["node_label"] == label]
    return dict(result)


async def test_a2a_node_gets_the_remote_agents_reply(
    system: System, remote: RunningStack, remote_model: ModelServer
) -> None:
    remote_model.script = Script(
        rules=[
            Rule(
                when=Match(last_user_contains="capital of France"),
                reply=Reply(text="Paris is the capital of France."),
            )
        ]
    )
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await key_credential(c, REMOTE_KEY)
        wid = await create(
            c,
            [
                n("in", "textInput", "q"),
                a2a_node(remote.base_url, cred, message="Please answer: $input.text"),
            ],
            [e("in", "call")],
        )
    body = await run(system, key, wid, "what is the capital of France?")
    result = node_output(body, "ask peer")
    assert result["status"] == "success", result
    out = result["output"]
    assert out["state"] == "COMPLETED"
    assert out["text"] == "Paris is the capital of France."
    assert out["input_required"] is False
    assert out["agent"] == "Heym Agent"
    assert out["task_id"]
    assert out["context_id"]
    # the remote Heym Agent's model received the rendered message
    assert any(
        "Please answer: what is the capital of France?" in str(r.body["messages"][-1])
        for r in remote_model.chat_requests
    )
    # the remote key never reached the log: not in the run's events, nor in its output
    events = await system.events(body["execution_history_id"])
    assert events
    assert all(REMOTE_KEY not in repr(env.event) for env in events)


async def test_streaming_and_input_required_then_answered_on_the_same_task(
    system: System, remote: RunningStack, remote_model: ModelServer
) -> None:
    remote_model.script = Script(
        rules=[
            Rule(when=Match(last_user_contains="Lyon"), reply=Reply(text="Rainy in Lyon.")),
            Rule(reply=Reply(text=CLARIFY)),
        ]
    )
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await key_credential(c, REMOTE_KEY)
        ask = await create(
            c,
            [n("in", "textInput", "q"), a2a_node(remote.base_url, cred, mode="streaming")],
            [e("in", "call")],
        )
        answer = await create(
            c,
            [
                n("in", "textInput", "q", inputFields=[{"key": "text"}, {"key": "task"}]),
                a2a_node(
                    remote.base_url,
                    cred,
                    mode="polling",
                    message="$input.text",
                    taskId="$input.task",
                    authHeader="Authorization",
                ),
            ],
            [e("in", "call")],
        )
    asked = node_output(await run(system, key, ask, "What is the weather?"), "ask peer")
    assert asked["status"] == "success", asked
    out = asked["output"]
    assert out["state"] == "INPUT_REQUIRED"
    assert out["input_required"] is True
    assert out["text"] == "Which city?"
    assert out["data"][0]["questions"][0]["id"] == "city"
    assert out["steps"], "a streamed call keeps the remote's step updates"
    async with system.client(key) as c:
        r = await c.post(
            f"/api/workflows/{answer}/execute",
            json={"text": "Lyon", "task": out["task_id"]},
            headers={"X-Simple-Response": "false"},
        )
    done = node_output(r.json(), "ask peer")
    assert done["status"] == "success", done
    assert done["output"]["state"] == "COMPLETED"
    assert done["output"]["task_id"] == out["task_id"]
    assert done["output"]["text"] == "Rainy in Lyon."


async def test_wrong_key_fails_the_node_without_showing_it(
    system: System, remote: RunningStack
) -> None:
    wrong = "heym_wrong_" + uuid.uuid4().hex
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await key_credential(c, wrong)
        wid = await create(
            c, [n("in", "textInput", "q"), a2a_node(remote.base_url, cred)], [e("in", "call")]
        )
    body = await run(system, key, wid, "hello")
    result = node_output(body, "ask peer")
    assert result["status"] == "error", result
    assert "401" in result["error"], result["error"]
    assert wrong not in str(body)


async def test_agent_delegates_to_the_remote_agent_as_a_tool(
    system: System, remote: RunningStack, remote_model: ModelServer
) -> None:
    remote_model.script = Script(
        rules=[
            Rule(
                when=Match(last_user_contains="translate"),
                reply=Reply(text="Bonjour le monde"),
            )
        ]
    )
    _, key = await system.new_user()
    with ModelServer(
        Script(
            rules=[
                Rule(
                    when=Match(last_is_tool_result=False),
                    reply=Reply(
                        tool_calls=[
                            ToolCall("a2a_translator", {"message": "translate 'hello world'"})
                        ]
                    ),
                ),
                Rule(
                    when=Match(tool_result_for="a2a_translator"),
                    reply=Reply(text="The peer says: {tool_results}"),
                ),
            ]
        )
    ) as local_model:
        async with system.client(key) as c:
            model_cred = await model_credential(c, local_model)
            remote_cred = await key_credential(c, REMOTE_KEY)
            wid = await create(
                c,
                [
                    n("in", "textInput", "q"),
                    agent(
                        "a",
                        "delegator",
                        model_cred,
                        a2aAgents=[
                            {
                                "name": "translator",
                                "agentUrl": remote.base_url,
                                "credentialId": remote_cred,
                                "description": "a translator",
                            }
                        ],
                    ),
                ],
                [e("in", "a")],
            )
        body = await run(system, key, wid, "say hello in French")
        offered = local_model.chat_requests[0].body["tools"]
        assert [t["function"]["name"] for t in offered] == ["a2a_translator"]
    result = node_output(body, "delegator")
    assert result["status"] == "success", result
    (call,) = result["output"]["tool_calls"]
    assert call["status"] == "success", call
    assert "Bonjour le monde" in str(call["result"])
    assert "Bonjour le monde" in result["output"]["text"]
    events = await system.events(body["execution_history_id"])
    assert events
    assert all(REMOTE_KEY not in repr(env.event) for env in events)


async def test_a2a_configuration_is_checked_on_save(system: System) -> None:
    _, key = await system.new_user()
    _, other_key = await system.new_user()
    async with system.client(other_key) as c:
        foreign = await key_credential(c, "not-mine-" + uuid.uuid4().hex)
    async with system.client(key) as c:
        cases: list[tuple[dict[str, Any], str]] = [
            (n("call", "a2a", "ask"), "needs data.agentUrl"),
            (n("call", "a2a", "ask", agentUrl="ftp://x"), "http:// or https://"),
            (n("call", "a2a", "ask", agentUrl="http://u:p@h"), "must not carry credentials"),
            (n("call", "a2a", "ask", agentUrl="http://h/?key=k"), "query"),
            (n("call", "a2a", "ask", agentUrl="http://h", mode="push"), "mode must be"),
            (n("call", "a2a", "ask", agentUrl="http://h", timeoutSeconds=5000), "timeoutSeconds"),
            (n("call", "a2a", "ask", agentUrl="http://h", authHeader="Cookie"), "authHeader"),
            (n("call", "a2a", "ask", agentUrl="http://h", credentialId=foreign), "not one of your"),
            (agent("call", "ag", "x", a2aAgents=[{"agentUrl": "http://h"}]), "needs a name"),
            (agent("call", "ag", "x", a2aAgents="http://h"), "must be a list"),
        ]
        for node, expected in cases:
            r = await c.post("/api/workflows", json={"name": "bad", "nodes": [node], "edges": []})
            assert r.status_code == 422, (node, r.text)
            assert expected in r.text, (expected, r.text)


async def test_the_readme_a2a_node_example_runs(
    system: System, remote: RunningStack, remote_model: ModelServer
) -> None:
    """The README's `a2a` node, pointed at the second Heym, saves and answers."""
    text = README.read_text()
    block = text.split("### Calling other A2A agents", 1)[1].split("```json\n", 1)[1]
    node = json.loads(block.split("\n```", 1)[0])
    remote_model.script = Script(rules=[Rule(reply=Reply(text="hello from the peer"))])
    _, key = await system.new_user()
    async with system.client(key) as c:
        node["data"]["agentUrl"] = remote.base_url
        node["data"]["credentialId"] = await key_credential(c, REMOTE_KEY)
        wid = await create(c, [n("in", "textInput", "q"), node], [e("in", node["id"])])
    result = node_output(await run(system, key, wid, "hi"), node["data"]["label"])
    assert result["output"]["text"] == "hello from the peer", result


async def test_an_a2a_canvas_node_wired_to_an_agent_runs_as_its_tool(
    system: System, remote: RunningStack, remote_model: ModelServer
) -> None:
    remote_model.script = Script(
        rules=[Rule(when=Match(last_user_contains="weather"), reply=Reply(text="Sunny."))]
    )
    _, key = await system.new_user()
    with ModelServer(
        Script(
            rules=[
                Rule(
                    when=Match(last_is_tool_result=False),
                    reply=Reply(tool_calls=[ToolCall("ask_peer", {"message": "the weather?"})]),
                ),
                Rule(
                    when=Match(tool_result_for="ask_peer"),
                    reply=Reply(text="Peer: {tool_results}"),
                ),
            ]
        )
    ) as local_model:
        async with system.client(key) as c:
            model_cred = await model_credential(c, local_model)
            remote_cred = await key_credential(c, REMOTE_KEY)
            tool = a2a_node(remote.base_url, remote_cred, agentProvidedFields=["message"])
            wid = await create(
                c,
                [n("in", "textInput", "q"), agent("a", "asker", model_cred), tool],
                [e("in", "a"), e("call", "a", target_handle="tool-input")],
            )
        body = await run(system, key, wid, "how is it outside?")
    result = node_output(body, "asker")
    assert result["status"] == "success", result
    (call,) = result["output"]["tool_calls"]
    assert call["status"] == "success", call
    assert call["result"]["text"] == "Sunny."
    assert REMOTE_KEY not in str(body)
