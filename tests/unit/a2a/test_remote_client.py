"""The A2A client's settings, response budget and origin-bound key, against real HTTP servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from libs.a2a.remote import RemoteAgent, agent_list_problems, config_problems, remote_agent
from services.tool_sandbox.a2a_client import Ask, RemoteAgentError, RemoteCall

Handler = Callable[[str, dict[str, str], bytes], tuple[int, str, bytes]]


class Server:
    """A loopback HTTP/1.1 server answering each request with `handler` (one per connection)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode()
            line, *rest = head.split("\r\n")
            headers = {k.lower(): v for k, _, v in (h.partition(": ") for h in rest if h)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            path = line.split(" ")[1]
            self.seen.append((path, headers))
            status, ctype, payload = self.handler(path, headers, body)
            writer.write(
                f"HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {len(payload)}"
                "\r\nconnection: close\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def card(url: str) -> bytes:
    return json.dumps(
        {
            "name": "Peer",
            "description": "a peer",
            "version": "1",
            "supportedInterfaces": [
                {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": False},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        }
    ).encode()


def completed(body: bytes) -> bytes:
    request = json.loads(body)
    task = {
        "id": "t1",
        "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "response", "parts": [{"text": "hi"}]}],
    }
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"task": task}}).encode()


@pytest.fixture
async def call() -> AsyncIterator[RemoteCall]:
    transport = httpx.AsyncHTTPTransport()
    yield RemoteCall(transport, max_response_bytes=64 * 1024)
    await transport.aclose()


def agent(url: str, **kw: Any) -> RemoteAgent:
    return remote_agent({"agentUrl": url, **kw})


async def test_a_card_over_the_response_budget_fails_the_call(call: RemoteCall) -> None:
    huge = b'{"name": "' + b"x" * 200_000 + b'"}'
    async with Server(lambda path, h, b: (200, "application/json", huge)) as server:
        with pytest.raises(RemoteAgentError, match="more than 65536 bytes"):
            await call(agent(server.url), Ask(text="hello"), None)


async def test_the_key_goes_only_to_the_agents_own_origin(call: RemoteCall) -> None:
    elsewhere = Server(lambda path, h, b: (200, "application/json", completed(b)))
    home = Server(lambda path, h, b: (200, "application/json", card(f"{elsewhere.url}/rpc")))
    async with elsewhere, home:
        out = await call(agent(home.url), Ask(text="hello"), "sekret-key-123456")
    assert out["text"] == "hi"
    assert out["state"] == "COMPLETED"
    assert home.seen[0][1]["x-mcp-key"] == "sekret-key-123456"
    (rpc,) = elsewhere.seen
    assert "x-mcp-key" not in rpc[1]
    assert "authorization" not in rpc[1]


async def test_bearer_header_and_a_card_url(call: RemoteCall) -> None:
    def answer(path: str, h: dict[str, str], b: bytes) -> tuple[int, str, bytes]:
        if path.endswith(".json"):
            return 200, "application/json", card(f"{server.url}/rpc")
        return 200, "application/json", completed(b)

    async with Server(answer) as server:
        peer = agent(f"{server.url}/agents/x/card.json", authHeader="Authorization")
        await call(peer, Ask(text="hello"), "sekret-key-123456")
    assert [path for path, _ in server.seen] == ["/agents/x/card.json", "/rpc"]
    assert all(h["authorization"] == "Bearer sekret-key-123456" for _, h in server.seen)


async def test_a_failed_task_fails_the_call(call: RemoteCall) -> None:
    def answer(path: str, h: dict[str, str], b: bytes) -> tuple[int, str, bytes]:
        if path.endswith(".json"):
            return 200, "application/json", card(f"{server.url}/rpc")
        task = {
            "id": "t9",
            "contextId": "c",
            "status": {
                "state": "TASK_STATE_FAILED",
                "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "boom"}]},
            },
        }
        rid = json.loads(b)["id"]
        return (
            200,
            "application/json",
            json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"task": task}}).encode(),
        )

    async with Server(answer) as server:
        with pytest.raises(RemoteAgentError, match="task t9 ended FAILED: boom"):
            await call(agent(server.url), Ask(text="hello"), None)


async def test_a_hanging_agent_is_bounded_by_the_timeout(call: RemoteCall) -> None:
    gate = asyncio.Event()

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await gate.wait()
        writer.close()

    server = await asyncio.start_server(hang, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        with pytest.raises(RemoteAgentError, match=r"did not finish within 0\.5s"):
            await call(agent(url, timeoutSeconds=0.5), Ask(text="hello"), None)
    finally:
        gate.set()
        server.close()


async def test_message_size_and_empty_message(call: RemoteCall) -> None:
    with pytest.raises(RemoteAgentError, match="at most 100000"):
        await call(agent("http://127.0.0.1:9"), Ask(text="x" * 100_001), None)
    with pytest.raises(RemoteAgentError, match="empty"):
        await call(agent("http://127.0.0.1:9"), Ask(text="  "), None)


def test_settings_problems() -> None:
    assert config_problems({"agentUrl": "https://peer.example/a2a"}) == []
    fields = dict(
        config_problems(
            {
                "agentUrl": "https://a:b@peer",
                "mode": "push",
                "authHeader": "Cookie",
                "timeoutSeconds": float("nan"),
                "credentialId": 3,
            }
        )
    )
    assert set(fields) == {"agentUrl", "mode", "authHeader", "timeoutSeconds", "credentialId"}
    assert agent_list_problems([{"name": "a b", "agentUrl": "http://x"}, {"name": "a-b"}]) == [
        "a2aAgents #1: another agent has the tool name 'a2a_a_b'",
        "a2aAgents #1: needs agentUrl: the remote agent's http(s) URL",
    ]
    assert agent("http://h:1/base/").card_location() == (
        "http://h:1/base",
        "/.well-known/agent-card.json",
    )
    assert agent("http://h/api/a2a/servers/s/agent-card.json").card_location() == (
        "http://h",
        "/api/a2a/servers/s/agent-card.json",
    )
