"""Scale-out: 10-node throughput and conflicts with 1 and 3 scheduler replicas (one nats-server,
then a three-node cluster with the run stream R3), and how long a killed replica's runs wait
before another replica goes on with them."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from contracts import subjects
from contracts.runs import RunRequested
from libs.devstack.status import health_replies
from libs.eventlog import EventLog
from libs.eventlog.feeds import partition_of_key
from tests.bench.harness import Figure, latency
from tests.bench.workflow_bench import node, throughput
from tests.chaos.harness import SERVICES_ENV, Deployment, deployment
from tests.chaos.workload import connect

RUNS = 1000
IN_FLIGHT = 50
ACK_WAIT_S = float(SERVICES_ENV["HEYM_PARTITION_ACK_WAIT_S"])  # what the deployment sets


async def _conflicts(dep: Deployment) -> int:
    nc = await connect(dep.system)
    try:
        replies = await health_replies(nc, "scheduler", wait_s=1.0)
        return sum(int(r.details.get("conflicts", "0")) for r in replies.values())
    finally:
        await nc.close()


async def _throughput(replicas: int, cluster: int, label: str) -> list[Figure]:
    async with deployment(
        replicas={"scheduler": replicas}, cluster=cluster, HEYM_LOG_LEVEL="WARNING"
    ) as dep:
        nc = await connect(dep.system)
        try:
            log = EventLog(nc)
            await throughput(log, 100, IN_FLIGHT)  # warm-up: pins taken, caches filled
            before = await _conflicts(dep)
            figure = await throughput(log, RUNS, IN_FLIGHT)
            conflicts = await _conflicts(dep) - before
        finally:
            await nc.close()
    figure.name = f"10-node throughput, {label}"
    figure.params["replicas"] = replicas
    return [
        figure,
        Figure(
            name=f"conflicts per 1,000 runs, {label}",
            unit="conflicts",
            value=conflicts * 1000 / RUNS,
            params={"runs": RUNS, "replicas": replicas, "target": 0},
        ),
    ]


def _waiting_chain() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [
        node("in", "textInput", "start"),
        node("w", "wait", "pause", duration=1500),
        node("a", "set", "after", mappings=[{"key": "v", "value": "1"}]),
        node("o", "output", "end", message="$after.v"),
    ]
    edges = [
        {"id": "e1", "source": "in", "target": "w"},
        {"id": "e2", "source": "w", "target": "a"},
        {"id": "e3", "source": "a", "target": "o"},
    ]
    return nodes, edges


async def _failover() -> Figure:
    """Runs wait on durable timers; mid-way one of three schedulers is killed -9. For each of
    its runs, the time from its timer firing to the next decision (made by another replica)."""
    async with deployment(replicas={"scheduler": 3}, HEYM_LOG_LEVEL="WARNING") as dep:
        nc = await connect(dep.system)
        try:
            log = EventLog(nc)
            nodes, edges = _waiting_chain()
            runs: list[str] = []
            killed_at = 0.0
            held: set[int] = set()
            for i in range(120):  # one run every 40 ms for 4.8 s; the kill comes at 3 s
                run_id = uuid.uuid4().hex
                request = RunRequested(workflow_id="bench", nodes=nodes, edges=edges)
                await log.append(subjects.run_commands(run_id), [request], expected_sequence=0)
                runs.append(run_id)
                if i == 75:
                    replies = await health_replies(nc, "scheduler")
                    for name in ("scheduler#2", "scheduler#3", "scheduler"):
                        pid = dep.system.children[name].pid or 0
                        text = replies[pid].details.get("partitions_runs", "")
                        held = {int(p) for p in text.rsplit(" ", 1)[-1].split(",") if p.isdigit()}
                        if held:  # a replica working on runs
                            break
                    killed_at = time.time()
                    await dep.system.kill(name)
                await asyncio.sleep(0.04)
            mine = [r for r in runs if partition_of_key(r, 16) in held]
            delays = await _continuations(log, mine, killed_at)
        finally:
            await nc.close()
    return latency(
        "killed replica's runs: timer fired -> next decision on another replica",
        delays,
        runs=len(delays),
        ack_wait_s=ACK_WAIT_S,
        target_p95_ms=2 * ACK_WAIT_S * 1000,
    )


async def _continuations(log: EventLog, runs: list[str], killed_at: float) -> list[float]:
    deadline = time.monotonic() + 4 * ACK_WAIT_S + 30
    delays: dict[str, float] = {}
    while time.monotonic() < deadline and len(delays) < len(runs):
        for run_id in runs:
            if run_id in delays:
                continue
            events = await log.replay(run_id)
            fired = [e for e in events if e.subject.endswith(".timer")]
            if not fired or not any(type(e.event).__name__ == "RunCompleted" for e in events):
                continue
            at = fired[0].recorded_at.timestamp()
            after = [e for e in events if ".sched." in e.subject and e.sequence > fired[0].sequence]
            if at >= killed_at - 1.0 and after:
                delays[run_id] = after[0].recorded_at.timestamp() - at
            else:
                delays[run_id] = -1.0  # handled before the kill: not a failover
        await asyncio.sleep(0.5)
    return [d for d in delays.values() if d >= 0]


async def run() -> list[Figure]:
    figures: list[Figure] = []
    figures += await _throughput(1, 0, "1 scheduler, one nats-server")
    figures += await _throughput(3, 0, "3 schedulers, one nats-server")
    figures += await _throughput(3, 3, "3 schedulers, 3-node NATS cluster R3")
    figures.append(await _failover())
    return figures
