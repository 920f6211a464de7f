"""Invocation actors: one per agent invocation with work in hand, folding its events in order
and performing the steps the decider picks until it has to wait.

The feed (one durable consumer over `heym.agent.>`) hands each message to its invocation's
actor. An actor handles its messages one batch at a time: fold, then `next_step` → perform →
record → fold → … until the step is `Wait` (children are working; their ends arrive as
events) or `Done`. The batch's messages are acknowledged only then, so work in progress is
always owned by an unacknowledged message (kept alive while it runs): a runtime that dies
mid-step has the message redelivered and another process replays and continues. While an
invocation waits, no message is held and no coroutine awaits anything: the folded state is
only a cache, evicted freely.

A cancel for an invocation whose step is running stops the step at once (the in-flight model
request is dropped); the decider then sees the cancel and ends the invocation.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable

from nats.aio.msg import Msg

from contracts import subjects
from contracts.agents import AgentCancelRequested
from contracts.base import Envelope, Event
from libs.eventlog import ConcurrencyConflict, EventLog
from libs.service.partitioned import forget_partition
from libs.service.work import give_up, redelivery_delay, through_outages
from services.agent_runtime import tracing
from services.agent_runtime.call import AgentCall
from services.agent_runtime.domain import (
    AgentState,
    CallModel,
    Cancel,
    Classify,
    Done,
    Fail,
    Finish,
    GraceLimit,
    Paused,
    Step,
    Unrequested,
    Wait,
    call_id,
    evolve,
    next_step,
)
from services.agent_runtime.steps import (
    Services,
    StepContext,
    fail_with,
    perform,
    report_pause,
    resend_review,
)
from services.agent_runtime.tools.plan import plan_tools

log = logging.getLogger(__name__)

MAX_STEPS_PER_BATCH = 10_000
KEEPALIVE_S = 3.0
CACHED_IDLE = 4096


# Steps that record before they act outside the invocation (start children, deliver a result,
# report a pause): events held by the step before may wait for their append. Before any other
# step the held events are appended on their own.
_RECORDS_FIRST = (CallModel, Classify, Finish, Fail, Cancel, GraceLimit)


class _Stale(Exception):
    """Someone appended to the invocation since the state was folded: catch up (at least to
    `actual`, the last sequence the conflict reported), decide again."""

    def __init__(self, actual: int) -> None:
        super().__init__(actual)
        self.actual = actual


def _ms(env: Envelope) -> int:
    return int(env.recorded_at.timestamp() * 1000)


class InvocationActor:
    def __init__(
        self,
        run_id: str,
        invocation_id: str,
        event_log: EventLog,
        services: Services,
        *,
        max_deliver: int,
        model_attempts: int,
        on_idle: Callable[[InvocationActor], None],
        backoff_s: float = 1.0,
        on_conflict: Callable[[str], None] | None = None,
    ) -> None:
        self._on_conflict = on_conflict
        self.run_id = run_id
        self.invocation_id = invocation_id
        self.subject = subjects.agent(run_id, invocation_id)
        self._log = event_log
        self._services = services
        self._max_deliver = max_deliver
        self._model_attempts = model_attempts
        self._backoff_s = backoff_s
        self._on_idle = on_idle
        self.state: AgentState | None = None
        # Set when this replica got the run's partition again: the cache may be behind.
        self.stale = False
        self._ctx: StepContext | None = None
        self._queue: list[tuple[list[Envelope], Msg | None]] = []
        self._task: asyncio.Task[None] | None = None
        self._step: asyncio.Task[None] | None = None
        self._reported: set[str] = set()
        # Folded but not appended yet (`StepContext.record_soon`); they go with the next append.
        self._held: list[Event] = []

    @property
    def busy(self) -> bool:
        return self._task is not None

    def enqueue(self, envelopes: list[Envelope], msg: Msg | None) -> None:
        self._queue.append((envelopes, msg))
        if self._step is not None and any(
            isinstance(e.event, AgentCancelRequested) for e in envelopes
        ):
            self._step.cancel()  # stop the model request or tool planning in flight now
        if self._task is None:
            self._task = asyncio.create_task(self._drain(), name=f"agent-{self.invocation_id}")

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                msgs = [m for _, m in batch if m is not None]
                try:
                    async with _kept_alive(msgs):
                        await through_outages(
                            functools.partial(self._afresh, batch), None, self.subject
                        )
                except Exception as exc:
                    await self._failed(batch, msgs, exc)
                    continue
                for msg in msgs:
                    with contextlib.suppress(Exception):
                        await msg.ack()
        finally:
            self._task = None
            if not self._queue:
                self._on_idle(self)

    async def _failed(
        self, batch: list[tuple[list[Envelope], Msg | None]], msgs: list[Msg], exc: Exception
    ) -> None:
        log.error(
            "agent %s/%s: step failed: %r", self.run_id, self.invocation_id, exc, exc_info=exc
        )
        self.state, self._ctx = None, None  # the cache may be half-updated: rebuild by replay
        self._held = []
        last_try = any(m.metadata.num_delivered >= self._max_deliver for m in msgs)
        if last_try:
            # Every delivery failed: end the invocation with a recorded error instead of
            # leaving its run waiting for ever (kept until that is recorded).
            error = f"internal error in the agent runtime: {exc!r}"
            await give_up(msgs, lambda: self.record_failure(error), self.subject)
            return
        for msg in msgs:
            with contextlib.suppress(Exception):
                delay = redelivery_delay(msg.metadata.num_delivered, self._backoff_s)
                await msg.nak(delay=delay)

    async def record_failure(self, error: str) -> None:
        await self._load()
        if self.state is None or self.state.request is None or self.state.finished is not None:
            return
        ctx = self._context()
        await fail_with(ctx, error, retryable=False)

    # -- handling ------------------------------------------------------------------------------
    async def _afresh(self, batch: list[tuple[list[Envelope], Msg | None]]) -> None:
        """Handle a batch; a failure drops the folded state (rebuilt by replay next time)."""
        try:
            await self._handle(batch)
        except Exception:
            self.state, self._ctx = None, None
            raise

    async def _handle(self, batch: list[tuple[list[Envelope], Msg | None]]) -> None:
        if self.state is None or self.stale:
            self.stale = False
            # The read must reach the delivered messages: on a NATS cluster it may be served
            # by a lagging replica, and deciding on that view would drop what they carry.
            mine = [e.sequence for envs, _ in batch for e in envs if e.subject == self.subject]
            await self._load(through=max(mine, default=0))
            await self._resume()
        else:
            for envelopes, _ in batch:
                self._fold(envelopes)
        await self._advance()

    def _fold(self, envelopes: list[Envelope]) -> None:
        state = self.state
        assert state is not None
        # All events of one message share its sequence: fold a message whole, or not at all.
        if not envelopes or envelopes[0].sequence <= state.last_seq:
            return
        for env in envelopes:
            evolve(state, env.event, env.sequence, at_ms=_ms(env), traceparent=env.traceparent)

    async def _load(self, through: int = 0) -> None:
        self._held = []
        state = AgentState()
        for env in await self._log.read(self.subject, through=through):
            evolve(state, env.event, env.sequence, at_ms=_ms(env), traceparent=env.traceparent)
        self.state = state
        self._ctx = None

    async def _catch_up(self, through: int = 0) -> None:
        assert self.state is not None
        for env in await self._log.read(self.subject, after=self.state.last_seq, through=through):
            self._fold([env])

    async def _resume(self) -> None:
        """Repeat what the reloaded state may still owe; every effect is idempotent."""
        state = self.state
        assert state is not None
        if state.request is None:
            return
        ctx = self._context()
        effects = self._services.effects
        step = self._next(state)
        if isinstance(step, Done) and state.finished is not None:
            if state.finished.status == "cancelled" and state.current_turn is not None:
                pending = list(state.current_turn.dispatched.values())
                reason = state.cancel.reason if state.cancel else "cancelled"
                await effects.cancel_children(ctx.call, pending, reason)
            await effects.deliver(ctx.call, state)
            await effects.request_extraction(ctx.call, state)
        elif isinstance(step, Wait | Paused) and state.current_turn is not None:
            turn = state.current_turn
            waiting = [
                c
                for c in turn.missing()
                if call_id(c) in turn.dispatched and turn.dispatched[call_id(c)].source != "hitl"
            ]
            plan = plan_tools(
                ctx.call, len(state.turns), waiting, ctx.specs(), now_ms=turn.dispatched_at_ms
            )
            await effects.dispatch(ctx.call, plan.dispatches)
            if isinstance(step, Paused):
                await resend_review(ctx, step)

    async def _report(self, step: Paused) -> None:
        """Report a pause up once per process (a reloaded actor reports again: idempotent)."""
        if step.payload is None or step.request_id in self._reported:
            return
        await report_pause(self._context(), step)
        self._reported.add(step.request_id)

    def _next(self, state: AgentState) -> Step:
        return next_step(state, model_attempts=self._model_attempts)

    def _context(self) -> StepContext:
        state = self.state
        assert state is not None
        assert state.request is not None
        if self._ctx is None or self._ctx.state is not state:
            call = AgentCall.from_request(
                self.run_id,
                state.request,
                requested_at_ms=state.requested_at_ms,
                traceparent=state.traceparent,
            )
            self._ctx = StepContext(
                state=state,
                call=call,
                record=self._record,
                services=self._services,
                hold=self._hold,
            )
        return self._ctx

    def _hold(self, events: list[Event]) -> None:
        state = self.state
        assert state is not None
        for event in events:
            evolve(state, event, state.last_seq)
        self._held.extend(events)

    async def _record(self, events: list[Event]) -> None:
        """Append the held events and `events` as one message (one decision, one append)."""
        state = self.state
        assert state is not None
        ctx = self._context()
        batch = [*self._held, *events]
        try:
            appended = await self._log.append(
                self.subject,
                batch,
                expected_sequence=state.last_seq,
                correlation_id=ctx.call.correlation_id,
                traceparent=ctx.call.traceparent,
            )
        except ConcurrencyConflict as conflict:
            raise _Stale(conflict.actual or 0) from None
        self._held = []
        for event in events:
            evolve(state, event, appended.sequence)
        state.last_seq = max(state.last_seq, appended.sequence)
        tracing.recorded(ctx.call, state, batch, at_ms=int(time.time() * 1000))

    async def _recover(self, through: int = 0) -> None:
        """After a conflict: fold what was missed (at least up to `through`, the sequence the
        conflict reported); a state holding unappended events is rebuilt from the log instead
        (they were never recorded)."""
        if self._held:
            await self._load(through=through)
        else:
            await self._catch_up(through)

    async def _advance(self) -> None:
        for _ in range(MAX_STEPS_PER_BATCH):
            state = self.state
            assert state is not None
            step = self._next(state)
            if self._held and not isinstance(step, _RECORDS_FIRST):
                try:
                    await self._record([])
                except _Stale as stale:
                    if self._on_conflict is not None:
                        self._on_conflict(self.subject)
                    await self._recover(stale.actual)
                continue
            if isinstance(step, Paused):
                await self._report(step)
                return
            if isinstance(step, Wait | Done | Unrequested):
                return
            ctx = self._context()
            self._step = asyncio.create_task(perform(ctx, step))
            try:
                await self._step
            except _Stale as stale:
                if self._on_conflict is not None:
                    self._on_conflict(self.subject)
                await self._recover(stale.actual)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # the runtime itself is stopping
                if isinstance(step, Cancel):
                    raise RuntimeError("the cancel step itself was cancelled") from None
                await self._catch_up()  # a cancel arrived: it is in the log, fold it
            finally:
                self._step = None
        raise RuntimeError(f"agent {self.invocation_id}: no end after {MAX_STEPS_PER_BATCH} steps")


@contextlib.asynccontextmanager
async def _kept_alive(msgs: list[Msg]) -> AsyncIterator[None]:
    """Tell JetStream the work is in progress while a step runs, so a long model call is not
    redelivered as lost, while a crashed runtime's work is (after `ack_wait`)."""
    if not msgs:
        yield
        return

    async def beat() -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_S)
            for msg in msgs:
                with contextlib.suppress(Exception):
                    await msg.in_progress()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class InvocationRegistry:
    """The actors of this runtime: busy ones, plus a bounded cache of idle folded states."""

    def __init__(
        self,
        event_log: EventLog,
        services: Services,
        *,
        max_deliver: int,
        model_attempts: int,
        backoff_s: float = 1.0,
        on_conflict: Callable[[str], None] | None = None,
    ) -> None:
        self._on_conflict = on_conflict
        self._backoff_s = backoff_s
        self._log = event_log
        self._services = services
        self._max_deliver = max_deliver
        self._model_attempts = model_attempts
        self._actors: OrderedDict[str, InvocationActor] = OrderedDict()

    def __len__(self) -> int:
        return sum(1 for a in self._actors.values() if a.busy)

    def deliver(self, envelopes: list[Envelope], msg: Msg | None) -> None:
        if not envelopes:
            if msg is not None:
                asyncio.get_running_loop().create_task(msg.ack())
            return
        parts = envelopes[0].subject.split(".")
        if len(parts) != 4 or parts[1] != "agent":
            if msg is not None:
                asyncio.get_running_loop().create_task(msg.term())
            return
        key = envelopes[0].subject
        actor = self._actors.get(key)
        if actor is None:
            actor = InvocationActor(
                parts[2],
                parts[3],
                self._log,
                self._services,
                max_deliver=self._max_deliver,
                model_attempts=self._model_attempts,
                on_idle=self._idle,
                backoff_s=self._backoff_s,
                on_conflict=self._on_conflict,
            )
            self._actors[key] = actor
        self._actors.move_to_end(key)
        actor.enqueue(envelopes, msg)

    def forget_partition(self, partition: int, partitions: int) -> None:
        """This replica got `partition` (again): its invocations may have moved on elsewhere."""
        dropped = forget_partition(self._actors, partition, partitions, _run_of)
        if dropped:
            log.info("partition %d acquired: %d cached agent(s) will reload", partition, dropped)

    async def fail(self, subject: str, error: str) -> None:
        """End the invocation on `subject` with `error` (its messages cannot be handled)."""
        parts = subject.split(".")
        if len(parts) != 4 or parts[1] != "agent":
            return
        actor = InvocationActor(
            parts[2],
            parts[3],
            self._log,
            self._services,
            max_deliver=self._max_deliver,
            model_attempts=self._model_attempts,
            on_idle=lambda _: None,
        )
        await actor.record_failure(error)

    def _idle(self, actor: InvocationActor) -> None:
        finished = actor.state is None or actor.state.finished is not None
        if finished and self._actors.get(actor.subject) is actor:
            del self._actors[actor.subject]
        # Waiting invocations stay cached (a cache: a later event reloads an evicted one).
        while len(self._actors) > CACHED_IDLE:
            oldest_key, oldest = next(iter(self._actors.items()))
            if oldest.busy:
                self._actors.move_to_end(oldest_key)
                break
            del self._actors[oldest_key]


def _run_of(subject: str) -> str:
    """`heym.agent.<run>.<invocation>` -> the run id (what the agent feed partitions by)."""
    return subject.split(".")[2]
