"""Issue #7 reproductions over REST: each request that hurt the system once, as a test."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from libs.testing.eventually import eventually
from tests.e2e.system import System
from tests.e2e.workflows.test_api import n, simple_workflow

pytestmark = pytest.mark.e2e


async def test_a_nul_character_does_not_stop_history(system: System) -> None:
    # Item 1: Postgres jsonb rejects \u0000; the projector retried that batch for ever.
    _, key = await system.new_user()
    async with system.client(key) as c:
        open_wf = {**simple_workflow("nul"), "auth_type": "anonymous"}
        wid = (await c.post("/api/workflows", json=open_wf)).json()["id"]
        async with system.client() as anon:
            r = await anon.post(f"/api/workflows/{wid}/execute", json={"text": "a\u0000b"})
        assert r.status_code == 200, r.text
        assert r.json() == {"echo": {"said": "a\u0000b"}}
        r = await c.post(f"/api/workflows/{wid}/execute", json={"text": "after"})
        assert r.status_code == 200

        async def both_recorded() -> list[dict[str, Any]]:
            body = (await c.get(f"/api/workflows/{wid}/history")).json()
            assert body["total"] == 2, body
            return list(body["items"])

        items = await eventually(both_recorded, timeout=20)
        first = (await c.get(f"/api/workflows/{wid}/history/{items[1]['id']}")).json()
        assert first["inputs"]["body"] == {"text": "a\ufffdb"}


async def test_changing_where_a_key_is_sent_needs_the_key(system: System) -> None:
    # Item 6: a PUT with a new base_url kept the stored key and sent it to the new host.
    _, key = await system.new_user()
    async with system.client(key) as c:
        created = await c.post(
            "/api/credentials",
            json={
                "name": "model",
                "type": "custom",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "sk-keep-me-secret-123456",
            },
        )
        cid = created.json()["id"]
        r = await c.put(f"/api/credentials/{cid}", json={"base_url": "http://elsewhere.test/"})
        assert r.status_code == 422, r.text
        assert "api_key" in r.text
        assert (await c.get(f"/api/credentials/{cid}")).json()["base_url"] == (
            "http://127.0.0.1:9/v1"
        )
        r = await c.put(f"/api/credentials/{cid}", json={"name": "renamed"})
        assert r.status_code == 200  # renaming needs no key
        r = await c.put(
            f"/api/credentials/{cid}",
            json={"base_url": "http://elsewhere.test/", "api_key": "sk-new-key-for-new-host"},
        )
        assert r.status_code == 200
        assert r.json()["base_url"] == "http://elsewhere.test/"


async def test_only_the_owner_chooses_test_mode_or_editor_behaviour(system: System) -> None:
    # Item 10: X-Trigger-Source: Canvas streamed an SSE-off workflow; test_run skipped history.
    _, key = await system.new_user()
    _, other_key = await system.new_user()
    async with system.client(key) as c:
        wf = {**simple_workflow("public"), "auth_type": "anonymous"}
        wf["nodes"][1]["data"]["pinnedData"] = {"said": "pinned"}
        wid = (await c.post("/api/workflows", json=wf)).json()["id"]
    async with system.client() as anon, system.client(other_key) as other:
        r = await anon.post(
            f"/api/workflows/{wid}/execute/stream",
            json={"text": "x"},
            headers={"X-Trigger-Source": "Canvas"},
        )
        assert r.status_code == 400
        assert "SSE streaming is disabled" in r.text
        r = await anon.post(
            f"/api/workflows/{wid}/execute", params={"test_run": "true"}, json={"text": "q"}
        )
        assert r.json() == {"echo": {"said": "q"}}  # not the pinned data of a test run
        r = await other.post(
            f"/api/workflows/{wid}/execute", json={"inputs": {"text": "b"}, "test_run": True}
        )
        # A non-owner's body is data: the wrapper keys are not instructions.
        assert r.json() == {"echo": {"said": None}} or "pinned" not in r.text
    async with system.client(key) as c:

        async def recorded() -> dict[str, Any]:
            body = (await c.get(f"/api/workflows/{wid}/history")).json()
            assert body["total"] == 2, body
            return dict(body)

        history = await eventually(recorded, timeout=20)
        assert {i["trigger_source"] for i in history["items"]} == {"API"}
        # The owner still may.
        r = await c.post(
            f"/api/workflows/{wid}/execute", json={"inputs": {"text": "t"}, "test_run": True}
        )
        assert r.json() == {"echo": {"said": "pinned"}}


async def test_another_users_workflow_is_not_found(system: System) -> None:
    # Item 12: 403 "belongs to another user" told a stranger the id exists.
    _, key = await system.new_user()
    _, other_key = await system.new_user()
    async with system.client(key) as c:
        wid = (await c.post("/api/workflows", json=simple_workflow())).json()["id"]
    unknown = str(uuid.uuid4())
    async with system.client(other_key) as other:
        for target in (wid, unknown):
            answers = [
                await other.get(f"/api/workflows/{target}"),
                await other.put(f"/api/workflows/{target}", json=simple_workflow()),
                await other.get(f"/api/workflows/{target}/versions"),
                await other.get(f"/api/workflows/{target}/history"),
                await other.post(f"/api/workflows/{target}/execute", json={}),
                await other.post(f"/api/workflows/{target}/execute/stream", json={}),
                await other.delete(f"/api/workflows/{target}"),
            ]
            assert [a.status_code for a in answers] == [404] * len(answers), target
            assert all("another user" not in a.text for a in answers)
            assert len({a.json()["detail"].replace(target, "ID") for a in answers[:1]}) == 1


def _chain(count: int) -> dict[str, Any]:
    nodes = [n("in", "textInput", "start")]
    edges = []
    for i in range(count - 1):
        nodes.append(n(f"n{i}", "set", f"s{i}", mappings=[]))
        edges.append({"id": f"e{i}", "source": f"n{i - 1}" if i else "in", "target": f"n{i}"})
    return {"name": "huge", "nodes": nodes, "edges": edges}


def _deep(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


BAD_INPUTS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("deep JSON, create workflow", "POST", "/api/workflows", {"content": _deep(1000)}),
    ("deep JSON, update workflow", "PUT", "/api/workflows/{wid}", {"content": _deep(1000)}),
    ("deep JSON, execute", "POST", "/api/workflows/{wid}/execute", {"content": _deep(1000)}),
    ("deep JSON, credentials", "POST", "/api/credentials", {"content": _deep(1000)}),
    ("deep JSON, preview", "POST", "/api/expressions/evaluate", {"content": _deep(1000)}),
    ("NUL in a workflow name", "POST", "/api/workflows", {"json": simple_workflow("a\x00b")}),
    (
        "NUL in a node label",
        "POST",
        "/api/workflows",
        {"json": {"name": "x", "nodes": [n("a", "set", "l\x00")], "edges": []}},
    ),
    (
        "NUL in a credential name",
        "POST",
        "/api/credentials",
        {"json": {"name": "a\x00", "type": "openai", "api_key": "sk-abcdefghijklmnop"}},
    ),
    ("NUL in a search filter", "GET", "/api/workflows/history/all?search=a%00b", {}),
    ("NUL in a status filter", "GET", "/api/traces?request_type=a%00b", {}),
    ("NUL in a path parameter", "GET", "/api/workflows/history/all/a%00b", {}),
    ("huge offset", "GET", "/api/workflows/history/all?offset=99999999999999999999", {}),
    ("huge trace offset", "GET", "/api/traces?offset=99999999999999999999", {}),
    # Found by the API fuzzer: a list where the description's text column expects a string.
    (
        "wrong types in a workflow",
        "POST",
        "/api/workflows",
        {"json": {"description": [None], "name": "0", "sse_enabled": []}},
    ),
    # Item 8: validation held every node's ancestors (570 MB, 4-6 s); now a documented limit.
    ("5,000-node workflow", "POST", "/api/workflows", {"json": _chain(5_000)}),
]


@pytest.mark.parametrize(
    ("what", "method", "path", "kwargs"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS]
)
async def test_bad_input_is_a_clear_4xx(
    system: System, what: str, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    # Item 11: each of these answered 500, unlogged.
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = (await c.post("/api/workflows", json=simple_workflow())).json()["id"]
        headers = {"Content-Type": "application/json"} if "content" in kwargs else {}
        r = await c.request(method, path.format(wid=wid), headers=headers, **kwargs)
    assert 400 <= r.status_code < 500, (what, r.status_code, r.text)


async def test_an_unencodable_expression_result_is_a_clear_answer(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        for expression in ("$10 ** 5000", "$float('nan')", "$'\\ud800'", "$1j"):
            r = await c.post("/api/expressions/evaluate", json={"expression": expression})
            assert r.status_code == 200, (expression, r.text)
            assert r.json()["error"] is not None or r.json()["result"] in (None, "\ufffd")


# About a second of evaluation: it ends at the step or time budget.
HEAVY = "$range(0, 100000).map(\"range(0, 100).map('item')\").length"


async def test_a_heavy_preview_does_not_hold_up_the_gateway(system: System) -> None:
    # Item 2: the preview evaluated on the gateway's event loop; nothing else was answered.
    _, key = await system.new_user()
    async with system.client(key) as c:
        preview = asyncio.create_task(
            c.post("/api/expressions/evaluate", json={"expression": HEAVY})
        )
        await asyncio.sleep(0.15)
        r = await c.get("/api/workflows")
        assert r.status_code == 200
        assert not preview.done()  # answered while the evaluation was still running
        answer = (await preview).json()
    assert "evaluation steps" in answer["error"] or "longer than" in answer["error"]


async def test_a_heavy_set_node_does_not_delay_another_users_run(system: System) -> None:
    # Item 2: a pure node evaluated on the scheduler's event loop delayed every other run.
    _, key = await system.new_user()
    _, other_key = await system.new_user()
    async with system.client(key) as c, system.client(other_key) as other:
        heavy_wf = simple_workflow("heavy")
        heavy_wf["nodes"][1]["data"]["mappings"] = [{"key": "n", "value": HEAVY}]
        heavy = (await c.post("/api/workflows", json=heavy_wf)).json()["id"]
        quick = (await other.post("/api/workflows", json=simple_workflow("quick"))).json()["id"]
        slow_run = asyncio.create_task(
            c.post(
                f"/api/workflows/{heavy}/execute",
                json={"text": "x"},
                headers={"X-Simple-Response": "false"},
            )
        )
        await asyncio.sleep(0.15)
        r = await other.post(f"/api/workflows/{quick}/execute", json={"text": "fast"})
        assert r.json() == {"echo": {"said": "fast"}}
        assert not slow_run.done()
        body = (await slow_run).json()
    assert body["status"] == "error"
    assert "evaluation steps" in str(body) or "longer than" in str(body)
