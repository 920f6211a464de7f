"""Replicas of the folding services share runs by partition: every run completes with the
outputs one replica gives, each side effect happens once, conflicts stay rare, and a killed
replica's runs continue on the others."""

from __future__ import annotations

import asyncio

import pytest

from libs.devstack.status import health_replies
from libs.testing.eventually import eventually
from tests.chaos.harness import deployment
from tests.chaos.verify import conflicts_logged, describe, outcome
from tests.chaos.workload import Workload, connect
from tests.e2e.scaleout import FAILOVER

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


async def test_one_replica_gives_the_expected_outputs() -> None:
    """The reference the replica tests compare with: one process of each service."""
    async with deployment(replicas={}) as dep:
        work = Workload(dep.system, dep.target, dep.model, seed=1)
        await work.prepare(8)
        await work.drive(concurrency=8, deadline_s=120)
        report = outcome(work)
        assert report.ok, report.lines() + report.wrong[:3]
        assert report.completed == 8


async def test_three_schedulers_two_runtimes_under_500_concurrent_mixed_runs() -> None:
    async with deployment(replicas={"scheduler": 3, "agent_runtime": 2}) as dep:
        work = Workload(dep.system, dep.target, dep.model, seed=2)
        await work.prepare(500)
        await work.drive(concurrency=500, deadline_s=600)
        report = outcome(work)
        conflicts = await _health_conflicts(dep.system.nats_url)
        print(f"500 mixed runs on 3 schedulers + 2 agent runtimes: conflicts {conflicts}")
        print("\n".join(report.lines()))
        assert report.ok, report.lines() + report.wrong[:3] + report.lost[:3]
        assert report.completed == 500
        # run affinity makes conflicts rare events, not the normal path
        assert sum(conflicts.values()) <= 5, conflicts
        assert conflicts_logged(dep.system.log_dir) == sum(conflicts.values())


@FAILOVER[0]
@FAILOVER[1]
async def test_a_killed_scheduler_replicas_runs_continue_on_the_others() -> None:
    async with deployment(replicas={"scheduler": 3, "agent_runtime": 2}) as dep:
        work = Workload(dep.system, dep.target, dep.model, seed=3)
        await work.prepare(200)
        drive = asyncio.create_task(work.drive(concurrency=100, deadline_s=300))

        async def some_done() -> bool:
            assert sum(r.completed is not None for r in work.runs) >= 40
            return True

        await eventually(some_done, timeout=120, message="load running")
        nc = await connect(dep.system)
        try:
            replies = await health_replies(nc, "scheduler")
        finally:
            await nc.close()
        # A replica working on runs (rendezvous hashing may, rarely, give one replica none).
        victim = next(
            name
            for name in ("scheduler#2", "scheduler#3", "scheduler")
            if replies[dep.system.children[name].pid or 0].details.get("partitions_runs")
        )
        in_flight = [r for r in work.runs if r.started_at and r.completed is None]
        await dep.system.kill(victim)  # kill -9, not restarted
        await drive
        report = outcome(work)
        print(f"killed {victim}:", *report.lines(), sep="\n")
        odd = report.lost[:3] + [w.split()[1].rstrip(":") for w in report.wrong[:3]]
        if odd:
            print(*await describe(dep.system.nats_url, odd), sep="\n")
        assert report.ok, report.lines() + report.lost[:3] + report.wrong[:3]
        assert all(r.completed is not None for r in in_flight)


async def _health_conflicts(nats_url: str) -> dict[str, int]:
    import nats

    nc = await nats.connect(servers=nats_url.split(","))
    try:
        found = {}
        for service in ("scheduler", "agent_runtime"):
            for pid, reply in (await health_replies(nc, service, wait_s=1.0)).items():
                found[f"{service}:{pid}"] = int(reply.details.get("conflicts", "0"))
        return found
    finally:
        await nc.close()
