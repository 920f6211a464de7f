"""Global variables (`$global`, `isGlobal` variable nodes, the API) and `$credentials` with
every credential value masked in what a run records."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from contracts import subjects
from libs.eventlog import EventLog
from libs.testing import infra
from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

SECRET = "sk-live-0123456789abcdefSECRET"


def n(nid: str, ntype: str, label: str, **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": 0, "y": 0},
        "data": {"label": label, **data},
    }


def chain(*nodes: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"id": f"e{i}", "source": a["id"], "target": b["id"]}
        for i, (a, b) in enumerate(itertools.pairwise(nodes))
    ]


async def create(c: httpx.AsyncClient, nodes: list[dict[str, Any]], **extra: Any) -> str:
    body = {"name": f"g-{uuid.uuid4().hex[:6]}", "nodes": nodes, "edges": chain(*nodes), **extra}
    r = await c.post("/api/workflows", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def globals_of(c: httpx.AsyncClient) -> dict[str, Any]:
    return {g["name"]: g["value"] for g in (await c.get("/api/global-variables")).json()}


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with HttpTarget() as t:
        yield t


async def test_global_variables_api_and_global_in_expressions(system: System) -> None:
    _, key = await system.new_user()
    _, other_key = await system.new_user()
    async with system.client(key) as c, system.client(other_key) as other:
        r = await c.post("/api/global-variables", json={"name": "greeting", "value": "hello"})
        assert r.status_code == 201, r.text
        gid = r.json()["id"]
        assert (
            await c.post("/api/global-variables", json={"name": "greeting", "value": 1})
        ).status_code == 409
        assert (
            await c.post("/api/global-variables", json={"name": "a b", "value": 1})
        ).status_code == 400
        assert (await other.get(f"/api/global-variables/{gid}")).status_code == 404
        assert await globals_of(other) == {}
        wid = await create(
            c,
            [
                n("in", "textInput", "req"),
                n(
                    "s",
                    "set",
                    "say",
                    mappings=[{"key": "msg", "value": "$global.greeting $req.text"}],
                ),
            ],
        )
        r = await c.post(f"/api/workflows/{wid}/execute", json={"text": "Ada"})
        assert r.json() == {"say": {"msg": "hello Ada"}}
        r = await c.put(f"/api/global-variables/{gid}", json={"value": "hi"})
        assert r.json()["value"] == "hi"
        r = await c.post(f"/api/workflows/{wid}/execute", json={"text": "Bo"})
        assert r.json() == {"say": {"msg": "hi Bo"}}
        assert (await c.delete(f"/api/global-variables/{gid}")).status_code == 204
        assert await globals_of(c) == {}


async def test_is_global_variables_persist_after_runs_including_sub_workflows(
    system: System,
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        await c.post("/api/global-variables", json={"name": "counter", "value": 0})
        child = await create(
            c,
            [
                n("in", "textInput", "childIn"),
                n(
                    "v",
                    "variable",
                    "mark",
                    variableName="fromChild",
                    variableValue="$childIn.text",
                    isGlobal=True,
                ),
                n("s", "set", "seen", mappings=[{"key": "fromParent", "value": "$global.local"}]),
            ],
        )
        parent = await create(
            c,
            [
                n("in", "textInput", "req"),
                n("l", "variable", "local", variableName="local", variableValue="run-only"),
                n(
                    "v",
                    "variable",
                    "count",
                    variableName="counter",
                    variableValue="$global.counter + 1",
                    variableType="number",
                    isGlobal=True,
                ),
                n(
                    "x",
                    "execute",
                    "callChild",
                    executeWorkflowId=child,
                    executeInputMappings=[{"key": "text", "value": "$req.text"}],
                ),
                n("o", "output", "out", message="$callChild.outputs.seen.fromParent"),
            ],
        )
        r = await c.post(f"/api/workflows/{parent}/execute", json={"text": "one"})
        assert r.json() == {"out": {"result": "run-only"}}  # the child sees the parent's $vars

        async def persisted() -> dict[str, Any]:
            found = await globals_of(c)
            assert found.get("counter") == 1, found
            return found

        found = await eventually(persisted, timeout=15)
        assert found["fromChild"] == "one"
        assert "local" not in found  # not isGlobal: run-local only
        await c.post(f"/api/workflows/{parent}/execute", json={"text": "two"})

        async def counted_twice() -> dict[str, Any]:
            found = await globals_of(c)
            assert found.get("counter") == 2, found
            return found

        assert (await eventually(counted_twice, timeout=15))["fromChild"] == "two"


async def test_credentials_in_expressions_are_masked_everywhere(
    system: System, target: HttpTarget
) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        r = await c.post(
            "/api/credentials",
            json={"name": "svc", "type": "custom", "base_url": target.url, "api_key": SECRET},
        )
        assert r.status_code == 201, r.text
        wid = await create(
            c,
            [
                n("in", "textInput", "req"),
                n(
                    "h",
                    "http",
                    "call",
                    curl=f'curl -H "Authorization: Bearer $credentials.svc" {target.url}/echo',
                ),
                n("s", "set", "leak", mappings=[{"key": "key", "value": "$credentials.svc"}]),
            ],
            sse_enabled=True,
        )
        r = await c.post(
            f"/api/workflows/{wid}/execute", json={}, headers={"X-Simple-Response": "false"}
        )
        body = r.json()
        assert body["status"] == "success", body
        # the secret was used where it was needed ...
        assert target.requests[-1]["headers"]["authorization"] == f"Bearer {SECRET}"
        # ... and nothing the run recorded or answered holds it
        masked = SECRET[:7] + "**"
        assert body["outputs"] == {"leak": {"key": masked}}
        assert SECRET not in r.text
        assert masked in str(body["node_results"])
        frames = await c.post(
            f"/api/workflows/{wid}/execute/stream", json={}, headers={"X-Simple-Response": "false"}
        )
        assert SECRET not in frames.text
        assert masked in frames.text
        run_id = body["execution_history_id"]

        async def recorded() -> dict[str, Any]:
            entry = await c.get(f"/api/workflows/{wid}/history/{run_id}")
            assert entry.status_code == 200
            assert entry.json()["status"] == "success"  # projected up to the run's end
            return dict(entry.json())

        entry = await eventually(recorded, timeout=15)
        assert SECRET not in str(entry)
        r = await c.post("/api/expressions/evaluate", json={"expression": "$credentials.svc"})
        assert r.json()["result"] == masked
        async with infra.connected(system.nats_url) as nc:
            events = await EventLog(nc).read(subjects.run_everything(run_id))
        assert events
        assert all(SECRET not in repr(e.event) for e in events)
