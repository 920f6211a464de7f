"""The official MCP conformance suite and the MCP Inspector CLI (Node) against Heym's MCP
server: the default endpoint and a named server's endpoint."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from libs.testing.model_server import ModelServer, Reply, Rule, Script
from tests.e2e.agents.helpers import model_credential
from tests.e2e.assistant import node_tools
from tests.e2e.assistant.helpers import MODEL, greeter
from tests.e2e.assistant.key_proxy import key_proxy
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

APPLICABLE = (
    "server-initialize",
    "ping",
    "tools-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
)


@pytest.fixture(scope="module")
def npm_tools() -> Iterator[object]:
    return node_tools.ensure_installed()


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(
        Script(rules=[Rule(reply=Reply(text="Hello from the Heym Agent."))])
    ) as server:
        yield server


async def _endpoints(system: System, model: ModelServer) -> tuple[str, list[tuple[str, str]]]:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        wid = await greeter(c)
        await c.patch(f"/api/mcp/workflows/{wid}", json={"mcp_enabled": True})
        await c.patch(
            "/api/mcp/chat-tool", json={"enabled": True, "credential_id": cred, "model": MODEL}
        )
        server = (await c.post("/api/mcp/servers", json={"name": "conformance"})).json()
        await c.put(f"/api/mcp/servers/{server['id']}/workflows", json={"workflow_ids": [wid]})
    return key, [("/api/mcp", key), (f"/api/mcp/servers/{server['id']}/mcp", server["key"])]


@pytest.mark.parametrize("scenario", APPLICABLE)
async def test_conformance_scenarios_that_apply(
    system: System, model: ModelServer, npm_tools: object, scenario: str
) -> None:
    _, endpoints = await _endpoints(system, model)
    for path, key in endpoints:
        async with key_proxy(system.base_url, key) as proxy:
            code, out = await node_tools.run(
                npm_tools,  # type: ignore[arg-type]
                node_tools.CONFORMANCE,
                "server",
                "--url",
                f"{proxy}{path}",
                "--scenario",
                scenario,
            )
        assert code == 0, f"{scenario} on {path}:\n{out}"
        tally = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", out)
        assert tally is not None, out
        passed, total, failed = map(int, tally.groups())
        assert total > 0, out
        assert (passed, failed) == (total, 0), f"{scenario} on {path}:\n{out}"


async def test_inspector_cli_lists_and_calls_tools(
    system: System, model: ModelServer, npm_tools: object
) -> None:
    _, endpoints = await _endpoints(system, model)
    (default, key), (named, server_key) = endpoints
    args = ["--transport", "http", "--header", f"X-MCP-Key: {key}"]
    code, out = await node_tools.run(
        npm_tools,
        node_tools.INSPECTOR_CLI,
        f"{system.base_url}{default}",
        *args,
        "--method",
        "tools/list",  # type: ignore[arg-type]
    )
    assert code == 0, out
    assert [t["name"] for t in json.loads(out)["tools"]] == ["greeter", "heym_chat"]
    code, out = await node_tools.run(
        npm_tools,  # type: ignore[arg-type]
        node_tools.INSPECTOR_CLI,
        f"{system.base_url}{default}",
        *args,
        "--method",
        "tools/call",
        "--tool-name",
        "greeter",
        "--tool-arg",
        "text=Node",
    )
    assert code == 0, out
    result = json.loads(out)
    assert result["isError"] is False
    assert json.loads(result["content"][0]["text"]) == {"result": {"result": "Hello Node"}}
    code, out = await node_tools.run(
        npm_tools,  # type: ignore[arg-type]
        node_tools.INSPECTOR_CLI,
        f"{system.base_url}{default}",
        *args,
        "--method",
        "tools/call",
        "--tool-name",
        "heym_chat",
        "--tool-arg",
        "message=hello",
    )
    assert code == 0, out
    assert json.loads(out)["content"][0]["text"].startswith(
        "Hello from the Heym Agent.\n\nconversation_id: "
    )
    code, out = await node_tools.run(
        npm_tools,  # type: ignore[arg-type]
        node_tools.INSPECTOR_CLI,
        f"{system.base_url}{named}",
        "--transport",
        "http",
        "--header",
        f"X-MCP-Key: {server_key}",
        "--method",
        "tools/list",
    )
    assert code == 0, out
    assert [t["name"] for t in json.loads(out)["tools"]] == ["greeter"]
