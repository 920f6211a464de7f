"""On a three-node NATS cluster (run stream R3): kill -9 a nats-server mid-load and restart it,
then the same with the stream's leader. Every acknowledged append survives, every run
completes, and the restarted node catches up."""

from __future__ import annotations

import asyncio
import json

import pytest

from contracts import subjects
from libs.testing.eventually import eventually
from tests.chaos.harness import Deployment, deployment
from tests.chaos.verify import describe, outcome
from tests.chaos.workload import Workload, connect
from tests.e2e.scaleout import FAILOVER

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900), *FAILOVER]


async def _caught_up(dep: Deployment) -> bool:
    """Every replica of the run stream is current (the restarted node has caught up)."""
    nc = await connect(dep.system)
    try:
        reply = await nc.request(f"$JS.API.STREAM.INFO.{subjects.RUN_STREAM}", b"", timeout=5)
        cluster = json.loads(reply.data)["cluster"]
    finally:
        await nc.close()
    replicas = cluster.get("replicas") or []
    assert len(replicas) == 2, cluster
    assert all(r.get("current") and not r.get("offline") for r in replicas), cluster
    return True


async def _kill_mid_load(dep: Deployment, work: Workload, pick: str) -> str:
    drive = asyncio.create_task(work.drive(concurrency=60, deadline_s=300))

    async def some_done() -> bool:
        assert sum(r.completed is not None for r in work.runs) >= len(work.runs) // 4
        return True

    await eventually(some_done, timeout=120, message="load running")
    victim = await dep.stream_leader() if pick == "leader" else pick
    await dep.kill(victim)
    await asyncio.sleep(1.0)
    await dep.restart(victim)
    await drive
    return victim


async def _acknowledged_survive(dep: Deployment, work: Workload) -> None:
    """Everything the driver saw acknowledged on the log is still there, on every run."""
    nc = await connect(dep.system)
    try:
        from libs.eventlog import EventLog

        log = EventLog(nc)
        for run in work.runs:
            events = await log.read(subjects.run_all(run.run_id))
            kinds = {type(e.event).__name__ for e in events}
            assert {"RunRequested", "RunCompleted"} <= kinds, (run.run_id, kinds)
    finally:
        await nc.close()


@pytest.mark.parametrize("pick", ["nats-2", "leader"])
async def test_a_nats_server_killed_mid_load_loses_nothing(pick: str) -> None:
    replicas = {"scheduler": 2, "agent_runtime": 2}
    async with deployment(replicas=replicas, cluster=3) as dep:
        work = Workload(dep.system, dep.target, dep.model, seed=4)
        await work.prepare(160)
        victim = await _kill_mid_load(dep, work, pick)
        report = outcome(work)
        print(f"killed {victim}:", *report.lines(), sep="\n")
        odd = report.lost[:3] + [w.split()[1].rstrip(":") for w in report.wrong[:3]]
        if odd:
            print(*await describe(dep.system.nats_url, odd), sep="\n")
            print(*_tails(dep), sep="\n")
        assert report.ok, report.lines() + report.lost[:3] + report.wrong[:3]
        await eventually(lambda: _caught_up(dep), timeout=60, message="restarted node caught up")
        await _acknowledged_survive(dep, work)


def _tails(dep: Deployment) -> list[str]:
    out = []
    for name, child in dep.system.children.items():
        out.append(f"--- {name}")
        out.extend(
            line
            for line in child.log_tail(400).splitlines()
            if "WARNING" in line or "ERROR" in line
        )
    return out[-200:]
