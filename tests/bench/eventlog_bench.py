"""Event log benchmarks: durable append latency, replay rate, projector throughput."""

from __future__ import annotations

import asyncio
import time
import uuid

import asyncpg

from contracts import subjects
from contracts.runs import RunCompleted, RunRequested, RunStarted
from libs.db import apply_migrations, create_pool
from libs.eventlog import EventLog
from libs.projection import ProjectionRunner
from libs.testing.eventually import eventually
from services.scheduler.projection import HistoryProjector
from tests.bench.harness import Figure, bench_nats, bench_postgres, latency, rate


def event(i: int) -> RunStarted:
    # about 300 bytes on the wire, like a typical node result
    return RunStarted(workflow_id=f"wf-{i:06d}-" + "x" * 240, started_at_ms=i)


async def append_latency(writers: int, per_writer: int) -> Figure:
    async with bench_nats() as nc:
        log = EventLog(nc)
        samples: list[float] = []

        async def writer(w: int) -> None:
            run_id = uuid.uuid4().hex
            subject = subjects.node(run_id, "n1")
            last = 0
            for i in range(per_writer):
                t = time.perf_counter()
                appended = await log.append(subject, [event(i)], expected_sequence=last)
                samples.append(time.perf_counter() - t)
                last = appended.sequence

        await writer(-1)  # warm-up
        samples.clear()
        t0 = time.perf_counter()
        await asyncio.gather(*(writer(w) for w in range(writers)))
        elapsed = time.perf_counter() - t0
    fig = latency(
        f"append durable, {writers} writer{'s' if writers > 1 else ''}",
        samples,
        writers=writers,
        appends_per_s=round(len(samples) / elapsed),
        sync="always",
    )
    return fig


async def replay_rate(events: int) -> Figure:
    # Loading 100k events through fsync-per-message would take minutes and measures nothing
    # about replay, so the run is loaded into a server without sync_interval: always.
    async with bench_nats(durable=False) as nc:
        log = EventLog(nc)
        js = nc.jetstream()
        run_id = uuid.uuid4().hex
        subject = subjects.node(run_id, "n1")
        body = log.codec.encode([event(0)])
        pending = []
        for i in range(events):
            pending.append(
                await js.publish_async(subject, body, headers={"Nats-Msg-Id": f"{run_id}-{i}"})
            )
            if len(pending) >= 2000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
        t = time.perf_counter()
        replayed = await log.replay(run_id)
        elapsed = time.perf_counter() - t
        assert len(replayed) == events
    return rate(f"replay, run of {events:,} events", events, elapsed)


async def projector_throughput(runs: int) -> Figure:
    with bench_postgres() as url:
        conn = await asyncpg.connect(url)
        await apply_migrations(conn)
        await conn.close()
        async with bench_nats(durable=False) as nc:
            log = EventLog(nc)
            for i in range(runs):
                run_id = uuid.uuid4().hex
                await log.append(
                    subjects.run_commands(run_id),
                    [RunRequested(workflow_id=f"wf-{i}", inputs={"i": i})],
                )
                await log.append(
                    subjects.run_decisions(run_id, "none"),
                    [RunStarted(workflow_id="w", started_at_ms=i)],
                )
                await log.append(
                    subjects.run_decisions(run_id, "none"),
                    [RunCompleted(status="success", outputs={"i": i})],
                )
            last = await log.last_sequence("heym.run.>")
            pool = await create_pool(url)
            runner = ProjectionRunner(nc, pool, HistoryProjector(), event_log=log)
            t = time.perf_counter()
            task = asyncio.create_task(runner.run())
            await eventually(lambda: runner.position >= last, timeout=600, interval=0.005)
            elapsed = time.perf_counter() - t
            runner.stop()
            await task
            await pool.close()
    return rate("projector into Postgres", runs * 3, elapsed, batch=512, fsync="on")


async def run() -> list[Figure]:
    return [
        await append_latency(1, 1000),
        await append_latency(8, 250),
        await replay_rate(1_000),
        await replay_rate(100_000),
        await projector_throughput(3_000),
    ]
