"""Example workflows for every node type, run over REST and over SSE, against Heym's semantics.

Each fixture in `fixtures/` holds a workflow, its inputs and what Heym gives for them: the
run's outputs and status, and the status of each node's results in order.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from libs.testing.http_target import HttpTarget
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*.json"))


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with HttpTarget() as t:
        yield t


def load(path: Path, target: HttpTarget) -> dict[str, Any]:
    text = (
        path.read_text().replace("{{target}}", target.url).replace("{{unique}}", uuid.uuid4().hex)
    )
    return json.loads(text)


async def create(c: httpx.AsyncClient, name: str, graph: dict[str, Any]) -> str:
    r = await c.post("/api/workflows", json={"name": name, "sse_enabled": True, **graph})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def fresh(inputs: Any) -> Any:
    """The inputs with `{{run}}` made unique for each execution."""
    return json.loads(json.dumps(inputs).replace("{{run}}", uuid.uuid4().hex))


def statuses(results: list[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in sorted(results, key=lambda r: r["metadata"]["sequence"]):
        out.setdefault(r["node_label"], []).append(r["status"])
    return out


async def sse_frames(c: httpx.AsyncClient, url: str, body: Any) -> list[dict[str, Any]]:
    frames = []
    async with c.stream("POST", url, json=body, headers={"X-Simple-Response": "false"}) as r:
        assert r.status_code == 200, await r.aread()
        async for line in r.aiter_lines():
            if line.startswith("data:"):
                frames.append(json.loads(line[5:].strip()))
    return frames


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
async def test_fixture_over_rest_and_sse(system: System, target: HttpTarget, path: Path) -> None:
    case = load(path, target)
    expect = case["expect"]
    _, key = await system.new_user()
    async with system.client(key) as c:
        graph = case["workflow"]
        if "child" in case:
            child = await create(c, f"{path.stem}-child", case["child"])
            graph = json.loads(json.dumps(graph).replace("{{child}}", child))
        wid = await create(c, path.stem, graph)

        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json=fresh(case["inputs"]),
            headers={"X-Simple-Response": "false"},
        )
        assert r.status_code == expect.get("http_status", 200), r.text
        body = r.json()
        assert body["status"] == expect.get("status", "success"), body
        assert body["outputs"] == expect["outputs"]
        for label, wanted in expect.get("statuses", {}).items():
            assert statuses(body["node_results"]).get(label) == wanted, (
                label,
                statuses(body["node_results"]),
            )

        # the simple response is the outputs alone
        simple = await c.post(f"/api/workflows/{wid}/execute", json=fresh(case["inputs"]))
        assert simple.json() == {
            k: v for k, v in expect["outputs"].items() if not k.startswith("_")
        }

        frames = await sse_frames(c, f"/api/workflows/{wid}/execute/stream", fresh(case["inputs"]))
        kinds = [f["type"] for f in frames]
        assert kinds[0] == "execution_started"
        assert kinds[-1] == "execution_complete"
        done = frames[-1]
        assert done["status"] == expect.get("status", "success")
        assert done["outputs"] == expect["outputs"]
        completes = [f for f in frames if f["type"] == "node_complete"]
        # failed attempts that are retried stream as node_retry, not as node_complete
        final_rows = [r for r in body["node_results"] if "retry_stage" not in r["metadata"]]
        for label in expect.get("statuses", {}):
            got = [f["status"] for f in completes if f["node_label"] == label]
            assert got == statuses(final_rows).get(label), (label, got)
        started = {f["node_label"] for f in frames if f["type"] == "node_start"}
        assert started >= {f["node_label"] for f in completes if f["status"] != "skipped"}
        if "retry" in expect:
            (retry,) = [f for f in frames if f["type"] == "node_retry"]
            assert retry["node_label"] == expect["retry"]["node"]
            assert retry["attempt"] == expect["retry"]["attempt"] + 1
            assert retry["max_attempts"] == expect["retry"]["max_attempts"]
