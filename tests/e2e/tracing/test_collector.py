"""A collector that hangs or is down never holds up a run, and the service says so once; a
sampling ratio of 0.0 exports nothing (but a sampled caller's run is still traced); a bad
endpoint leaves tracing off without stopping the service."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from libs.testing.eventually import eventually
from libs.testing.otlp_receiver import OtlpReceiver
from tests.e2e.agents.helpers import create, e, n
from tests.e2e.system import System
from tests.e2e.tracing.conftest import otel_env, traced_system

pytestmark = pytest.mark.e2e

CORE = ("gateway", "scheduler")
SAMPLED_CALLER = "00-5f1e2d3c4b5a69788796a5b4c3d2e1f0-1a2b3c4d5e6f7081-01"


def three_sets() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [n("in", "textInput", "start")]
    edges = []
    for i in range(3):
        nodes.append(n(f"s{i}", "set", f"step{i}", mappings=[{"key": "v", "value": str(i)}]))
        edges.append(e("in" if i == 0 else f"s{i - 1}", f"s{i}"))
    return nodes, edges


async def run(system: System, key: str, wid: str, **headers: str) -> str:
    async with system.client(key) as c:
        r = await c.post(
            f"/api/workflows/{wid}/execute",
            json={"text": "go"},
            headers={"X-Simple-Response": "false", **headers},
        )
    assert r.status_code == 200, r.text
    return str(r.json()["execution_history_id"])


async def failed_exports(system: System, key: str, *, at_least: int) -> bool:
    async with system.client(key) as c:
        status = (await c.get("/api/settings/observability")).json()
    scheduler = status["services"]["scheduler"]
    assert scheduler["state"] == "failing", scheduler
    return bool(scheduler["failed_exports"] >= at_least)


def export_failures(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if "span export to" in line]


async def test_a_hanging_or_down_collector_never_holds_up_a_run(
    pg_admin_url: str, pg_template: str, tmp_path: Path
) -> None:
    receiver = OtlpReceiver()
    receiver.start()
    receiver.mode = "hang"
    try:
        async with traced_system(
            tmp_path, pg_admin_url, pg_template, otel_env(receiver.url), names=CORE
        ) as system:
            _, key = await system.new_user()
            async with system.client(key) as c:
                wid = await create(c, *three_sets())
            # Hanging: every export waits on the collector while the runs go on.
            for _ in range(15):
                await run(system, key, wid)
            await eventually(lambda: receiver.hanging > 0, timeout=10)
            for _ in range(15):
                await run(system, key, wid)
            assert receiver.hanging > 0  # exports were stuck the whole time
            # Down: nothing listens on the port any more.
            receiver.stop()
            for _ in range(15):
                await run(system, key, wid)
            scheduler_log = system.children["scheduler"].log_path
            # runs go on, and the exporter fails again and again (it retries after a back-off)

            async def failing_again() -> bool:
                await run(system, key, wid)
                return await failed_exports(system, key, at_least=3)

            await eventually(failing_again, timeout=90, interval=0.5)
            # Up again: spans flow, and the recovery is logged once as well.
            receiver = OtlpReceiver(receiver.port)
            receiver.start()
            last = await run(system, key, wid)
            await eventually(lambda: receiver.run_span(last), timeout=30)
            await eventually(lambda: len(export_failures(scheduler_log)) == 2, timeout=10)
            await asyncio.sleep(0)
            lines = export_failures(scheduler_log)
    finally:
        receiver.stop()
    # one line when the export first failed, one when it worked again: not one per span
    assert len(lines) == 2, lines
    assert "failed" in lines[0]
    assert "works again" in lines[1]
    assert "Bearer" not in "\n".join(lines)


async def test_ratio_zero_exports_nothing_unless_the_caller_sampled(
    pg_admin_url: str, pg_template: str, tmp_path: Path
) -> None:
    with OtlpReceiver() as receiver:
        env = otel_env(receiver.url, HEYM_OTEL_TRACES_SAMPLER_RATIO="0.0")
        async with traced_system(tmp_path, pg_admin_url, pg_template, env, names=CORE) as system:
            _, key = await system.new_user()
            async with system.client(key) as c:
                wid = await create(c, *three_sets())
            unsampled = [await run(system, key, wid) for _ in range(5)]
            # Parent-based: a caller that sampled its trace gets the run traced. Its spans
            # are queued after the others', so once they arrive the others would have too.
            sampled = await run(system, key, wid, traceparent=SAMPLED_CALLER)
            await eventually(lambda: receiver.run_span(sampled), timeout=30)
            await eventually(lambda: len(receiver.trace(SAMPLED_CALLER.split("-")[1])) >= 5)
            traced = {s.trace_id for s in receiver.spans}
            roots = {s.attributes["heym.run.id"] for s in receiver.named("heym.workflow.execute")}
    assert traced == {SAMPLED_CALLER.split("-")[1]}
    assert roots == {sampled}
    assert not set(unsampled) & roots


async def test_a_bad_endpoint_leaves_tracing_off_and_the_service_up(
    pg_admin_url: str, pg_template: str, tmp_path: Path
) -> None:
    env = otel_env("collector:4318")  # no scheme: not an http(s) URL
    async with traced_system(tmp_path, pg_admin_url, pg_template, env, names=CORE) as system:
        _, key = await system.new_user()
        async with system.client(key) as c:
            wid = await create(c, *three_sets())
            await run(system, key, wid)
            status = (await c.get("/api/settings/observability")).json()
        log = system.children["scheduler"].log_path.read_text()
    assert status["services"]["scheduler"]["state"] == "off"
    assert "HEYM_OTEL_EXPORTER_OTLP_ENDPOINT" in status["services"]["scheduler"]["disabled_reason"]
    assert log.count("OpenTelemetry is off") == 1
