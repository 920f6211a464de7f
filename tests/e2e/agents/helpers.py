"""Building blocks for agent tests: a credential pointing at the scripted model server, nodes."""

from __future__ import annotations

from typing import Any

import httpx

from libs.testing.model_server import ModelServer


async def model_credential(
    c: httpx.AsyncClient, server: ModelServer, name: str = "scripted"
) -> str:
    r = await c.post(
        "/api/credentials",
        json={
            "name": name,
            "type": "custom",
            "base_url": server.base_url,
            "api_key": "sk-test-not-a-real-key-1234",
        },
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def n(nid: str, ntype: str, label: str, **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": 0, "y": 0},
        "data": {"label": label, **data},
    }


def e(
    source: str, target: str, *, source_handle: str | None = None, target_handle: str | None = None
) -> dict[str, Any]:
    edge: dict[str, Any] = {
        "id": f"{source}-{target}-{target_handle}",
        "source": source,
        "target": target,
    }
    if source_handle:
        edge["sourceHandle"] = source_handle
    if target_handle:
        edge["targetHandle"] = target_handle
    return edge


def agent(nid: str, label: str, cred: str, **data: Any) -> dict[str, Any]:
    return n(nid, "agent", label, credentialId=cred, model=data.pop("model", "test-model"), **data)


async def create(
    c: httpx.AsyncClient, nodes: list[dict[str, Any]], edges: list[dict[str, Any]], **extra: Any
) -> str:
    r = await c.post(
        "/api/workflows", json={"name": "agent-test", "nodes": nodes, "edges": edges, **extra}
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])
