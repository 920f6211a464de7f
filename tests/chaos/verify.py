"""What a workload must show after replicas, kills and restarts: no run lost, none stuck, every
output as on one replica, every side effect once, and read models equal to a rebuild.

The convergence check (as Restate's verifier does it): the projectors of the live system are
run again from the first event of the log into a fresh database, and every row they write for
the workload's runs must equal the live row.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import nats

from contracts.base import Envelope
from libs.db import create_pool
from libs.db.urls import with_database
from libs.eventlog import EventLog
from libs.projection import ProjectionRunner
from libs.projection.runner import Projector, projection_position
from libs.projection.statements import StatementBatch
from services.agent_runtime.projection import TraceProjector
from services.scheduler.projection import HistoryProjector
from tests.chaos.workload import Run, Workload, expected_outputs, side_effect_names

# Rows the projectors write per run, compared column by column.
TABLES = {
    "runs": "SELECT * FROM runs WHERE run_id = ANY($1) ORDER BY run_id",
    "run_nodes": "SELECT * FROM run_nodes WHERE run_id = ANY($1) ORDER BY run_id, sequence",
    "llm_traces": "SELECT * FROM llm_traces WHERE run_id = ANY($1) ORDER BY id",
    "agent_invocations": (
        "SELECT * FROM agent_invocations WHERE run_id = ANY($1) ORDER BY run_id, invocation_id"
    ),
}


@dataclass
class Report:
    runs: int
    completed: int = 0
    lost: list[str] = field(default_factory=list)  # never completed (within the deadline)
    wrong: list[str] = field(default_factory=list)  # completed with other outputs
    duplicated: list[str] = field(default_factory=list)  # a side effect executed as new twice
    missing_effects: list[str] = field(default_factory=list)
    re_executions: int = 0  # HTTP calls repeated with the same idempotency key
    diverged: list[str] = field(default_factory=list)  # read model != rebuild
    conflicts: int = 0
    seconds: float = 0.0
    p50_s: float = 0.0
    p95_s: float = 0.0
    kills: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost or self.wrong or self.duplicated or self.missing_effects or self.diverged
        )

    def lines(self) -> list[str]:
        return [
            f"runs {self.runs}, completed {self.completed}, lost/stuck {len(self.lost)}, "
            f"wrong outputs {len(self.wrong)}",
            f"side effects duplicated {len(self.duplicated)}, missing "
            f"{len(self.missing_effects)}, repeated calls deduplicated by key "
            f"{self.re_executions}",
            f"read models diverging from a rebuild: {len(self.diverged)}",
            f"conflicts {self.conflicts}; {self.seconds:.1f} s; run latency p50 "
            f"{self.p50_s:.2f} s p95 {self.p95_s:.2f} s",
            f"kills ({len(self.kills)}): {', '.join(self.kills) or '-'}",
        ]


def outcome(workload: Workload) -> Report:
    report = Report(runs=len(workload.runs))
    durations = []
    for run in workload.runs:
        if run.completed is None:
            report.lost.append(run.run_id)
            continue
        report.completed += 1
        if run.ended_at is not None:
            durations.append(run.ended_at - run.started_at)
        if run.completed.status != "success" or run.completed.outputs != expected_outputs(
            run.kind, run.index
        ):
            report.wrong.append(f"{run.kind} {run.run_id}: {run.completed}")
        _effects(workload, run, report)
    durations.sort()
    if durations:
        report.p50_s = durations[len(durations) // 2]
        report.p95_s = durations[int(len(durations) * 0.95)]
    return report


def _effects(workload: Workload, run: Run, report: Report) -> None:
    for name in side_effect_names(run.kind, run.run_id, run.index):
        keys = workload.target.side_effects.get(name, {})
        calls = workload.target.counts.get(f"/idem/{name}", 0)
        if not keys:
            report.missing_effects.append(name)
        elif len(keys) > 1:
            report.duplicated.append(f"{name}: {len(keys)} distinct keys")
        report.re_executions += max(0, calls - 1)


async def describe(nats_url: str, run_ids: list[str]) -> list[str]:
    """Every event of each run (subject, sequence, type): what a lost run was waiting for."""
    nc = await nats.connect(servers=nats_url.split(","))
    out = []
    try:
        log = EventLog(nc)
        for run_id in run_ids:
            out.append(f"run {run_id}:")
            for env in await log.read(f"heym.*.{run_id}.>"):
                out.append(f"  {env.sequence} {env.subject} {_brief(env.event)}")
    finally:
        await nc.close()
    return out


def _brief(event: object) -> str:
    """An event's type and the fields that tell a run's story (node, status, output keys)."""
    name = type(event).__name__
    parts = [
        f"{key}={getattr(event, key)!r}"
        for key in ("node_label", "status", "invocation_id", "request_id", "attempt")
        if getattr(event, key, None) not in (None, "")
    ]
    output = getattr(event, "output", None)
    if isinstance(output, dict):
        parts.append(f"output={sorted(output)[:8]}")
    return " ".join([name, *parts])


def conflicts_logged(log_dir: Path) -> int:
    """Conflicts every process logged (a killed replica's health counter dies with it)."""
    total = 0
    for path in log_dir.glob("*.log"):
        with contextlib.suppress(OSError):
            total += path.read_text(errors="replace").count("concurrency conflict on")
    return total


class _Renamed:
    """A projector under another consumer name, so a rebuild never touches the live one."""

    def __init__(self, inner: Projector, name: str) -> None:
        self._inner = inner
        self.name = name
        self.filter_subjects: Sequence[str] = inner.filter_subjects

    def project(self, envelope: Envelope, sql: StatementBatch) -> None:
        self._inner.project(envelope, sql)


async def _caught_up(pool: asyncpg.Pool[Any], name: str, last: int, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        async with pool.acquire() as conn:
            if await projection_position(conn, name) >= last:
                return
        await asyncio.sleep(0.2)
    raise AssertionError(f"projection {name} did not reach {last}")


async def convergence(
    nats_url: str, database_url: str, admin_url: str, template: str, run_ids: list[str]
) -> list[str]:
    """Rebuild the read models from the log into a fresh database; the differences."""
    nc = await nats.connect(servers=nats_url.split(","))
    log = EventLog(nc)
    fresh = f"verify_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f'CREATE DATABASE "{fresh}" TEMPLATE "{template}"')
    await admin.close()
    live = await create_pool(database_url, min_size=1, max_size=2)
    rebuilt = await create_pool(with_database(admin_url, fresh), min_size=1, max_size=4)
    differences: list[str] = []
    try:
        for projector in (HistoryProjector(), TraceProjector()):
            last = 0
            for subject in projector.filter_subjects:
                last = max(last, await log.last_sequence(subject))
            await _caught_up(live, projector.name, last, 120)
            renamed = _Renamed(projector, f"verify-{uuid.uuid4().hex[:8]}-{projector.name}")
            runner = ProjectionRunner(nc, rebuilt, renamed, event_log=log)
            task = asyncio.create_task(runner.run())
            try:
                await _caught_up(rebuilt, renamed.name, last, 300)
            finally:
                runner.stop()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 30)
        async with live.acquire() as a, rebuilt.acquire() as b:
            for table, query in TABLES.items():
                left = [dict(r) for r in await a.fetch(query, run_ids)]
                right = [dict(r) for r in await b.fetch(query, run_ids)]
                if left != right:
                    differences.append(f"{table}: live {len(left)} rows, rebuilt {len(right)}")
                    for x, y in zip(left, right, strict=False):
                        if x != y:
                            diff = {k: (x.get(k), y.get(k)) for k in x if x.get(k) != y.get(k)}
                            differences.append(f"  first difference: {diff}")
                            break
    finally:
        await live.close()
        await rebuilt.close()
        await nc.close()
        admin = await asyncpg.connect(admin_url)
        with contextlib.suppress(Exception):
            await admin.execute(f'DROP DATABASE IF EXISTS "{fresh}" WITH (FORCE)')
        await admin.close()
    return differences
