"""The sweeper: finds runs that have gone quiet while something should be moving, and re-drives
them. Nothing here decides anything new; it repeats what may have been lost, idempotently.

Every `interval` (one scheduler replica at a time, by a Postgres advisory lock) it reads the
runs the history read model still has as `running` and, for each one whose last recorded
event (on any of its subjects, agent turns included) is older than `quiet`:

- a timer whose time is long past and has not fired (a lost scheduled message) is fired;
- a dispatch whose message is gone from the stream (lost before any service took it) is
  appended again, as the same event (the executor records one result per invocation);
- an agent invocation that still owes a result is nudged (`agent.nudged`): its runtime
  decides again and repeats its idempotent effects;
- a child run that ended while its parent still waits has its end reported again;
- and the run itself is handed to the scheduler to be replayed and decided again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import nats.js.errors
from nats.aio.client import Client as NATS

from contracts import subjects
from contracts.agents import AgentNudged
from contracts.nodes import NodeDispatched, TimerFired
from contracts.runs import RunRequested
from libs.eventlog import EventLog
from services.scheduler.actors import RunRegistry
from services.scheduler.domain import RunState, evolve
from services.scheduler.effects import AGENT_NODE_TYPES, Effects

log = logging.getLogger(__name__)

_LOCK = 0x5EE9_0001
_BATCH = 500

_QUIET_RUNS = """
    SELECT run_id FROM runs
    WHERE status = 'running' AND requested_at < now() - make_interval(secs => $1)
    ORDER BY requested_at LIMIT $2"""

_ORPHANED_ENDS = """
    SELECT c.run_id FROM runs c JOIN runs p ON p.run_id = c.parent_run_id
    WHERE p.status = 'running' AND c.status IN ('success', 'error', 'cancelled')
      AND c.finished_at < now() - make_interval(secs => $1)
    ORDER BY c.finished_at LIMIT $2"""


@dataclass
class SweepReport:
    checked: int = 0
    redriven: list[str] = field(default_factory=list)
    timers_fired: int = 0
    redispatched: int = 0
    nudged: int = 0
    ends_reported: int = 0


@dataclass
class _Fold:
    state: RunState
    dispatches: dict[str, tuple[int, str, NodeDispatched]]


class Sweeper:
    def __init__(
        self,
        *,
        pool: asyncpg.Pool[Any],
        nc: NATS,
        event_log: EventLog,
        effects: Effects,
        registry: Callable[[], RunRegistry],
        interval_s: float,
        quiet_s: float,
    ) -> None:
        self._pool = pool
        self._js = nc.jetstream()
        self._log = event_log
        self._effects = effects
        self._registry = registry
        self._interval = interval_s
        self._quiet = quiet_s
        self._stopping = asyncio.Event()
        self.sweeps = 0

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self._interval)
            if self._stopping.is_set():
                return
            try:
                await self.sweep_once()
            except Exception:
                log.exception("sweep failed; trying again in %.0fs", self._interval)

    async def sweep_once(self) -> SweepReport | None:
        """One sweep, if no other replica is sweeping (None then)."""
        async with self._pool.acquire() as conn:
            if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", _LOCK):
                return None
            try:
                quiet = await conn.fetch(_QUIET_RUNS, self._quiet, _BATCH)
                orphans = await conn.fetch(_ORPHANED_ENDS, self._quiet, _BATCH)
            finally:
                await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK)
        report = SweepReport()
        for row in orphans:
            if await self._report_end(str(row["run_id"])):
                report.ends_reported += 1
        for row in quiet:
            run_id = str(row["run_id"])
            report.checked += 1
            if await self._quiet_for(run_id) >= self._quiet:
                await self._redrive(run_id, report)
        self.sweeps += 1
        if report.redriven or report.ends_reported:
            log.warning(
                "sweeper re-drove %d quiet run(s) %s: %d timer(s) fired, %d dispatch(es) "
                "re-sent, %d agent(s) nudged, %d child end(s) reported again",
                len(report.redriven),
                report.redriven[:10],
                report.timers_fired,
                report.redispatched,
                report.nudged,
                report.ends_reported,
            )
        return report

    async def _quiet_for(self, run_id: str) -> float:
        try:
            last = await self._js.get_last_msg(
                subjects.RUN_STREAM, subjects.run_everything(run_id), direct=True
            )
        except nats.js.errors.NotFoundError:
            return 0.0  # nothing recorded (purged): nothing to re-drive from
        if last.time is None:
            return self._quiet
        return time.time() - last.time.timestamp()

    async def _fold(self, run_id: str) -> _Fold | None:
        envelopes = await self._log.replay(run_id)
        request = next((e for e in envelopes if isinstance(e.event, RunRequested)), None)
        if request is None:
            return None
        assert isinstance(request.event, RunRequested)
        state = RunState.from_request(run_id, request.event, request.sequence)
        dispatches: dict[str, tuple[int, str, NodeDispatched]] = {}
        for env in envelopes:
            if env is request:
                continue
            if isinstance(env.event, NodeDispatched):
                dispatches[env.event.invocation_id] = (env.sequence, env.subject, env.event)
            evolve(state, env.event, env.sequence)
        return _Fold(state, dispatches)

    async def _redrive(self, run_id: str, report: SweepReport) -> None:
        fold = await self._fold(run_id)
        if fold is None or fold.state.completed is not None:
            return
        state = fold.state
        report.redriven.append(run_id)
        now = int(time.time() * 1000)
        for timer in list(state.timers.values()):
            if timer.timer_id not in state.fired and timer.fire_at_ms + self._quiet * 1000 < now:
                await self._log.append(
                    subjects.run_timer(run_id),
                    [TimerFired(timer_id=timer.timer_id)],
                    message_id=f"sweep-timer-{run_id}-{timer.timer_id}",
                )
                report.timers_fired += 1
        for invocation, node_id in list(state.inflight.items()):
            found = fold.dispatches.get(invocation)
            if found is None:
                continue  # a child run: its end is reported by `_report_end`
            sequence, subject, dispatch = found
            if not await self._exists(sequence):
                await self._log.append(
                    subject, [dispatch], message_id=f"redrive-{run_id}-{invocation}-{sequence}"
                )
                report.redispatched += 1
            elif state.graph.types.get(node_id) in AGENT_NODE_TYPES:
                await self._log.append(
                    subjects.agent(run_id, invocation),
                    [AgentNudged(reason="the run was quiet for too long")],
                    message_id=f"nudge-{run_id}-{invocation}-{now // 60_000}",
                )
                report.nudged += 1
        self._registry().redrive(run_id)

    async def _report_end(self, child_run_id: str) -> bool:
        fold = await self._fold(child_run_id)
        if fold is None or fold.state.completed is None:
            return False
        await self._effects.run_completed(fold.state, fold.state.completed)
        return True

    async def _exists(self, sequence: int) -> bool:
        try:
            await self._js.get_msg(subjects.RUN_STREAM, sequence, direct=True)
        except nats.js.errors.NotFoundError:
            return False
        return True
