"""The chaos run: a mixed workload while a seeded schedule kill -9s processes and restarts them.

The seed decides everything random (which process, when, for how long it stays down), so a
failing schedule can be replayed: `task chaos -- --seed <seed>`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable

from tests.chaos.harness import Deployment, deployment
from tests.chaos.verify import Report, conflicts_logged, convergence, describe, outcome
from tests.chaos.workload import Workload

REPLICAS = {"scheduler": 3, "agent_runtime": 2}


async def kill_schedule(
    dep: Deployment,
    rng: random.Random,
    kills: int,
    every_s: tuple[float, float],
    say: Callable[[str], None],
    done: list[str],
) -> None:
    """`kills` times: wait, kill -9 one process (any replica, a nats-server, Postgres), keep it
    down a moment, start it again. One at a time, so a three-node cluster keeps its quorum."""
    for k in range(kills):
        await asyncio.sleep(rng.uniform(*every_s))
        name = rng.choice(dep.processes)
        down = rng.uniform(0.2, 2.0)
        say(f"kill {k + 1}/{kills}: {name} (down {down:.1f} s)")
        await dep.kill(name)
        done.append(name)
        await asyncio.sleep(down)
        await dep.restart(name)


async def chaos(
    *,
    runs: int,
    kills: int,
    seed: int,
    cluster: int = 3,
    concurrency: int = 20,
    deadline_s: float = 600,
    every_s: tuple[float, float] = (2.0, 6.0),
    say: Callable[[str], None] = print,
) -> Report:
    rng = random.Random(seed)
    say(f"chaos seed {seed}: {runs} runs, {kills} kills, cluster {cluster or 'single'}")
    async with deployment(replicas=REPLICAS, cluster=cluster, HEYM_LOG_LEVEL="INFO") as dep:
        work = Workload(dep.system, dep.target, dep.model, seed)
        await work.prepare(runs)
        killed: list[str] = []
        started = time.monotonic()
        schedule = asyncio.create_task(kill_schedule(dep, rng, kills, every_s, say, killed))
        try:
            await work.drive(concurrency=concurrency, deadline_s=deadline_s)
            await schedule  # every kill happens (and is restarted) even if the runs ended first
        finally:
            schedule.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await schedule
        if any(r.completed is None for r in work.runs):
            # the last kills may have come after most runs ended: give the rest their time
            await work.drive(concurrency=concurrency, deadline_s=120)
        report = outcome(work)
        report.seconds = time.monotonic() - started
        report.kills = killed
        report.conflicts = conflicts_logged(dep.system.log_dir)
        report.diverged = await convergence(
            dep.system.nats_url,
            dep.system.database_url,
            dep.postgres.admin_url,
            dep.template,
            [r.run_id for r in work.runs if r.completed is not None],
        )
        for line in report.lines():
            say(line)
        if report.lost:
            for line in await describe(dep.system.nats_url, report.lost[:3]):
                say(line)
            for name, child in dep.system.children.items():
                tail = [
                    ln
                    for ln in child.log_tail(2000).splitlines()
                    if " ERROR " in ln or " WARNING " in ln
                ]
                for line in tail[-15:]:
                    say(f"{name}: {line[:300]}")
        return report
