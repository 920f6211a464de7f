"""Replicas of the folding services share runs by partition: every run completes with the
outputs one replica gives, each side effect happens once, conflicts stay rare, and a killed
replica's runs continue on the others."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace

import msgspec
import pytest

from contracts import subjects
from contracts.base import Event
from contracts.nodes import NodeDispatched
from contracts.runs import RunCompleted, RunPaused, RunResumed
from libs.devstack.status import health_replies
from libs.eventlog import EventLog
from libs.eventlog.feeds import partition_of_key
from libs.testing.eventually import eventually
from tests.chaos.harness import deployment
from tests.chaos.verify import conflicts_logged, describe, outcome
from tests.chaos.workload import Workload, connect, model_script
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
            # (a loaded machine answers slowly: a replica missing from the replies is skipped)
            replies = await health_replies(nc, "scheduler", wait_s=2.0)
        finally:
            await nc.close()
        # A replica working on runs (rendezvous hashing may, rarely, give one replica none).
        victim = next(
            name
            for name in ("scheduler#2", "scheduler#3", "scheduler")
            if (reply := replies.get(dep.system.children[name].pid or 0)) is not None
            and reply.details.get("partitions_runs")
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


async def test_a_run_back_on_the_replica_that_cached_it_is_reloaded_not_decided_on_its_cache() -> (
    None
):
    """Runs started on replica A (cached there while their agent drafts) move to B when B
    joins; B pauses and resumes them and is killed while their HTTP node runs; the runs come
    back to A. A must reload them: deciding on its cache (the agent still running) started
    the next node without the agent's output (`$writer.text` was null)."""
    async with deployment(replicas={"scheduler": 2}) as dep:
        await dep.system.kill("scheduler#2")  # A (`scheduler`) holds every partition
        script = model_script()
        dep.model.script = [  # the draft takes 8 s: B joins meanwhile
            msgspec.structs.replace(r, reply=msgspec.structs.replace(r.reply, delay=8.0))
            if r.name == "draft"
            else r
            for r in script.rules
        ]
        # Every run's HTTP node waits at one gate, opened once the runs are back on A.
        gated = SimpleNamespace(url=f"{dep.target.url}/gate/sent?to=")
        work = Workload(dep.system, gated, dep.model, seed=5)  # type: ignore[arg-type]
        await work.prepare(64)
        work.runs = [r for r in work.runs if r.kind == "review"]
        nc = await connect(dep.system)
        log = EventLog(nc)
        try:
            for run in work.runs:
                await work.start(log, run)

            def every_run_has(kind: type[Event]) -> Callable[[], Awaitable[dict[str, Event]]]:
                async def check() -> dict[str, Event]:
                    found: dict[str, Event] = {}
                    for run in work.runs:
                        events = await log.read(subjects.run_all(run.run_id))
                        hit = next((e.event for e in events if isinstance(e.event, kind)), None)
                        assert hit is not None, (kind.__name__, run.run_id)
                        found[run.run_id] = hit
                    return found

                return check

            drafting = every_run_has(NodeDispatched)
            await eventually(drafting, timeout=30, message="every agent drafting, on A")
            await dep.system.restart("scheduler#2")  # B joins and takes its share
            pid_b = dep.system.children["scheduler#2"].pid

            paused = await eventually(
                every_run_has(RunPaused), timeout=60, message="every run paused"
            )
            for run in work.runs:
                run.paused = paused[run.run_id]  # type: ignore[assignment]
                await work.decide(run)

            await eventually(every_run_has(RunResumed), timeout=60, message="every run resumed")

            async def b_holds() -> set[int]:
                # (pins are taken on delivery: B holds the partitions of the runs it resumed)
                replies = await health_replies(nc, "scheduler", wait_s=1.0)
                reply = replies.get(pid_b or 0)
                held = reply.details.get("partitions_runs", "") if reply else ""
                parts = {int(p) for p in held.rsplit(" ", 1)[-1].split(",") if p.isdigit()}
                assert parts, replies
                return parts

            held_by_b: set[int] = await eventually(
                b_holds, timeout=30, message="B holds partitions"
            )
            moved = [r for r in work.runs if partition_of_key(r.run_id, 16) in held_by_b]
            assert moved, "no paused run moved to B"
            await dep.system.kill("scheduler#2")  # the runs go back to A
            dep.target.open_gate("sent")

            completed = await eventually(
                every_run_has(RunCompleted), timeout=120, message="every run completed on A"
            )
        finally:
            await nc.close()
        texts = {
            run_id: done.outputs["answer"]["result"]["r"]["text"]  # type: ignore[attr-defined]
            for run_id, done in completed.items()
        }
        print(f"{len(moved)} of {len(work.runs)} runs moved to B and back")
        assert set(texts.values()) == {"reviewed"}, texts
