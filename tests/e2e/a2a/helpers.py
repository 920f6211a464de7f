"""Driving Heym's A2A server as another agent would: with the official a2a-sdk client."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest, StreamResponse, Task

from libs.testing.model_server import ModelServer
from tests.e2e.agents.helpers import model_credential
from tests.e2e.assistant.helpers import MODEL
from tests.e2e.system import System

VERSION = {"A2A-Version": "1.0"}


@dataclass
class A2AUser:
    user_id: str
    key: str
    credential_id: str


async def a2a_user(system: System, model: ModelServer) -> A2AUser:
    """A user of its own with the Heym Agent and A2A on for the default server."""
    user_id, key = await system.new_user()
    async with system.client(key) as c:
        cred = await model_credential(c, model)
        r = await c.patch(
            "/api/a2a/settings", json={"enabled": True, "credential_id": cred, "model": MODEL}
        )
        assert r.status_code == 200, r.text
        assert r.json()["enabled"] is True
    return A2AUser(user_id, key, cred)


@contextlib.asynccontextmanager
async def sdk_client(
    base_url: str, key: str, *, card_path: str | None = None, streaming: bool = False
) -> AsyncIterator[tuple[Client, AgentCard]]:
    http = httpx.AsyncClient(headers={"X-MCP-Key": key}, timeout=httpx.Timeout(30, read=120))
    try:
        resolver = A2ACardResolver(http, base_url)
        card = await (
            resolver.get_agent_card(relative_card_path=card_path)
            if card_path
            else resolver.get_agent_card()
        )
        yield ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card), card
    finally:
        await http.aclose()


def user_message(
    text: str, *, task_id: str = "", context_id: str = "", message_id: str = ""
) -> Message:
    msg = Message(
        message_id=message_id or str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)]
    )
    if task_id:
        msg.task_id = task_id
    if context_id:
        msg.context_id = context_id
    return msg


async def send(client: Client, message: Message, **config: Any) -> list[StreamResponse]:
    request = SendMessageRequest(message=message)
    for key, value in config.items():
        setattr(request.configuration, key, value)
    return [ev async for ev in client.send_message(request)]


def last_task(events: list[StreamResponse]) -> Task:
    tasks = [ev.task for ev in events if ev.HasField("task")]
    assert tasks, events
    return tasks[-1]


async def rpc(
    c: httpx.AsyncClient,
    method: str,
    params: dict[str, Any],
    *,
    path: str = "/api/a2a",
    headers: dict[str, str] | None = None,
    request_id: Any = 1,
) -> dict[str, Any]:
    r = await c.post(
        path,
        json={"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
        headers={**VERSION, **(headers or {})},
    )
    assert r.status_code == 200, r.text
    return dict(r.json())
