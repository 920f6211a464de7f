"""What the agent runtime calls at an agent's start (libs/tools/agent_tools.py), against the
running system: stored skills and connections resolved for their owner only, MCP tools
listed by the tool sandbox (a down server skipped), and a call to a listed tool recorded."""

from __future__ import annotations

import sys

import asyncpg
import pytest

from libs.embedded.process import free_port
from libs.eventlog import EventLog
from libs.testing.eventually import eventually
from libs.tools.agent_tools import (
    list_mcp_tools,
    mcp_call_meta,
    resolve_mcp_connections,
    resolve_skills,
)
from tests.e2e.sandbox.items import dispatch, results
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


async def test_stored_skills_resolve_for_their_owner_only(system: System) -> None:
    owner, key = await system.new_user()
    other, _ = await system.new_user()
    async with system.client(key) as c:
        r = await c.post(
            "/api/skills",
            json={
                "name": "Greeter",
                "content": "Greet warmly.",
                "files": [{"path": "main.py", "content": "print('hi')"}],
                "timeoutSeconds": 5,
            },
        )
        sid = r.json()["id"]
    inline = {"id": "inline", "name": "Inline", "content": "x", "files": []}
    conn = await asyncpg.connect(system.database_url)
    try:
        mine = await resolve_skills(conn, owner, [{"id": sid}, inline])
        theirs = await resolve_skills(conn, other, [{"id": sid}])
    finally:
        await conn.close()
    assert [s["name"] for s in mine.items] == ["Greeter", "Inline"]
    assert mine.items[0]["files"] == [{"path": "main.py", "content": "print('hi')"}]
    assert mine.items[0]["timeoutSeconds"] == 5
    assert theirs.items == []
    assert "not found" in theirs.problems[0]


async def test_stored_connections_are_listed_and_called_through_the_sandbox(
    system: System, event_log: EventLog, run_id: str
) -> None:
    owner, key = await system.new_user()
    other, _ = await system.new_user()
    async with system.client(key) as c:
        r = await c.post(
            "/api/mcp/connections",
            json={
                "label": "clock",
                "transport": "stdio",
                "command": sys.executable,
                "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                "env": {"SOME_TOKEN": "kept-secret"},
            },
        )
        assert r.status_code == 201, r.text
        cid = r.json()["id"]
        preview = await c.post(f"/api/mcp/connections/{cid}/tools")
        assert preview.status_code == 200, preview.text
        assert {t["name"] for t in preview.json()["tools"]} == {"get_current_time", "convert_time"}
    down = {
        "id": "down",
        "label": "down",
        "transport": "streamable_http",
        "url": f"http://127.0.0.1:{free_port()}/mcp",
        "timeoutSeconds": 3,
    }
    conn = await asyncpg.connect(system.database_url)
    try:
        resolved = await resolve_mcp_connections(conn, owner, [{"id": cid}, down])
        foreign = await resolve_mcp_connections(conn, other, [{"id": cid}])
    finally:
        await conn.close()
    assert foreign.items == []
    assert "kept-secret" not in str(resolved.items)  # the log never holds stored secrets
    listing = await list_mcp_tools(event_log.nc, owner, resolved.items, timeout_s=20)
    assert {t["name"] for t in listing.tools} == {"get_current_time", "convert_time"}
    assert {t["_mcp_server"] for t in listing.tools} == {"clock"}
    assert set(listing.errors) == {"down"}
    assert listing.elapsed_ms > 0
    # another user naming the same stored connection gets nothing from the sandbox
    stolen = await list_mcp_tools(event_log.nc, other, resolved.items[:1], timeout_s=20)
    assert stolen.tools == []
    assert "not found" in next(iter(stolen.errors.values()))
    tool = next(t for t in listing.tools if t["name"] == "get_current_time")
    ev = await dispatch(
        event_log,
        run_id,
        source="mcp",
        name="get_current_time",
        arguments={"timezone": "Asia/Tokyo"},
        meta=mcp_call_meta(tool),
        owner_id=owner,
    )
    (recorded,) = await eventually(lambda: results(event_log, run_id, ev), timeout=30)
    assert recorded.status == "success", recorded.result
    assert recorded.result["timezone"] == "Asia/Tokyo"
    assert recorded.extra == {"mcp_server": "clock"}
