"""The sandbox's MCP client against real servers: a third-party stdio server from PyPI
(mcp-server-time), contained; a server killed between calls is restarted; a server that is
down at listing time is skipped with its reason."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from libs.embedded.process import free_port
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
        first_slot=100,
    )
    try:
        yield c
    finally:
        await c.close()


def time_server(mark: str) -> dict[str, object]:
    return {
        "id": "time",
        "label": "time",
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        "env": {"HEYM_TEST_MARK": mark},
    }


def pids_with(mark: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if f"HEYM_TEST_MARK={mark}".encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


async def test_a_third_party_stdio_server_is_listed_and_called(client: McpClient) -> None:
    server = time_server(uuid.uuid4().hex)
    listing = await client.list_tools("u1", [server], 30)
    assert listing.errors == {}
    names = {t["name"] for t in listing.tools}
    assert names == {"get_current_time", "convert_time"}
    tool = next(t for t in listing.tools if t["name"] == "get_current_time")
    assert tool["_source"] == "mcp"
    assert tool["_mcp_server"] == "time"
    assert tool["_connection_id"] == "time"
    out = await client.call("u1", server, "get_current_time", {"timezone": "Europe/Warsaw"}, 30)
    assert out.status == "success"
    assert out.result["timezone"] == "Europe/Warsaw"
    assert out.extra == {"mcp_server": "time"}


async def test_a_stdio_server_killed_between_two_calls_is_restarted(client: McpClient) -> None:
    mark = uuid.uuid4().hex
    server = time_server(mark)
    first = await client.call("u1", server, "get_current_time", {"timezone": "UTC"}, 30)
    assert first.status == "success"
    pids = pids_with(mark)
    assert pids, "the server process runs with the connection's env"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    second = await client.call("u1", server, "get_current_time", {"timezone": "UTC"}, 30)
    assert second.status == "success", second.result
    assert pids_with(mark)
    assert set(pids_with(mark)).isdisjoint(pids)


async def test_a_server_down_at_listing_is_skipped_with_its_reason(client: McpClient) -> None:
    down = {
        "id": "down",
        "label": "down",
        "transport": "streamable_http",
        "url": f"http://127.0.0.1:{free_port()}/mcp",
        "timeoutSeconds": 3,
    }
    listing = await client.list_tools("u1", [down, time_server(uuid.uuid4().hex)], 30)
    assert {t["_mcp_server"] for t in listing.tools} == {"time"}
    assert set(listing.errors) == {"down"}
    assert listing.errors["down"]


async def test_mcp_tool_errors_and_unknown_transports_are_results(client: McpClient) -> None:
    server = time_server(uuid.uuid4().hex)
    bad = await client.call("u1", server, "get_current_time", {"timezone": "Mars/Olympus"}, 30)
    assert bad.status == "error"
    assert "error" in bad.result
    unknown = await client.call("u1", {"transport": "websocket", "url": "ws://x"}, "t", {}, 5)
    assert unknown.result == {"error": "Unknown MCP transport: websocket"}
