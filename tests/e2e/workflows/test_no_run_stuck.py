"""No run stays "running" with nothing recorded: payloads over the message limit are split or
fail clearly, a message that fails on every delivery ends its run with the error, and the
sweeper re-drives a run whose dispatch was lost. (The e2e system sweeps every second and
treats a run quiet for 3 s as stuck; redeliveries back off from 0.2 s.)"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest

from contracts import subjects
from contracts.runs import RunCompleted, RunRequested
from libs.eventlog import EventLog
from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

MiB = 1024 * 1024


@pytest.fixture
async def target() -> AsyncIterator[HttpTarget]:
    async with HttpTarget() as t:
        yield t


def node(nid: str, ntype: str, label: str, **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": ntype,
        "position": {"x": 0, "y": 0},
        "data": {"label": label, **data},
    }


def chain(*ids: str) -> list[dict[str, Any]]:
    return [{"id": f"{a}-{b}", "source": a, "target": b} for a, b in itertools.pairwise(ids)]


async def execute(system: System, key: str, nodes: list[Any], edges: list[Any], body: Any) -> Any:
    async with system.client(key) as c:
        r = await c.post("/api/workflows", json={"name": "stuck?", "nodes": nodes, "edges": edges})
        assert r.status_code == 201, r.text
        wid = r.json()["id"]
        return await c.post(
            f"/api/workflows/{wid}/execute",
            json=body,
            headers={"X-Simple-Response": "false"},
            timeout=60,
        )


async def test_a_node_output_over_the_message_limit_fails_the_node_clearly(system: System) -> None:
    _, key = await system.new_user()
    # three mappings of a 3 MiB input: a 9 MiB output, more than one event may hold
    mappings = [{"key": k, "value": "$userInput.text"} for k in ("a", "b", "c")]
    r = await execute(
        system,
        key,
        [node("in", "textInput", "userInput"), node("s", "set", "triple", mappings=mappings)],
        chain("in", "s"),
        {"text": "x" * (3 * MiB)},
    )
    assert r.status_code == 200, r.text[:300]
    body = r.json()
    assert body["status"] == "error"
    assert "cannot be stored" in body["outputs"]["error"]
    assert "MiB" in body["outputs"]["error"]


async def test_a_value_json_cannot_hold_fails_the_node_clearly(system: System) -> None:
    _, key = await system.new_user()
    r = await execute(
        system,
        key,
        [
            node("in", "textInput", "userInput"),
            node("s", "set", "huge", mappings=[{"key": "n", "value": "$10**5000"}]),
        ],
        chain("in", "s"),
        {"text": "go"},
    )
    assert r.status_code == 200, r.text[:300]
    body = r.json()
    assert body["status"] == "error"
    assert "huge" in body["outputs"]["error"]


async def test_a_big_http_response_passed_to_an_output_completes(
    system: System, target: HttpTarget
) -> None:
    _, key = await system.new_user()
    size = 4_500_000  # the output node and the run's outputs hold it twice: split into messages
    r = await execute(
        system,
        key,
        [
            node("in", "textInput", "userInput"),
            node("h", "http", "fetch", curl=f"curl {target.url}/big/{size}"),
            node("o", "output", "result", message="$fetch.body.data"),
        ],
        chain("in", "h", "o"),
        {"text": "go"},
    )
    assert r.status_code == 200, r.text[:300]
    body = r.json()
    assert body["status"] == "success", str(body)[:300]
    assert len(body["outputs"]["result"]["result"]) == size


async def test_a_3_mib_request_through_a_set_node_runs(system: System) -> None:
    _, key = await system.new_user()
    r = await execute(
        system,
        key,
        [
            node("in", "textInput", "userInput"),
            node("s", "set", "copy", mappings=[{"key": "t", "value": "$userInput.text"}]),
            node("o", "output", "result", message="$copy.t"),
        ],
        chain("in", "s", "o"),
        {"text": "y" * (3 * MiB)},
    )
    assert r.status_code == 200, r.text[:300]
    assert r.json()["status"] == "success"
    assert len(r.json()["outputs"]["result"]["result"]) == 3 * MiB


async def test_a_lost_dispatch_is_found_by_the_sweeper(system: System, target: HttpTarget) -> None:
    _, key = await system.new_user()
    token = uuid.uuid4().hex
    await system.kill("tool_sandbox")  # nobody takes the dispatch: the test removes it first
    try:
        run = asyncio.create_task(
            execute(
                system,
                key,
                [
                    node("in", "textInput", "userInput"),
                    node("h", "http", "call", curl=f"curl {target.url}/count/{token}"),
                ],
                chain("in", "h"),
                {"text": "go"},
            )
        )
        nc = await nats.connect(system.nats_url)
        js = nc.jetstream()

        async def dispatched() -> int:
            last = await js.get_last_msg(
                subjects.RUN_STREAM, subjects.work_for("tool_sandbox"), direct=True
            )
            assert last.data
            assert token.encode() in last.data
            assert last.seq is not None
            return last.seq

        sequence = await eventually(dispatched, timeout=20)
        assert await js.delete_msg(subjects.RUN_STREAM, sequence)
        await nc.close()
    finally:
        await system.restart("tool_sandbox")
    r = await asyncio.wait_for(run, 60)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "success"
    assert target.counts[f"/count/{token}"] == 1


async def test_a_message_that_fails_on_every_delivery_ends_its_run_with_the_error(
    system: System,
) -> None:
    run_id = uuid.uuid4().hex
    nc = await nats.connect(system.nats_url)
    try:
        log = EventLog(nc)
        # Well-formed JSON, but a workflow no scheduler can build (a node id that is a number):
        # only a producer that bypasses the gateway's validation could write it.
        await log.append(
            subjects.run_commands(run_id),
            [RunRequested(workflow_id="w", nodes=[{"id": 1, "type": "set"}], edges=[])],
        )

        async def ended() -> RunCompleted:
            found = [e.event for e in await log.replay(run_id) if isinstance(e.event, RunCompleted)]
            assert found, "the run is still running"
            return found[0]

        done = await eventually(ended, timeout=30)
    finally:
        await nc.close()
    assert done.status == "error"
    assert "could not go on" in (done.error or "")
    # the scheduler is still serving others
    async with system.client() as c:
        health = (await c.get("/api/health")).json()
    assert health["services"]["scheduler"]["state"] == "healthy"
