"""Cron triggers: workflows run on their schedule (trigger source `cron`), exactly once per tick
with two scheduler replicas and a restart of every service, and the schedule view lists them."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from contracts import subjects
from contracts.schedules import CronTicked
from libs.eventlog import EventLog
from libs.schedules import put_schedule
from libs.testing import infra
from libs.testing.eventually import eventually
from services.scheduler.cron import tick_run_id
from tests.e2e.system import System

pytestmark = pytest.mark.e2e


def cron_workflow(expression: str) -> dict[str, Any]:
    return {
        "name": f"cron-{uuid.uuid4().hex[:6]}",
        "nodes": [
            {"id": "c", "type": "cron", "data": {"label": "tick", "cronExpression": expression}},
            {
                "id": "s",
                "type": "set",
                "data": {
                    "label": "seen",
                    "mappings": [{"key": "at", "value": "$tick.triggered_at"}],
                },
            },
        ],
        "edges": [{"id": "e", "source": "c", "target": "s"}],
    }


async def cron_runs(c: httpx.AsyncClient, wid: str) -> list[dict[str, Any]]:
    r = await c.get(
        f"/api/workflows/{wid}/history", params={"limit": 500, "trigger_source": "cron"}
    )
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


async def test_cron_workflows_run_on_schedule_and_are_listed(system: System) -> None:
    _, key = await system.new_user()
    async with system.client(key) as c:
        bad = cron_workflow("every now and then")
        r = await c.post("/api/workflows", json=bad)
        assert r.status_code == 422
        assert "cron expression" in r.text
        wid = (await c.post("/api/workflows", json=cron_workflow("* * * * * *"))).json()["id"]
        hourly = (await c.post("/api/workflows", json=cron_workflow("0 9 * * 1-5"))).json()["id"]

        async def two_runs() -> list[dict[str, Any]]:
            runs = await cron_runs(c, wid)
            assert len(runs) >= 2, runs
            assert all(r["status"] == "success" for r in runs), runs
            return runs

        runs = await eventually(two_runs, timeout=20, interval=0.2)
        entry = (await c.get(f"/api/workflows/{wid}/history/{runs[0]['id']}")).json()
        assert entry["trigger_source"] == "cron"
        assert entry["outputs"]["seen"]["at"].startswith(str(datetime.now().year))

        listed = {s["workflow_id"]: s for s in (await c.get("/api/schedules")).json()}
        assert set(listed) == {wid, hourly}
        weekday = listed[hourly]
        assert weekday["scheduled"] is True
        assert weekday["schedule"] == "0 0 9 * * 1-5"
        assert len(weekday["next_runs"]) == 5
        assert all(t.endswith("T09:00:00Z") for t in weekday["next_runs"])

        # Removing the trigger stops the schedule: no tick starts a run any more.
        r = await c.put(
            f"/api/workflows/{wid}",
            json={"nodes": [{"id": "s", "type": "set", "data": {"label": "seen"}}], "edges": []},
        )
        assert r.status_code == 200, r.text
        assert {s["workflow_id"] for s in (await c.get("/api/schedules")).json()} == {hourly}
        # Runs started before the edit finish; after it, no tick starts one (each tick is
        # checked against the workflow as it is now).
        settled = len(await eventually(two_runs, timeout=20, interval=0.2))
        await asyncio.sleep(2.5)  # two ticks of the old schedule would have come and gone
        assert len(await cron_runs(c, wid)) == settled
        assert (await c.delete(f"/api/workflows/{hourly}")).status_code == 204
        assert (await c.get("/api/schedules")).json() == []


@pytest.fixture
async def replicated(pg_admin_url: str, pg_template: str, tmp_path: Path) -> AsyncIterator[System]:
    """A system of its own (own NATS, own database) with two scheduler replicas."""
    with infra.nats_server(tmp_path / "nats") as nats_url:
        async with infra.fresh_database(pg_admin_url, pg_template) as db:
            sys_ = System(nats_url, db, tmp_path / "logs")
            await sys_.start(replicas={"scheduler": 2})
            try:
                yield sys_
            finally:
                await sys_.stop()


async def test_every_tick_runs_exactly_once_across_replicas_and_restarts(
    replicated: System,
) -> None:
    system = replicated
    _, key = await system.new_user()
    async with system.client(key) as c, infra.connected(system.nats_url) as nc:
        wid = (await c.post("/api/workflows", json=cron_workflow("*/2 * * * * *"))).json()["id"]
        started = time.monotonic()
        await asyncio.sleep(25)
        # Every service goes down at once for a while (ticks keep landing on the log) ...
        for name in list(system.children):
            await system.kill(name)
        await asyncio.sleep(6)
        # ... and comes back.
        for name in list(system.children):
            await system.children[name].start()
        await system.wait_healthy(tuple(system.children))
        await asyncio.sleep(max(0.0, 60 - (time.monotonic() - started)))
        await put_schedule(nc, wid, None)
        await asyncio.sleep(2.5)

        ticks = await EventLog(nc).read(subjects.cron_tick(wid))
        assert all(isinstance(t.event, CronTicked) for t in ticks)
        slots = [round(t.recorded_at.timestamp() / 2) for t in ticks]
        # NATS wrote one tick per two seconds, none missing, none twice ...
        assert len(ticks) >= 29
        assert slots == list(range(slots[0], slots[0] + len(slots))), slots
        expected = {tick_run_id(wid, t.sequence) for t in ticks}

        async def every_tick_ran() -> list[dict[str, Any]]:
            runs = await cron_runs(c, wid)
            assert len(runs) >= len(expected), (len(runs), len(expected))
            return runs

        runs = await eventually(every_tick_ran, timeout=30, interval=0.5)
        # ... and each tick started exactly one run, which succeeded.
        assert sorted(r["id"] for r in runs) == sorted(expected)
        assert all(r["status"] == "success" for r in runs)
