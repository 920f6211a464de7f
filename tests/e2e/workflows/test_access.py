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


async def test_rate_limit_answers_429_with_headers_and_records_it(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        settings = {"rate_limit_requests": 2, "rate_limit_window_seconds": 30}
        wid = (await c.post("/api/workflows", json=echo_workflow(**settings))).json()["id"]
        first = await c.post(f"/api/workflows/{wid}/execute", json={"text": "1"})
        assert first.status_code == 200
        assert first.headers["X-RateLimit-Limit"] == "2"
        assert first.headers["X-RateLimit-Remaining"] == "1"
        assert (
            await c.post(f"/api/workflows/{wid}/execute", json={"text": "2"})
        ).status_code == 200
        r = await c.post(f"/api/workflows/{wid}/execute", json={"text": "3"})
        assert r.status_code == 429
        assert r.headers["X-RateLimit-Remaining"] == "0"
        assert 1 <= int(r.headers["Retry-After"]) <= 30
        assert int(r.headers["X-RateLimit-Reset"]) > 0
        # test runs are not limited
        r = await c.post(f"/api/workflows/{wid}/execute", json={"inputs": {}, "test_run": True})
        assert r.status_code == 200
        # the limit is per workflow
        other = (await c.post("/api/workflows", json=echo_workflow(**settings))).json()["id"]
        assert (await c.post(f"/api/workflows/{other}/execute", json={})).status_code == 200

        async def recorded() -> list[str]:
            items = (await c.get(f"/api/workflows/{wid}/history")).json()["items"]
            statuses = sorted(i["status"] for i in items)
            assert statuses == ["rate_limited", "success", "success"], statuses
            return statuses

        await eventually(recorded, timeout=15)
        r = await c.get("/api/workflows/history/all", params={"status": "rate_limited"})
        assert r.json()["total"] == 1
        r = await c.put(f"/api/workflows/{wid}", json={"rate_limit_requests": "many"})
        assert r.status_code == 422


async def test_response_cache_answers_repeated_requests_and_records_it(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = (await c.post("/api/workflows", json=echo_workflow(cache_ttl_seconds=60))).json()[
            "id"
        ]
        url = f"/api/workflows/{wid}/execute"
        first = (await c.post(url, json={"text": "a"})).json()
        again = await c.post(url, json={"text": "a"})
        assert again.json() == first  # the same $UUID nonce: served from the cache
        assert again.headers["X-Cache"] == "HIT"
        other = (await c.post(url, json={"text": "b"})).json()
        assert other["echo"]["nonce"] != first["echo"]["nonce"]
        assert (await c.post(url, json={"text": "a"}, params={"x": "1"})).json() != first
        # test runs bypass the cache
        test = (await c.post(url, json={"inputs": {"text": "a"}, "test_run": True})).json()
        assert test["echo"]["nonce"] != first["echo"]["nonce"]
        # an edit makes a new version: nothing cached for the old one is served
        await c.put(f"/api/workflows/{wid}", json={"description": "edited"})
        assert (await c.post(url, json={"text": "a"})).json() != first

        async def recorded() -> list[str]:
            items = (await c.get(f"/api/workflows/{wid}/history")).json()["items"]
            statuses = sorted(i["status"] for i in items)
            assert statuses == ["cached"] + ["success"] * 4, statuses
            return statuses

        await eventually(recorded, timeout=15)
        hit = (await c.get(f"/api/workflows/{wid}/history", params={"status": "cached"})).json()
        entry = (await c.get(f"/api/workflows/{wid}/history/{hit['items'][0]['id']}")).json()
        assert entry["outputs"] == first
