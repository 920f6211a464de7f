"""Driving the Heym Agent like a client: conversations, messages, the turn's SSE stream."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.e2e.agents.helpers import e, n

MODEL = "chat-model"


async def conversation(c: httpx.AsyncClient) -> str:
    r = await c.post("/api/chats", json={})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def stream(c: httpx.AsyncClient, cid: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Every frame of the conversation's latest turn until `done` (replay, then live)."""
    frames: list[dict[str, Any]] = []
    async with c.stream("GET", f"/api/chats/{cid}/stream", timeout=timeout) as r:
        assert r.status_code == 200, await r.aread()
        async for line in r.aiter_lines():
            if line.startswith("data:"):
                frame = json.loads(line[5:].strip())
                frames.append(frame)
                if frame["type"] == "done":
                    break
    return frames


async def send(
    c: httpx.AsyncClient, cid: str, text: str, cred: str, **extra: Any
) -> dict[str, Any]:
    r = await c.post(
        f"/api/chats/{cid}/messages",
        json={"content": text, "credential_id": cred, "model": MODEL, **extra},
    )
    assert r.status_code == 202, r.text
    return dict(r.json())


async def turn(
    c: httpx.AsyncClient, cid: str, text: str, cred: str, **extra: Any
) -> list[dict[str, Any]]:
    sent = await send(c, cid, text, cred, **extra)
    assert sent["status"] == "started", sent
    return await stream(c, cid)


def of(frames: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [f for f in frames if f["type"] == kind]


def reply(frames: list[dict[str, Any]]) -> str:
    (content,) = of(frames, "content")
    return str(content["text"])


async def greeter(c: httpx.AsyncClient, name: str = "Greeter") -> str:
    nodes = [
        n("in", "textInput", "userInput"),
        n("s", "set", "greet", mappings=[{"key": "msg", "value": "Hello $userInput.text"}]),
        n("o", "output", "result", message="$greet.msg"),
    ]
    r = await c.post(
        "/api/workflows",
        json={
            "name": name,
            "description": "Greets someone",
            "nodes": nodes,
            "edges": [e("in", "s"), e("s", "o")],
        },
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])
