"""The MCP approval policy of a HITL agent (Heym §5.2): a gated MCP call pauses with its
planned arguments; after accept, that exact call runs once; in `once` mode the tool's second
call does not pause."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from contracts.review import ReviewRequested
from contracts.tools import SandboxToolDispatched
from libs.testing.mcp_peer import McpPeer
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.review.helpers import token_of, wait_entry, wait_status
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

POLICY = (
    "You keep tallies. Ask before every tally call. Ask only once before using add. "
    "The echo tool is pre-approved."
)


def _script(key: str) -> Script:
    return Script(
        rules=[
            Rule(
                name="tally",
                when=Match(assistant_turns=0),
                reply=Reply(tool_calls=[ToolCall("tally", {"key": key})]),
            ),
            Rule(
                name="add-1",
                when=Match(assistant_turns=1),
                reply=Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 2})]),
            ),
            Rule(
                name="add-2",
                when=Match(assistant_turns=2),
                reply=Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})]),
            ),
            Rule(name="done", when=Match(assistant_turns=3), reply=Reply(text="{tool_results}")),
        ]
    )


async def test_gated_mcp_calls_pause_with_their_arguments_and_run_once(system: System) -> None:
    key = uuid.uuid4().hex
    _, api_key = await system.new_user()
    with ModelServer(_script(key)) as model:
        async with McpPeer("streamable-http") as peer, system.client(api_key) as c:
            cred = await model_credential(c, model)
            connection = {
                "id": "p",
                "label": "peer",
                "transport": "streamable_http",
                "url": peer.url,
            }
            nodes = [
                n("in", "textInput", "request"),
                agent(
                    "a",
                    "keeper",
                    cred,
                    hitlEnabled=True,
                    systemInstruction=POLICY,
                    mcpConnections=[connection],
                ),
            ]
            wid = await create(c, nodes, [e("in", "a")])
            r = await c.post(
                f"/api/workflows/{wid}/execute",
                json={"text": "go"},
                headers={"X-Simple-Response": "false"},
            )
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["status"] == "pending", body
            run_id = body["execution_history_id"]
            first: dict[str, Any] = body["outputs"]["keeper"]
            assert "tally" in first["summary"]
            assert f'"key": "{key}"' in first["draftText"]  # the planned arguments
            # the system prompt says how the policy was read
            system_text = model.chat_requests[0].body["messages"][0]["content"]
            assert "add: once" in system_text
            assert "tally: always" in system_text
            assert "echo: never" in system_text

            ok = await c.post(
                f"/api/hitl/{token_of(first['reviewUrl'])}/decision", json={"action": "accept"}
            )
            assert ok.status_code == 202
            # the approved call ran; the model then calls add (once mode): another pause
            second = await wait_entry(
                c,
                wid,
                run_id,
                lambda x: (
                    x["status"] == "pending"
                    and x["outputs"]["keeper"]["requestId"] != first["requestId"]
                ),
            )
            assert "add" in second["outputs"]["keeper"]["summary"]
            ok = await c.post(
                f"/api/hitl/{token_of(second['outputs']['keeper']['reviewUrl'])}/decision",
                json={"action": "accept"},
            )
            assert ok.status_code == 202
            done = await wait_status(c, wid, run_id, {"success", "error"})
            assert done["status"] == "success", done

    out = done["outputs"]["keeper"]
    calls = out["tool_calls"]
    assert [(x["name"], x["status"]) for x in calls] == [
        ("tally", "success"),
        ("add", "success"),
        ("add", "success"),
    ]
    assert "count=1" in json.dumps(calls[0]["result"])  # the approved call ran exactly once
    assert [h["decision"] for h in out["hitlHistory"]] == ["accepted", "accepted"]
    events = [env.event for env in await system.events(run_id)]
    reviews = [ev for ev in events if isinstance(ev, ReviewRequested) and not ev.agent_sequence]
    assert [(r.tool_name, r.match_strategy) for r in reviews] == [
        ("tally", "exact_args"),
        ("add", "tool_name"),
    ]  # the second add did not pause
    tally_items = [
        ev for ev in events if isinstance(ev, SandboxToolDispatched) and ev.name == "tally"
    ]
    assert len(tally_items) == 1
    assert json.loads(tally_items[0].arguments) == {"key": key}
    assert [q.rule_name for q in model.chat_requests] == ["tally", "add-1", "add-2", "done"]
