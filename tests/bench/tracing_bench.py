"""What tracing costs: the 10-node workflow throughput (the workflow suite's) with tracing off,
on at ratio 1.0 exporting to a live local OTLP receiver, and on with an unreachable endpoint.

Targets: off creates no span object; on and unreachable are at most 5 % slower than off.
The three systems run side by side and are measured in alternating rounds, so drift in the
machine's load (it is shared) falls on all three alike; the median round is reported. On a
loaded machine throughput is noisy, so the services' CPU time per run (every thread of the
five service processes, the exporter's included) is reported too: on a saturated system
throughput is the inverse of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import msgspec
import nats

from contracts import subjects
from contracts.health import HealthReply
from libs.db import apply_migrations
from libs.embedded import EmbeddedNats, EmbeddedPostgres
from libs.embedded.process import free_port
from libs.eventlog import EventLog
from libs.testing.infra import connected
from libs.testing.otlp_receiver import OtlpReceiver
from tests.bench.harness import Figure
from tests.bench.workflow_bench import chain, run_once
from tests.e2e.system import System

ROUNDS = 5
RUNS_PER_ROUND = 300
IN_FLIGHT = 50


@contextlib.asynccontextmanager
async def system_with(env: dict[str, str]) -> AsyncIterator[System]:
    with tempfile.TemporaryDirectory(prefix="heym-bench-otel-") as d:
        root = Path(d)
        nats_server = EmbeddedNats(root / "nats")
        nats_server.start()
        pg = EmbeddedPostgres(root / "pg")
        url = pg.start()
        conn = await asyncpg.connect(url)
        await apply_migrations(conn)
        await conn.close()
        system = System(nats_server.url, url, root / "logs", HEYM_LOG_LEVEL="WARNING", **env)
        try:
            await system.start()
            yield system
        finally:
            await system.stop()
            pg.stop()
            nats_server.stop()


async def spans_started(system: System) -> int:
    """Span objects the services made (each counts the spans it started)."""
    nc = await nats.connect(system.nats_url)
    try:
        total = 0
        for service in subjects.SERVICES:
            msg = await nc.request(subjects.health(service), b"", timeout=5)
            total += int(msgspec.json.decode(msg.data, type=HealthReply).details["otel_spans"])
        return total
    finally:
        await nc.close()


def cpu_seconds(system: System) -> float:
    """User and system CPU time of the system's service processes so far."""
    total = 0
    for child in system.children.values():
        with open(f"/proc/{child.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / os.sysconf("SC_CLK_TCK")


async def round_rate(log: EventLog, runs: int) -> float:
    nodes, edges = chain("set", 9)
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def one() -> None:
        async with slots:
            await run_once(log, nodes, edges)

    began = asyncio.get_running_loop().time()
    await asyncio.gather(*(one() for _ in range(runs)))
    return runs / (asyncio.get_running_loop().time() - began)


async def run() -> list[Figure]:
    receiver = OtlpReceiver()
    receiver.start()
    base = {"HEYM_OTEL_TRACES_SAMPLER_RATIO": "1.0", "HEYM_OTEL_EXPORT_DELAY_MS": "1000"}
    configs = {
        "off": {},
        "on (ratio 1.0, live receiver)": {
            **base,
            "HEYM_OTEL_ENABLED": "true",
            "HEYM_OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        },
        "on (unreachable endpoint)": {
            **base,
            "HEYM_OTEL_ENABLED": "true",
            "HEYM_OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}",
        },
    }
    rates: dict[str, list[float]] = {name: [] for name in configs}
    cpu: dict[str, float] = dict.fromkeys(configs, 0.0)
    spans: dict[str, int] = {}
    try:
        async with contextlib.AsyncExitStack() as stack:
            logs: dict[str, EventLog] = {}
            systems: dict[str, System] = {}
            for name, env in configs.items():
                systems[name] = await stack.enter_async_context(system_with(env))
                nc = await stack.enter_async_context(connected(systems[name].nats_url))
                logs[name] = EventLog(nc)
            for name in configs:  # warm-up
                await round_rate(logs[name], 50)
            for _ in range(ROUNDS):
                for name in configs:
                    before = cpu_seconds(systems[name])
                    rates[name].append(await round_rate(logs[name], RUNS_PER_ROUND))
                    cpu[name] += cpu_seconds(systems[name]) - before
            for name in configs:
                spans[name] = await spans_started(systems[name])
    finally:
        receiver.stop()
    off = statistics.median(rates["off"])
    measured = ROUNDS * RUNS_PER_ROUND
    off_cpu = cpu["off"] / measured
    figures = []
    for name, samples in rates.items():
        median = statistics.median(samples)
        figures.append(
            Figure(
                name=f"10-node workflow throughput, tracing {name}",
                unit="runs/s",
                value=median,
                params={
                    "rounds": [round(r, 1) for r in samples],
                    "vs_off": f"{(median / off - 1) * 100:+.1f}%",
                    "span_objects": spans[name],
                    "in_flight": IN_FLIGHT,
                },
            )
        )
        per_run = cpu[name] / measured
        figures.append(
            Figure(
                name=f"services' CPU per run, tracing {name}",
                unit="ms",
                value=per_run * 1000,
                params={"vs_off": f"{(per_run / off_cpu - 1) * 100:+.1f}%", "runs": measured},
            )
        )
    figures.append(
        Figure(
            name="spans received by the live receiver",
            unit="spans",
            value=float(len(receiver.spans)),
            params={"runs": (ROUNDS * RUNS_PER_ROUND) + 50},
        )
    )
    return figures
