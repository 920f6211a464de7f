"""Heym parity over REST: test mode in child runs, SSE sequence numbers, sub-workflow records,
Heym's error sentences."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest

from libs.testing.eventually import eventually
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


def n(nid: str, ntype: str, label: str, **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": 0, "y": 0},
        "data": {"label": label, **data},
    }


def e(source: str, target: str) -> dict[str, Any]:
    return {"id": f"{source}-{target}", "source": source, "target": target}


async def create(c: httpx.AsyncClient, nodes: list[Any], edges: list[Any], **extra: Any) -> str:
    body = {"name": f"wf-{uuid.uuid4().hex[:6]}", "nodes": nodes, "edges": edges, **extra}
    r = await c.post("/api/workflows", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def parent_and_child(c: httpx.AsyncClient) -> tuple[str, str]:
    child = await create(
        c,
        [
            n("in", "textInput", "childIn"),
            n(
                "m",
                "jsonOutputMapper",
                "childOut",
                mappings=[{"key": "up", "value": "$childIn.text.upper()"}],
            ),
        ],
        [e("in", "m")],
    )
    parent = await create(
        c,
        [
            n("in", "textInput", "req"),
            n("x", "execute", "callChild", executeWorkflowId=child),
            n("o", "output", "out", message="$callChild.outputs.up"),
        ],
        [e("in", "x"), e("x", "o")],
        sse_enabled=True,
    )
    return parent, child


async def sse(c: httpx.AsyncClient, url: str, body: Any) -> list[dict[str, Any]]:
    frames = []
    async with c.stream("POST", url, json=body, headers={"X-Simple-Response": "false"}) as r:
        assert r.status_code == 200, await r.aread()
        async for line in r.aiter_lines():
            if line.startswith("data:"):
                frames.append(json.loads(line[5:]))
    return frames


async def test_test_runs_pass_test_mode_to_child_runs(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        parent, child = await parent_and_child(c)
        r = await c.post(
            f"/api/workflows/{parent}/execute", json={"inputs": {"text": "t"}, "test_run": True}
        )
        assert r.json() == {"out": {"result": "T"}}
        frames = await sse(
            c,
            f"/api/workflows/{parent}/execute/stream",
            {"inputs": {"text": "s"}, "test_run": True},
        )
        assert frames[-1]["status"] == "success"
        # A marker run of the child, recorded after the test runs' children would have been.
        marker = await c.post(f"/api/workflows/{child}/execute", json={"text": "marker"})
        assert marker.status_code == 200

        async def only_the_marker() -> list[dict[str, Any]]:
            body = (await c.get(f"/api/workflows/{child}/history")).json()
            assert body["total"] >= 1, body
            return list(body["items"])

        items = await eventually(only_the_marker, timeout=15)
        assert [i["trigger_source"] for i in items] == ["API"]
        assert (await c.get(f"/api/workflows/{parent}/history")).json()["total"] == 0


async def test_node_result_sequence_counts_from_one_within_each_run(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        parent, _ = await parent_and_child(c)
        frames = await sse(c, f"/api/workflows/{parent}/execute/stream", {"text": "a"})
        done = [f for f in frames if f["type"] == "node_complete"]
        assert [f["metadata"]["sequence"] for f in done] == [1, 2, 3]
        assert [f["metadata"]["sequence"] for f in frames[-1]["node_results"]] == [1, 2, 3]
        r = await c.post(
            f"/api/workflows/{parent}/execute",
            json={"text": "b"},
            headers={"X-Simple-Response": "false"},
        )
        body = r.json()
        assert [x["metadata"]["sequence"] for x in body["node_results"]] == [1, 2, 3]
        assert all(x["metadata"]["stream_sequence"] > 3 for x in body["node_results"])

        async def recorded() -> dict[str, Any]:
            entry = await c.get(f"/api/workflows/{parent}/history/{body['execution_history_id']}")
            assert entry.status_code == 200
            assert entry.json()["status"] == "success"  # projected up to the run's end
            return dict(entry.json())

        entry = await eventually(recorded, timeout=15)
        assert [x["metadata"]["sequence"] for x in entry["node_results"]] == [1, 2, 3]


async def test_sub_workflow_executions_are_reported(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        parent, child = await parent_and_child(c)
        r = await c.post(
            f"/api/workflows/{parent}/execute",
            json={"text": "hi"},
            headers={"X-Simple-Response": "false"},
        )
        (sub,) = r.json()["sub_workflow_executions"]
        assert sub["workflow_id"] == child
        assert sub["status"] == "success"
        assert sub["outputs"] == {"up": "HI"}
        assert sub["inputs"]["body"]["text"] == "hi"
        assert sub["trigger_source"] == "SUB_WORKFLOW"
        assert sub["workflow_name"].startswith("wf-")
        assert [x["node_label"] for x in sub["node_results"]] == ["childIn", "childOut"]
        assert sub["execution_time_ms"] >= 0
        frames = await sse(c, f"/api/workflows/{parent}/execute/stream", {"text": "yo"})
        (sub,) = frames[-1]["sub_workflow_executions"]
        assert (sub["workflow_id"], sub["outputs"]) == (child, {"up": "YO"})


async def test_heym_error_sentences(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = await create(c, [n("in", "textInput", "req")], [])
        r = await c.post(f"/api/workflows/{wid}/execute/stream", json={})
        assert r.status_code == 400
        assert r.json()["detail"] == "SSE streaming is disabled for this workflow"


async def test_final_output_frames_carry_heyms_fields(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = await create(
            c,
            [
                n("in", "textInput", "req"),
                n("o", "output", "early", message="$req.text", allowDownstream=True),
                n("m", "jsonOutputMapper", "mapped", mappings=[{"key": "k", "value": "$req.text"}]),
            ],
            [e("in", "o"), e("o", "m")],
            sse_enabled=True,
        )
        frames = await sse(c, f"/api/workflows/{wid}/execute/stream", {"text": "v"})
        finals = [f for f in frames if f["type"] == "final_output"]
        assert [(f["node_label"], f["node_type"], f["output"]) for f in finals] == [
            ("early", "output", {"result": "v"}),
            ("mapped", "jsonOutputMapper", {"k": "v"}),
        ]
        assert all(f["execution_time_ms"] >= 0 for f in finals)


async def test_history_entry_stream_follows_a_run_until_it_ends(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = await create(
            c, [n("in", "textInput", "req"), n("w", "wait", "pause", duration=2500)], [e("in", "w")]
        )
        running = asyncio.create_task(c.post(f"/api/workflows/{wid}/execute", json={}))

        async def listed() -> str:
            items = (await c.get(f"/api/workflows/{wid}/history")).json()["items"]
            assert items, items
            return str(items[0]["id"])

        entry = await eventually(listed, timeout=15)
        frames = []
        async with c.stream("GET", f"/api/workflows/{wid}/history/{entry}/stream") as r:
            assert r.status_code == 200
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    frames.append(json.loads(line[5:]))
        await running
        assert frames[-1] == {"type": "done"}
        updates = [f["entry"]["status"] for f in frames if f["type"] == "history_update"]
        assert updates[0] == "running"
        assert updates[-1] == "success"
        r = await c.get(f"/api/workflows/{wid}/history/nope/stream")
        assert r.status_code == 404
