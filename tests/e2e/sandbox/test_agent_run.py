"""Issue #10's one-run acceptance: an agent (scripted model) uses, in one workflow run, a
skill uploaded as a .zip (two .py files, one importing the other), a skill uploaded as .md
(its content reaches the system prompt), an inline skill in Heym's node JSON, a Python tool, a
third-party MCP server from PyPI over stdio (mcp-server-time, a stored connection), and MCP
servers over streamable HTTP and SSE (written with the SDK)."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest

from libs.testing.mcp_peer import McpPeer
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script, ToolCall
from tests.e2e.agents.helpers import agent, create, e, model_credential, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

MD_CONTENT = "Always answer like a ship's captain."


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="(unscripted)"))])) as server:
        yield server


def calc_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("SKILL.md", "Use calc for arithmetic.")
        z.writestr(
            "main.py",
            "import sys, json\nfrom ops import double\n"
            "print(json.dumps({'double': double(int(sys.stdin.read()))}))",
        )
        z.writestr("ops.py", "def double(x):\n    return 2 * x\n")
    return buf.getvalue()


async def test_one_run_uses_every_tool_kind(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with (
        McpPeer("streamable-http", prefix="http_") as http_peer,
        McpPeer("sse", prefix="sse_") as sse_peer,
        system.client(key) as c,
    ):
        cred = await model_credential(c, model)
        zipped = await c.post("/api/skills", files={"file": ("calc.zip", calc_zip())})
        assert zipped.status_code == 201, zipped.text
        md = await c.post("/api/skills", files={"file": ("captain.md", MD_CONTENT.encode())})
        assert md.status_code == 201, md.text
        clock = await c.post(
            "/api/mcp/connections",
            json={
                "label": "clock",
                "transport": "stdio",
                "command": sys.executable,
                "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
            },
        )
        assert clock.status_code == 201, clock.text
        inline_skill = {
            "id": "inline-1",
            "name": "Shout",
            "content": "Shout when asked.",
            "files": [{"path": "run.py", "content": "import sys\nprint(sys.stdin.read().upper())"}],
        }
        calls = [
            ToolCall("skill_calc", {"input": "21"}),
            ToolCall("skill_shout", {"input": "ahoy"}),
            ToolCall("area", {"r": 1}),
            ToolCall("get_current_time", {"timezone": "Europe/Paris"}),
            ToolCall("http_add", {"a": 2, "b": 3}),
            ToolCall("sse_echo", {"text": "over sse"}),
        ]
        model.script = Script(
            rules=[
                Rule(when=Match(assistant_turns=0), reply=Reply(tool_calls=calls)),
                Rule(when=Match(last_is_tool_result=True), reply=Reply(text="all done")),
            ]
        )
        node = agent(
            "a",
            "captain",
            cred,
            systemInstruction="You are the agent.",
            skills=[{"id": zipped.json()["id"]}, {"id": md.json()["id"]}, inline_skill],
            tools=[
                {
                    "name": "area",
                    "description": "circle area",
                    "parameters": {"type": "object", "properties": {"r": {"type": "number"}}},
                    "code": "import math\ndef area(r):\n    return round(math.pi * r * r, 3)",
                }
            ],
            mcpConnections=[
                {"id": clock.json()["id"]},
                {
                    "id": "h",
                    "label": "httpPeer",
                    "transport": "streamable_http",
                    "url": http_peer.url,
                },
                {"id": "s", "label": "ssePeer", "transport": "sse", "url": sse_peer.url},
            ],
        )
        wid = await create(c, [n("in", "textInput", "req"), node], [e("in", "a")])
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "go"},
            headers={"X-Simple-Response": "false"},
        )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["status"] == "success", body
    out = body["outputs"]["captain"]
    assert out["text"] == "all done"
    by_name = {c["name"]: c for c in out["tool_calls"]}
    assert {k: v["status"] for k, v in by_name.items()} == dict.fromkeys(by_name, "success")
    assert by_name["skill_calc"]["result"] == {"double": 42}
    assert by_name["skill_shout"]["result"] == {"output": "AHOY", "stderr": ""}
    assert by_name["area"]["result"] == 3.142
    assert by_name["get_current_time"]["result"]["timezone"] == "Europe/Paris"
    assert by_name["http_add"]["result"] == {"sum": 5}
    assert by_name["sse_echo"]["result"] == {"result": "echo: over sse"}
    assert sorted(out["skills_used"]) == ["Shout", "calc"]
    assert out["timing_breakdown"]["mcp_list_ms"] > 0
    # the .md skill's content (and the others') reached the system prompt, before the
    # system instruction, as the model server received it
    first = model.chat_requests[0].body
    system_prompt = first["messages"][0]["content"]
    assert system_prompt.index(MD_CONTENT) < system_prompt.index("You are the agent.")
    assert "Use calc for arithmetic." in system_prompt
    offered = {t["function"]["name"] for t in first["tools"]}
    assert offered >= {
        "skill_calc",
        "skill_shout",
        "area",
        "get_current_time",
        "http_add",
        "sse_echo",
    }
    assert "skill_captain" not in offered  # a skill without a .py file is content only
    json.dumps(body)
