"""Isolation and bad input on the chat API and the MCP server: clear errors, never a 500,
nobody reaches another user's workflows, conversations or named servers."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from libs.testing.eventually import eventually
from libs.testing.model_server import Match, ModelServer, Reply, Rule, Script
from tests.e2e.agents.helpers import model_credential
from tests.e2e.assistant.helpers import MODEL, conversation, greeter, send
from tests.e2e.assistant.mcp_clients import streamable
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script(rules=[Rule(reply=Reply(text="ok"))])) as server:
        yield server


async def _chat_on(c: httpx.AsyncClient, cred: str) -> None:
    r = await c.patch(
        "/api/mcp/chat-tool", json={"enabled": True, "credential_id": cred, "model": MODEL}
    )
    assert r.status_code == 200, r.text


async def test_another_users_key_sees_nothing_of_yours(system: System, model: ModelServer) -> None:
    _, key_a = await system.new_user()
    _, key_b = await system.new_user()
    async with system.client(key_a) as a, system.client(key_b) as b:
        cred_a = await model_credential(a, model)
        cred_b = await model_credential(b, model)
        wid = await greeter(a)
        other = await greeter(a, "Second One")
        for w in (wid, other):
            await a.patch(f"/api/mcp/workflows/{w}", json={"mcp_enabled": True})
        await _chat_on(a, cred_a)
        await _chat_on(b, cred_b)
        cid = await conversation(a)
        await send(a, cid, "hello", cred_a)
        created = (await a.post("/api/mcp/servers", json={"name": "ops"})).json()
        sid, server_key = created["id"], created["key"]
        r = await a.put(f"/api/mcp/servers/{sid}/workflows", json={"workflow_ids": [wid]})
        assert r.status_code == 200, r.text

        # Chat API: another user's conversation is "not found", whatever the verb.
        assert (await b.get(f"/api/chats/{cid}")).status_code == 404
        assert (await b.get(f"/api/chats/{cid}/stream")).status_code == 404
        assert (await b.post(f"/api/chats/{cid}/cancel")).status_code == 404
        r = await b.post(
            f"/api/chats/{cid}/messages",
            json={"content": "hi", "credential_id": cred_b, "model": MODEL},
        )
        assert r.status_code == 404
        assert (await b.get("/api/chats")).json() == []
        # Named servers and workflow toggles.
        assert (await b.get("/api/mcp/servers")).json() == []
        assert (await b.get(f"/api/mcp/servers/{sid}")).status_code == 404
        assert (
            await b.patch(f"/api/mcp/workflows/{wid}", json={"mcp_enabled": False})
        ).status_code == 404
        assert (
            await b.put(f"/api/mcp/servers/{sid}/workflows", json={"workflow_ids": []})
        ).status_code == 404
        # A's credential is not B's to use.
        r = await b.post(
            f"/api/chats/{await conversation(b)}/messages",
            json={"content": "hi", "credential_id": cred_a, "model": MODEL},
        )
        assert r.status_code == 404

    async with streamable(f"{system.base_url}/api/mcp", key_b) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["heym_chat"]
        with pytest.raises(MCPError) as denied:
            await session.call_tool("greeter", {"text": "x"})
        assert denied.value.code == -32601
        foreign = await session.call_tool("heym_chat", {"message": "hi", "conversation_id": cid})
        assert foreign.is_error is True
        assert "not found" in foreign.content[0].text

    async with httpx.AsyncClient(base_url=system.base_url, timeout=30) as raw:
        # B's key on A's named server, the server's key on the default endpoint: refused.
        r = await raw.post(
            f"/api/mcp/servers/{sid}/mcp", json=INIT, headers={**HEADERS, "X-MCP-Key": key_b}
        )
        assert r.status_code == 404
        r = await raw.post("/api/mcp", json=INIT, headers={**HEADERS, "X-MCP-Key": server_key})
        assert r.status_code == 401
        r = await raw.post("/api/mcp", json=INIT, headers=HEADERS)
        assert r.status_code == 401
        r = await raw.post(f"/api/mcp?key={key_a}", json=INIT, headers=HEADERS)
        assert r.status_code == 400  # credentials in the URL are refused
        # A session only serves the credential (and server) that opened it.
        r = await raw.post("/api/mcp", json=INIT, headers={**HEADERS, "X-MCP-Key": key_a})
        assert r.status_code == 200
        session = {
            "mcp-session-id": r.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        for url, key in ((f"/api/mcp/servers/{sid}/mcp", server_key), ("/api/mcp", key_b)):
            r = await raw.post(url, json=listing, headers={**HEADERS, **session, "X-MCP-Key": key})
            assert r.status_code == 404, (url, r.status_code, r.text)

    # The named server's key reaches only its assigned workflows, and no chat until enabled.
    async with streamable(f"{system.base_url}/api/mcp/servers/{sid}/mcp", server_key) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["greeter"]
        with pytest.raises(MCPError):
            await session.call_tool("second_one", {"text": "x"})
        with pytest.raises(MCPError) as disabled:
            await session.call_tool("heym_chat", {"message": "hi"})
        assert disabled.value.code == -32601
        called = await session.call_tool("greeter", {"text": "Server"})
        assert json.loads(called.content[0].text) == {"result": {"result": "Hello Server"}}

    async with system.client(key_a) as a:
        r = await a.patch(
            f"/api/mcp/servers/{sid}/chat-tool",
            json={"enabled": True, "credential_id": cred_a, "model": MODEL},
        )
        assert r.status_code == 200, r.text
    async with streamable(f"{system.base_url}/api/mcp/servers/{sid}/mcp", server_key) as session:
        # A conversation of the default endpoint is not the named server's.
        hidden = await session.call_tool("heym_chat", {"message": "hi", "conversation_id": cid})
        assert hidden.is_error is True


async def test_bad_input_gets_clear_errors(system: System, model: ModelServer) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        await _chat_on(c, cred)
        cid = await conversation(c)
        for content, detail in (
            ("", "must not be empty"),
            ("   ", "must not be empty"),
            ("x" * 20_001, "20,000"),
        ):
            r = await c.post(
                f"/api/chats/{cid}/messages",
                json={"content": content, "credential_id": cred, "model": MODEL},
            )
            assert r.status_code == 400, r.text
            assert detail in r.json()["detail"]
        r = await c.post(
            f"/api/chats/{cid}/messages",
            json={"content": "x" * 20_000, "credential_id": cred, "model": MODEL},
        )
        assert r.status_code == 202
        r = await c.post(
            f"/api/chats/{cid}/messages",
            json={"content": "hi", "credential_id": cred, "model": MODEL, "bogus": 1},
        )
        assert r.status_code == 400
        r = await c.post(
            f"/api/chats/{cid}/messages",
            json={"content": "hi", "credential_id": "nope", "model": MODEL},
        )
        assert r.status_code == 404
        r = await c.post(
            f"/api/chats/{cid}/messages",
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 400
        assert (await c.get("/api/chats/not-a-uuid")).status_code == 404
        assert (
            await c.post("/api/chats/not-a-uuid/messages", json={"content": "x"})
        ).status_code == 404
        r = await c.patch(
            "/api/mcp/chat-tool", json={"credential_id": "00000000-0000-0000-0000-000000000000"}
        )
        assert r.status_code == 404
        r = await c.patch("/api/mcp/chat-tool", json={"enabled": "yes"})
        assert r.status_code == 400
        r = await c.patch("/api/mcp/chat-tool", json={"credential_id": None})
        assert r.json()["credential_id"] is None

    async with streamable(f"{system.base_url}/api/mcp", key) as session:
        # With no credential on the surface and no preferred model, the tool says so.
        unset = await session.call_tool("heym_chat", {"message": "hi"})
        assert unset.is_error is True
        assert "No model is configured" in unset.content[0].text

    async with system.client(key) as c:
        await _chat_on(c, cred)
    async with streamable(f"{system.base_url}/api/mcp", key) as session:
        for args, text in (
            ({"message": ""}, "must not be empty"),
            ({"message": "x" * 20_001}, "20,000"),
            ({"message": "hi", "conversation_id": "not-a-uuid"}, "must be a UUID"),
            (
                {"message": "hi", "conversation_id": "00000000-0000-0000-0000-000000000000"},
                "not found",
            ),
            ({"message": 42}, "must not be empty"),
        ):
            result = await session.call_tool("heym_chat", args)
            assert result.is_error is True, args
            assert text in result.content[0].text, (args, result.content[0].text)
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("no_such_tool", {})
        assert unknown.value.code == -32601

    async with httpx.AsyncClient(
        base_url=system.base_url, timeout=30, headers={**HEADERS, "X-MCP-Key": key}
    ) as raw:
        r = await raw.post("/api/mcp", content=b"{this is not json")
        assert r.status_code == 400
        assert r.json()["error"]["code"] == -32700
        r = await raw.post("/api/mcp", content=b'[1, 2, "three"]')
        assert 400 <= r.status_code < 500
        r = await raw.post("/api/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert 400 <= r.status_code < 500  # no session: initialize first
        r = await raw.post("/api/mcp", json=INIT)
        assert r.status_code == 200
        session_id = r.headers["mcp-session-id"]
        for body in (
            {"jsonrpc": "2.0", "id": 2, "method": "no/such/method"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": "not an object"},
            {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {}}},
        ):
            r = await raw.post(
                "/api/mcp",
                json=body,
                headers={"mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"},
            )
            assert r.status_code < 500, (body, r.status_code, r.text)
            assert "error" in _payload(r.text), (body, r.text)


def _payload(text: str) -> dict[str, object]:
    found = re.search(r"^data: (.*)$", text, re.MULTILINE)
    return json.loads(found.group(1) if found else text)


async def test_heym_chat_refuses_a_second_message_while_a_turn_runs(
    system: System, model: ModelServer
) -> None:
    _, key = await system.new_user()
    model.script = Script(
        rules=[
            Rule(when=Match(last_user_contains="slow"), reply=Reply(text="done slowly", delay=1.5)),
            Rule(reply=Reply(text="quick")),
        ]
    )
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        await _chat_on(c, cred)
    async with (
        streamable(f"{system.base_url}/api/mcp", key) as first,
        streamable(f"{system.base_url}/api/mcp", key) as second,
    ):
        started = await first.call_tool("heym_chat", {"message": "quick hello"})
        cid = re.search(r"conversation_id: (\S+)", started.content[0].text).group(1)  # type: ignore[union-attr]
        slow = asyncio.create_task(
            first.call_tool("heym_chat", {"message": "slow please", "conversation_id": cid})
        )
        await eventually(
            lambda: any(
                "slow please" in (q.body["messages"][-1].get("content") or "")
                for q in model.chat_requests
            )
        )
        refused = await second.call_tool("heym_chat", {"message": "me too", "conversation_id": cid})
        assert refused.is_error is True
        assert "already running" in refused.content[0].text
        assert (await slow).content[0].text.startswith("done slowly")
