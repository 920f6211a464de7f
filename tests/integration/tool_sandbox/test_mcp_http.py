"""The sandbox's MCP client over sse and streamable HTTP (servers written with the SDK):
configured headers arrive, results follow §6.3, a restarted server gets a new session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from libs.testing.mcp_peer import McpPeer
from libs.tools.mcp_config import McpServer
from services.tool_sandbox.containment.policy import Containment, Limits
from services.tool_sandbox.mcp.client import McpClient

pytestmark = pytest.mark.integration


async def _no_stored(owner: str, cid: str) -> McpServer | None:
    return None


@pytest.fixture
async def client(containment: Containment, sandbox_dir: Path) -> AsyncIterator[McpClient]:
    c = McpClient(
        containment,
        work_root=sandbox_dir / "mcp",
        load_stored=_no_stored,
        limits=Limits(memory_kind="data", processes=256, cpu_s=3600),
        first_slot=200,
    )
    try:
        yield c
    finally:
        await c.close()


@pytest.mark.parametrize("transport", ["sse", "streamable_http"])
async def test_tools_are_listed_and_called_with_the_configured_headers(
    client: McpClient, transport: str
) -> None:
    async with McpPeer("sse" if transport == "sse" else "streamable-http") as peer:
        server = {
            "id": "peer",
            "label": "Peer",
            "transport": transport,
            "url": peer.url,
            "headers": '{"Authorization": "Bearer peer-token-42"}',  # a JSON string, as Heym allows
        }
        listing = await client.list_tools("u1", [server], 20)
        assert listing.errors == {}
        assert {t["name"] for t in listing.tools} >= {"echo", "add", "fail", "whoami"}
        assert {t["_mcp_server"] for t in listing.tools} == {"Peer"}
        echo = await client.call("u1", server, "echo", {"text": "hi"}, 20)
        # the SDK wraps a str result as structured content, which wins (§6.3 rule 3)
        assert echo.result == {"result": "echo: hi"}
        add = await client.call("u1", server, "add", {"a": 2, "b": 3}, 20)
        assert add.result == {"sum": 5}  # structured content wins
        fail = await client.call("u1", server, "fail", {}, 20)
        assert fail.status == "error"
        assert fail.result == {"error": "Error executing tool fail"}  # the first text block
        who = await client.call("u1", server, "whoami", {}, 20)
        assert who.result == {"result": "Bearer peer-token-42"}


async def test_a_restarted_streamable_http_server_gets_a_new_session(client: McpClient) -> None:
    async with McpPeer("streamable-http") as peer:
        server = {"id": "p", "transport": "streamable_http", "url": peer.url}
        first = await client.call("u1", server, "echo", {"text": "one"}, 20)
        assert first.result == {"result": "echo: one"}
        await peer.stop()
        await peer.start()  # same port, a server that never saw the session
        second = await client.call("u1", server, "echo", {"text": "two"}, 20)
        assert second.result == {"result": "echo: two"}


@pytest.mark.parametrize("transport", ["sse", "streamable_http"])
async def test_the_tool_calls_span_reaches_the_server_in_meta(
    client: McpClient, transport: str
) -> None:
    """The call's `traceparent` (the agent's tool span) travels in `params._meta`, per call,
    over the shared warm session; a call without one sends none."""
    span = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    other = "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01"
    async with McpPeer("sse" if transport == "sse" else "streamable-http") as peer:
        server = {"id": "p", "transport": transport, "url": peer.url}
        first = await client.call("u1", server, "traceparent", {}, 20, traceparent=span)
        second = await client.call("u1", server, "traceparent", {}, 20, traceparent=other)
        none = await client.call("u1", server, "traceparent", {}, 20)
    assert first.result == {"result": span}
    assert second.result == {"result": other}
    assert none.result == {"result": ""}
