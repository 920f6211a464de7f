"""Who may run a workflow and how often: execution tokens (auth_type jwt), the per-workflow rate
limit and the response cache."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from libs.testing.eventually import eventually
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


def echo_workflow(**settings: Any) -> dict[str, Any]:
    return {
        "name": f"echo-{uuid.uuid4().hex[:6]}",
        "nodes": [
            {"id": "in", "type": "textInput", "data": {"label": "req"}},
            {
                "id": "s",
                "type": "set",
                "data": {
                    "label": "echo",
                    "mappings": [
                        {"key": "said", "value": "$req.text"},
                        {"key": "nonce", "value": "$UUID"},
                    ],
                },
            },
        ],
        "edges": [{"id": "e", "source": "in", "target": "s"}],
        **settings,
    }


async def test_execution_tokens_run_jwt_workflows_until_revoked(system: System) -> None:
    _, key = await system.new_user()
    _, other_key = await system.new_user()
    async with (
        system.client(key) as c,
        system.client(other_key) as other,
        system.client() as anon,
    ):
        wid = (await c.post("/api/workflows", json=echo_workflow(auth_type="jwt"))).json()["id"]
        second = (await c.post("/api/workflows", json=echo_workflow())).json()["id"]
        assert (await anon.post(f"/api/workflows/{wid}/execute", json={})).status_code == 401
        r = await c.post(f"/api/workflows/{wid}/execution-tokens", json={"name": "ci"})
        assert r.status_code == 201, r.text
        issued = r.json()
        token = issued["token"]
        assert issued["scope"] == "workflow:execute"

        async def run(wf: str, headers: dict[str, str]) -> httpx.Response:
            return await anon.post(
                f"/api/workflows/{wf}/execute", json={"text": "t"}, headers=headers
            )

        assert (await run(wid, {"X-Execution-Token": token})).json()["echo"]["said"] == "t"
        assert (await run(wid, {"Authorization": f"Bearer {token}"})).status_code == 200
        # scoped to its workflow; a tampered token is refused
        assert (await run(second, {"X-Execution-Token": token})).status_code == 401
        assert (await run(wid, {"X-Execution-Token": token[:-2] + "xx"})).status_code == 401
        listed = (await c.get(f"/api/workflows/{wid}/execution-tokens")).json()
        assert [t["id"] for t in listed] == [issued["id"]]
        assert "token" not in listed[0]
        assert (await other.get(f"/api/workflows/{wid}/execution-tokens")).status_code in (403, 404)
        r = await other.delete(f"/api/workflows/{wid}/execution-tokens/{issued['id']}")
        assert r.status_code in (403, 404)
        r = await c.delete(f"/api/workflows/{wid}/execution-tokens/{issued['id']}")
        assert r.status_code == 204
        assert (await run(wid, {"X-Execution-Token": token})).status_code == 401
        short = (
            await c.post(f"/api/workflows/{wid}/execution-tokens", json={"expires_in_seconds": 1})
        ).json()["token"]

        async def expired() -> bool:
            return (await run(wid, {"X-Execution-Token": short})).status_code == 401

        await eventually(expired, timeout=5, interval=0.2)
        r = await c.post(f"/api/workflows/{wid}/execution-tokens", json={"expires_in_seconds": 0})
        assert r.status_code == 400
