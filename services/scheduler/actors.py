"""Run actors: one per active run, folding its events in order and appending its decisions.

The feed (one durable consumer over every run event) hands each message to its run's actor;
actors of different runs work concurrently, one run's messages are handled one batch at a
time, in delivery order. The cached state is only a cache: a run not in memory is rebuilt by
replaying its events, and every decision is appended with the run-wide expected sequence, so
a decision made on a stale view (another replica, an unseen result) is refused and remade.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope, Event
from contracts.runs import RunCompleted, RunRequested
from contracts.subjects import NO_SERVICE
from libs import telemetry
from libs.eventlog import ConcurrencyConflict, EventLog, PayloadTooLarge
from libs.expressions import evaluate_soon
from libs.service.partitioned import forget_partition
from libs.service.work import give_up, redelivery_delay, through_outages
from services.scheduler import tracing
from services.scheduler.domain import RunState, decide, evolve
from services.scheduler.domain.decide import DEFAULT_MAX_EVENT_BYTES, Decision
from services.scheduler.effects import Effects

log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 20

# `$credentials` of a run's owner (decrypted, never recorded), or {} when the run has none.
CredentialLoader = Callable[[RunRequested], Awaitable[dict[str, str]]]


async def no_credentials(_request: RunRequested) -> dict[str, str]:
    return {}


# Told the run id of each decision refused by a concurrent append (counted by the service).
OnConflict = Callable[[str], None]


def ignore_conflict(_run_id: str) -> None:
    return None


@dataclass(frozen=True)
class Limits:
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    # Deliveries of one message before its run is ended with the error (the consumer's own).
    max_deliver: int = 5
    backoff_s: float = 1.0


def now_ms() -> int:
    return int(time.time() * 1000)


def _decided(state: RunState, now: int, max_event_bytes: int) -> tuple[RunState, Decision]:
    """A decision made on a fresh copy of ``state`` (so it can be made again from the start)."""
    work = state.copy()
    return work, decide(work, now, max_event_bytes=max_event_bytes)


class RunActor:
    def __init__(
        self,
        run_id: str,
        event_log: EventLog,
        effects: Effects,
        *,
        limits: Limits,
        on_idle: Callable[[RunActor], None],
        credentials: CredentialLoader = no_credentials,
        on_conflict: OnConflict = ignore_conflict,
    ) -> None:
        self.run_id = run_id
        self._on_conflict = on_conflict
        self._credentials = credentials
        self._log = event_log
        self._effects = effects
        self._limits = limits
        self._on_idle = on_idle
        self.state: RunState | None = None
        # Set when this replica got the run's partition again: the cache may be behind.
        self.stale = False
        self._queue: list[tuple[list[Envelope], Msg | None]] = []
        self._task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        return self._task is not None

    def enqueue(self, envelopes: list[Envelope], msg: Msg | None) -> None:
        self._queue.append((envelopes, msg))
        if self._task is None:
            self._task = asyncio.create_task(self._drain(), name=f"run-{self.run_id}")

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    # Held messages are kept in progress by the partitioned consumer.
                    await through_outages(
                        functools.partial(self._afresh, batch), None, f"run {self.run_id}"
                    )
                except Exception as exc:
                    await self._failed(batch, exc)
                    continue
                for _, msg in batch:
                    if msg is not None:
                        with contextlib.suppress(Exception):
                            await msg.ack()
        finally:
            self._task = None
            if not self._queue:
                self._on_idle(self)

    async def _failed(self, batch: list[tuple[list[Envelope], Msg | None]], exc: Exception) -> None:
        msgs = [m for _, m in batch if m is not None]
        last_try = any(m.metadata.num_delivered >= self._limits.max_deliver for m in msgs)
        log.error(
            "run %s: handling failed (%s): %r",
            self.run_id,
            "giving up: the run ends with this error" if last_try else "will be redelivered",
            exc,
            exc_info=exc,
        )
        self.state = None  # the cache may be half-updated: rebuild on redelivery
        if last_try:
            # Re-queueing is bounded: a message that fails on every delivery ends its run with
            # a recorded error instead of leaving it "running" for ever (kept until recorded).
            error = f"the scheduler could not go on with this run: {exc!r}"
            through = _last(batch)
            await give_up(msgs, lambda: self.abort(error, through=through), f"run {self.run_id}")
            return
        for msg in msgs:
            with contextlib.suppress(Exception):
                delay = redelivery_delay(msg.metadata.num_delivered, self._limits.backoff_s)
                await msg.nak(delay=delay)

    async def abort(self, error: str, *, through: int = 0) -> None:
        """End the run with `error`, bypassing `decide` (which may be what keeps failing)."""
        envelopes = await self._log.replay(self.run_id, through=through)
        if not any(isinstance(e.event, RunRequested) for e in envelopes) or any(
            isinstance(e.event, RunCompleted) for e in envelopes
        ):
            return  # no such run (nothing to end), or it has ended already
        done = RunCompleted(status="error", error=error, finished_at_ms=now_ms())
        appended = await self._log.append(
            subjects.run_decisions(self.run_id, NO_SERVICE),
            [done],
            message_id=f"abort-{self.run_id}",
        )
        self.state = None
        with contextlib.suppress(Exception):  # the state may be what cannot be built
            await self._replay(appended.sequence)
            if self.state is not None:
                if not appended.duplicate:
                    tracing.ended(self.state, done)
                await self._effects.run_completed(self.state, done)

    async def _afresh(self, batch: list[tuple[list[Envelope], Msg | None]]) -> None:
        """Handle a batch; a failure drops the folded state (rebuilt by replay next time)."""
        try:
            await self._handle(batch)
        except Exception:
            self.state = None
            raise

    async def _handle(self, batch: list[tuple[list[Envelope], Msg | None]]) -> None:
        if self.state is None or self.stale:
            self.stale = False
            await self._load(batch)
        else:
            for envelopes, _ in batch:
                self._fold(envelopes)
        if self.state is not None:
            await self._decide()

    def _fold(self, envelopes: list[Envelope]) -> None:
        state = self.state
        assert state is not None
        # All events of one message share its sequence: fold a message whole, or not at all.
        if not envelopes or envelopes[0].sequence <= state.last_seq:
            return
        for env in envelopes:
            evolve(state, env.event, env.sequence)

    async def _load(self, batch: list[tuple[list[Envelope], Msg | None]]) -> None:
        first = batch[0][0][0] if batch and batch[0][0] else None
        if (
            first is not None
            and isinstance(first.event, RunRequested)
            and first.subject == subjects.run_commands(self.run_id)
            and batch[0][1] is not None
            and batch[0][1].metadata.num_delivered == 1
        ):
            # A brand-new run: its request is its first event, nothing to replay. If anything
            # was appended after it, the first decision's expected sequence catches it.
            self.state = RunState.from_request(self.run_id, first.event, first.sequence)
            self.state.credentials = await self._credentials(first.event)
            for envelopes, _ in batch:
                self._fold(envelopes)
            return
        # The replay must reach the delivered messages: on a NATS cluster it may be served by
        # a lagging replica, and a decision on that view would drop what they carry.
        await self._replay(_last(batch))
        if self.state is not None:
            await self._effects.resume(self.state)

    async def _replay(self, through: int = 0) -> None:
        envelopes = await self._log.replay(self.run_id, through=through)
        request = next((e for e in envelopes if isinstance(e.event, RunRequested)), None)
        if request is None:
            log.warning("run %s has events but no RunRequested; ignoring it", self.run_id)
            self.state = None
            return
        assert isinstance(request.event, RunRequested)
        state = RunState.from_request(self.run_id, request.event, request.sequence)
        state.credentials = await self._credentials(request.event)
        for env in envelopes:
            if env is not request:
                evolve(state, env.event, env.sequence)
        self.state = state

    async def _catch_up(self, through: int = 0) -> None:
        state = self.state
        assert state is not None
        for env in await self._log.replay(self.run_id, after=state.last_seq, through=through):
            evolve(state, env.event, env.sequence)

    async def _decide(self) -> None:
        for _ in range(MAX_CONFLICT_RETRIES):
            state = self.state
            assert state is not None
            # Deciding evaluates pure nodes' expressions: on this loop only within a small
            # slice, else (from the start, on a fresh copy) on the evaluation pool.
            work, decision = await evaluate_soon(
                functools.partial(_decided, state, now_ms(), self._limits.max_event_bytes)
            )
            if not decision.batches:
                return
            expected = state.last_seq
            try:
                for target, events in decision.batches:
                    expected = await self._append(target, events, expected)
            except ConcurrencyConflict as conflict:
                # Someone else wrote to the run (a result, a timer, another replica): fold
                # what we missed (at least up to the sequence the conflict reported), then
                # decide again. Part of a split decision may have landed; the catch-up folds
                # it like any other event.
                self._on_conflict(self.run_id)
                await self._catch_up(conflict.actual or 0)
                continue
            work.last_seq = expected
            self.state = work
            tracing.decided(state, work, decision.events)
            await self._effects.after_decision(work, decision.events)
            return
        raise RuntimeError(
            f"run {self.run_id}: still conflicting after {MAX_CONFLICT_RETRIES} tries"
        )

    async def _append(self, target: str, events: list[Event], expected: int) -> int:
        """Append a decision's batch; one over the message limit goes as several messages
        (every single event fits: `decide` fails what would not)."""
        state = self.state
        assert state is not None
        try:
            appended = await self._log.append(
                subjects.run_decisions(self.run_id, target),
                events,
                expected_sequence=expected,
                scope=subjects.run_all(self.run_id),
                # Every hop carries the run's trace: whoever acts on a decision (a service
                # running a node) writes its spans under the run span.
                traceparent=telemetry.header_of(tracing.run_trace(self.run_id, state.request)),
            )
        except PayloadTooLarge:
            if len(events) == 1:
                raise
            half = len(events) // 2
            expected = await self._append(target, events[:half], expected)
            return await self._append(target, events[half:], expected)
        return appended.sequence


class RunRegistry:
    """The actors of the runs this scheduler instance is working on."""

    def __init__(
        self,
        event_log: EventLog,
        effects: Effects,
        limits: Limits,
        credentials: CredentialLoader = no_credentials,
        on_conflict: OnConflict = ignore_conflict,
    ) -> None:
        self._log = event_log
        self._effects = effects
        self._limits = limits
        self._credentials = credentials
        self._on_conflict = on_conflict
        self._actors: dict[str, RunActor] = {}

    def __len__(self) -> int:
        return len(self._actors)

    def deliver(self, envelopes: list[Envelope], msg: Msg | None) -> None:
        if not envelopes or not envelopes[0].run_id:
            if msg is not None:
                asyncio.get_running_loop().create_task(msg.ack())
            return
        run_id = envelopes[0].run_id
        actor = self._actors.get(run_id)
        if actor is None:
            actor = RunActor(
                run_id,
                self._log,
                self._effects,
                limits=self._limits,
                on_idle=self._idle,
                credentials=self._credentials,
                on_conflict=self._on_conflict,
            )
            self._actors[run_id] = actor
        actor.enqueue(envelopes, msg)

    def redrive(self, run_id: str) -> None:
        """Replay the run and decide again (the sweeper's last resort), unless it is busy."""
        actor = self._actors.get(run_id)
        if actor is not None and actor.busy:
            return
        if actor is None:
            actor = RunActor(
                run_id,
                self._log,
                self._effects,
                limits=self._limits,
                on_idle=self._idle,
                credentials=self._credentials,
                on_conflict=self._on_conflict,
            )
            self._actors[run_id] = actor
        actor.state = None  # a full reload repeats the effects the run may still owe
        actor.enqueue([], None)

    def forget_partition(self, partition: int, partitions: int) -> None:
        """This replica got `partition` (again): its runs may have moved on elsewhere."""
        dropped = forget_partition(self._actors, partition, partitions, lambda run_id: run_id)
        if dropped:
            log.info("partition %d acquired: %d cached run(s) will reload", partition, dropped)

    async def abort(self, run_id: str, error: str) -> None:
        """End a run with `error` if it exists and has not ended (see `RunActor.abort`)."""
        actor = RunActor(
            run_id, self._log, self._effects, limits=self._limits, on_idle=lambda _: None
        )
        await actor.abort(error)

    def _idle(self, actor: RunActor) -> None:
        # Finished runs leave memory at once; a late message reloads them by replay.
        finished = actor.state is None or actor.state.completed is not None
        if finished and self._actors.get(actor.run_id) is actor:
            del self._actors[actor.run_id]


def _last(batch: list[tuple[list[Envelope], Msg | None]]) -> int:
    """The highest stream sequence among a batch's delivered events (0 if none)."""
    return max((env.sequence for envelopes, _ in batch for env in envelopes), default=0)
