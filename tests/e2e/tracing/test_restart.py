"""A run that outlives every process it started on is still one trace: its spans, written
before and after a kill -9 and restart of all five services, hang under one run span."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import pytest

from contracts.nodes import TimerScheduled
from contracts.runs import RunCompleted
from libs.testing.eventually import eventually
from libs.testing.http_target import HttpTarget
from libs.testing.otlp_receiver import OtlpReceiver
from tests.e2e.agents.helpers import create, e, n
from tests.e2e.system import System

pytestmark = pytest.mark.e2e

CALLER_TRACE = "9a1b2c3d4e5f60718293a4b5c6d7e8f9"
CALLER = f"00-{CALLER_TRACE}-1122334455667788-01"


async def test_a_run_across_a_restart_of_every_service_is_one_trace(
    traced: System, receiver: OtlpReceiver
) -> None:
    _, key = await traced.new_user()
    async with HttpTarget() as target:
        async with traced.client(key) as c:
            wid = await create(
                c,
                [
                    n("in", "textInput", "start"),
                    n("s", "set", "before", mappings=[{"key": "v", "value": "1"}]),
                    n("w", "wait", "pause", duration=3000),
                    n("h", "http", "after", curl=f"curl {target.url}/x"),
                ],
                [e("in", "s"), e("s", "w"), e("w", "h")],
            )
            asking = asyncio.create_task(
                c.post(f"/api/workflows/{wid}/execute", json={}, headers={"traceparent": CALLER})
            )
            history = await eventually(
                lambda: history_entry(c, wid), timeout=30, message="the run is in history"
            )
            run_id = history["id"]
            await eventually(
                lambda: timer_set(traced, run_id), timeout=30, message="the wait started"
            )
            # what was written before the restart has reached the collector
            await eventually(lambda: span_of(receiver, "before"), timeout=30)
            for name in list(traced.children):
                await traced.kill(name)
            with contextlib.suppress(httpx.HTTPError):
                await asking  # the gateway died under it
        for name in list(traced.children):
            await traced.restart(name)
        await eventually(lambda: completed(traced, run_id), timeout=60, message="run ended")
        root = await eventually(lambda: receiver.run_span(run_id), timeout=30)
        await eventually(lambda: span_of(receiver, "after"), timeout=30)
        sent = target.requests[0]["headers"]["traceparent"]
    spans = receiver.trace(CALLER_TRACE)
    nodes = {s.attributes["heym.node.label"]: s for s in spans if s.name == "heym.node.execute"}
    assert set(nodes) == {"start", "before", "pause", "after"}
    assert root.parent_span_id == CALLER.split("-")[2]
    assert all(s.parent_span_id == root.span_id for s in nodes.values())
    # written by different incarnations of the services, one tree all the same
    before, after = nodes["before"].resource, nodes["after"].resource
    assert before["heym.component"] == "scheduler"
    assert after["heym.component"] == "tool_sandbox"
    assert nodes["pause"].resource["service.instance.id"] != before["service.instance.id"]
    assert nodes["pause"].end_ns - nodes["pause"].start_ns >= 2_900_000_000
    assert root.start_ns <= nodes["before"].start_ns
    assert root.end_ns >= nodes["after"].end_ns
    assert sent == f"00-{CALLER_TRACE}-{nodes['after'].span_id}-01"


async def history_entry(c: httpx.AsyncClient, wid: str) -> dict[str, object] | None:
    r = await c.get(f"/api/workflows/{wid}/history")
    if r.status_code != 200:
        return None
    body = r.json()
    items = body if isinstance(body, list) else body.get("items") or body.get("history") or []
    return items[0] if items else None


async def timer_set(system: System, run_id: str) -> bool:
    return any(isinstance(env.event, TimerScheduled) for env in await system.events(run_id))


async def completed(system: System, run_id: str) -> bool:
    return any(isinstance(env.event, RunCompleted) for env in await system.events(run_id))


def span_of(receiver: OtlpReceiver, label: str) -> bool:
    return any(s.attributes.get("heym.node.label") == label for s in receiver.trace(CALLER_TRACE))
