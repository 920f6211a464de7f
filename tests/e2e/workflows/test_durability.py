"""Runs survive the services: parallel branches, kill -9 of the scheduler, restarts during a
durable wait, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from contracts.nodes import NodeCompleted
from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


def n(nid: str, ntype: str, label: str, **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": 0, "y": 0},
        "data": {"label": label, **data},
    }


def e(source: str, target: str, handle: str | None = None) -> dict[str, Any]:
    edge = {"id": f"{source}-{target}", "source": source, "target": target}
    if handle:
        edge["sourceHandle"] = handle
    return edge


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with HttpTarget() as t:
        yield t


async def create(
    c: httpx.AsyncClient, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]
) -> str:
    r = await c.post(
        "/api/workflows",
        json={"name": f"wf-{uuid.uuid4().hex[:6]}", "nodes": nodes, "edges": edges},
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def history(c: httpx.AsyncClient, wid: str) -> list[dict[str, Any]]:
    r = await c.get(f"/api/workflows/{wid}/history")
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


async def test_parallel_branches_run_concurrently(system: System, target: HttpTarget) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = await create(
            c,
            [
                n("in", "textInput", "start"),
                n("a", "http", "left", curl=f"curl {target.url}/delay/300"),
                n("b", "http", "right", curl=f"curl {target.url}/delay/300"),
                n("m", "merge", "join"),
            ],
            [e("in", "a"), e("in", "b"), e("a", "m"), e("b", "m")],
        )
        t0 = time.monotonic()
        r = await c.post(f"/api/workflows/{wid}/execute", json={})
        elapsed = time.monotonic() - t0
    assert r.status_code == 200, r.text
    assert set(r.json()["join"]["merged"]) == {"left", "right"}
    left, right = target.requests[-2:]
    # both requests were in flight at the same time
    assert max(left["started"], right["started"]) < min(left["finished"], right["finished"])
    assert elapsed < 0.6, f"two 300 ms branches took {elapsed:.3f}s"


def twenty_node_chain(
    target: HttpTarget, token: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [n("in", "textInput", "start")]
    edges = []
    prev = "in"
    for i in range(19):
        nid = f"n{i}"
        if i == 9:
            nodes.append(n(nid, "http", "counted", curl=f"curl {target.url}/count/{token}"))
        elif i % 3 == 0:
            # each slow node has a path of its own, so its calls are counted on their own
            nodes.append(
                n(nid, "http", f"slow{i}", curl=f"curl {target.url}/delay/150/{token}-{i}")
            )
        else:
            nodes.append(
                n(
                    nid,
                    "set",
                    f"step{i}",
                    mappings=[
                        {"key": "i", "value": str(i)},
                        {"key": "prev", "value": "$start.seed"},
                    ],
                )
            )
        edges.append(e(prev, nid))
        prev = nid
    nodes.append(
        n(
            "out",
            "jsonOutputMapper",
            "api",
            mappings=[
                {"key": "count", "value": "$counted.body.count"},
                {"key": "seed", "value": "$start.seed"},
            ],
        )
    )
    edges.append(e(prev, "out"))
    return nodes, edges


async def test_kill_9_scheduler_mid_run_completes_with_one_call(
    system: System, target: HttpTarget
) -> None:
    _, key = await system.new_user()
    token = uuid.uuid4().hex
    async with system.client(key) as c:
        wid = await create(c, *twenty_node_chain(target, token))
        run = asyncio.create_task(c.post(f"/api/workflows/{wid}/execute", json={"seed": "s1"}))
        # kill while the first slow HTTP node is in flight (called, not yet answered)
        first = f"/delay/150/{token}-0"
        await eventually(lambda: target.counts[first] >= 1, timeout=30)
        await system.kill("scheduler")
        await asyncio.sleep(0.3)
        await system.restart("scheduler")
        r = await asyncio.wait_for(run, 60)
        assert r.status_code == 200, r.text
        assert r.json() == {"count": 1, "seed": "s1"}
        assert target.counts[f"/count/{token}"] == 1
        # every side effect ran once, the one in flight at the kill included
        slow = {p: c for p, c in target.counts.items() if p.startswith(f"/delay/150/{token}-")}
        assert slow[first] == 1
        assert sorted(slow.values()) == [1] * 6
        # an uninterrupted run gives the same outputs
        clean = uuid.uuid4().hex
        wid2 = await create(c, *twenty_node_chain(target, clean))
        r2 = await c.post(f"/api/workflows/{wid2}/execute", json={"seed": "s1"})
        assert r2.json() == r.json()


async def test_wait_survives_a_restart_of_every_service(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        wid = await create(
            c,
            [
                n("in", "textInput", "start"),
                n("w", "wait", "pause", duration=2000),
                n("o", "output", "done", message="after the wait: $pause.text"),
            ],
            [e("in", "w"), e("w", "o")],
        )
        run = asyncio.create_task(
            c.post(f"/api/workflows/{wid}/execute", json={"text": "still here"})
        )
        items = await eventually(lambda: history(c, wid), timeout=20)
        run_id = items[0]["id"]
    await system.stop()
    with contextlib.suppress(Exception):
        await run  # its gateway went away mid-request
    await system.start()
    async with system.client(key) as c:

        async def finished() -> dict[str, Any]:
            r = await c.get(f"/api/workflows/{wid}/history/{run_id}")
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["status"] == "success", body["status"]
            return dict(body)

        entry = await eventually(finished, timeout=30)
    assert entry["outputs"] == {"done": {"result": "after the wait: still here"}}
    assert [r["node_label"] for r in entry["node_results"]] == ["start", "pause", "done"]


async def test_cancel_stops_the_run_and_nothing_after_runs(
    system: System, target: HttpTarget
) -> None:
    _, key = await system.new_user()
    token = uuid.uuid4().hex
    async with system.client(key) as c:
        wid = await create(
            c,
            [
                n("in", "textInput", "start"),
                n("slow", "http", "slow", curl=f"curl {target.url}/delay/1500"),
                n("after", "http", "after", curl=f"curl {target.url}/count/{token}"),
            ],
            [e("in", "slow"), e("slow", "after")],
        )
        run = asyncio.create_task(c.post(f"/api/workflows/{wid}/execute", json={}))
        items = await eventually(lambda: history(c, wid), timeout=20)
        run_id = items[0]["id"]
        await eventually(lambda: target.counts["/delay/1500"] >= 1, timeout=20)
        r = await c.post(f"/api/workflows/{wid}/executions/{run_id}/cancel")
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "cancel_requested"
        response = await asyncio.wait_for(run, 30)
        assert response.status_code == 409
        # the slow call's result arrives after the cancel (read off the target's log) and is
        # recorded; nothing is decided after it
        slow = next(q for q in target.requests if q["path"] == "/delay/1500")
        await eventually(lambda: "finished" in slow, timeout=10)

        async def late_result_recorded() -> bool:
            events = await system.events(run_id)
            return any(
                isinstance(x.event, NodeCompleted) and x.event.node_label == "slow" for x in events
            )

        await eventually(late_result_recorded, timeout=10)
        assert target.counts[f"/count/{token}"] == 0

        async def cancelled() -> bool:
            entry = (await c.get(f"/api/workflows/{wid}/history/{run_id}")).json()
            assert entry["status"] == "cancelled", entry["status"]
            return True

        await eventually(cancelled, timeout=10)
        again = await c.post(f"/api/workflows/{wid}/executions/{run_id}/cancel")
        assert again.status_code == 404
