"""Conversation actors: one per active conversation, folding its events and driving its turn.

A message on a conversation's command subject (a user message, a run's end, a fired timer,
a cancel) wakes its actor: it catches up with the log, then loops decide -> perform ->
append until the decision is to wait (`Idle`). Every append carries the conversation-wide
expected sequence, so a step decided on a stale view is refused: the actor reads what it
missed and decides again, reusing the result of work already done when the same step is
still wanted (a model round is never asked twice because a message was queued meanwhile).

The triggering messages stay unacknowledged (kept alive) while the actor works, so a runtime
killed mid-turn has them redelivered to its successor, which replays the conversation and
goes on from the last recorded step. Nothing waits in memory: when the turn waits for a run
or a timer, the actor acknowledges and may be dropped; the awaited event wakes it again.

A cancel interrupts the step in flight at once (the model request is cancelled), whichever
way it arrives first: the durable consumer, or the core subscription every replica has.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from contracts.chat import ChatCancelRequested, ChatConversationDeleted
from libs.chat import Conversation, fold_all
from libs.eventlog import ConcurrencyConflict, EventLog, PayloadTooLarge
from libs.eventlog.log import Appended
from libs.service.work import through_outages
from services.agent_runtime.assistant import tracing
from services.agent_runtime.assistant.domain import Idle, Record, Step, decide, step_key
from services.agent_runtime.assistant.domain.decide import fail
from services.agent_runtime.assistant.effects import Effects
from services.agent_runtime.assistant.work import Work

log = logging.getLogger(__name__)

MAX_STEPS_PER_WAKE = 2_000
KEEPALIVE_S = 3.0
CACHED_CONVERSATIONS = 512
STOP_VISIBLE_S = 5.0
Decider = Callable[[Conversation, int], Any]


def now_ms() -> int:
    return int(time.time() * 1000)


@contextlib.asynccontextmanager
async def kept_alive(msgs: list[Msg], every_s: float = KEEPALIVE_S) -> AsyncIterator[None]:
    """Tell JetStream the messages are being worked on, so they are not redelivered while the
    turn runs, but are after `ack_wait` if this process dies."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every_s)
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


class ConversationActor:
    def __init__(
        self,
        conversation_id: str,
        event_log: EventLog,
        effects: Effects,
        *,
        on_idle: Callable[[ConversationActor], None],
        decider: Decider = decide,
        on_conflict: Callable[[str], None] | None = None,
    ) -> None:
        self._on_conflict = on_conflict
        self.conversation_id = conversation_id
        self._decide = decider
        self._log = event_log
        self._effects = effects
        self._on_idle = on_idle
        self.state: Conversation | None = None
        self._inbox: list[tuple[list[Envelope], Msg | None]] = []
        self._task: asyncio.Task[None] | None = None
        self._inflight: asyncio.Task[Work] | None = None
        self._inflight_turn: str | None = None
        self._pending: tuple[tuple[str, ...], Work] | None = None

    @property
    def busy(self) -> bool:
        return self._task is not None

    def deliver(self, envelopes: list[Envelope], msg: Msg | None) -> None:
        self._inbox.append((envelopes, msg))
        self.interrupt([e.event for e in envelopes])
        if self._task is None:
            self._task = asyncio.create_task(self._drain(), name=f"chat-{self.conversation_id}")

    def interrupt(self, events: list[object]) -> None:
        """Cancel the step in flight when one of `events` stops its turn."""
        task = self._inflight
        if task is None or task.done():
            return
        for ev in events:
            stop = isinstance(ev, ChatConversationDeleted) or (
                isinstance(ev, ChatCancelRequested) and ev.turn_id == self._inflight_turn
            )
            if stop:
                log.info("conversation %s: cancelling the step in flight", self.conversation_id)
                task.cancel()
                return

    async def _drain(self) -> None:
        try:
            while self._inbox:
                batch, self._inbox = self._inbox, []
                msgs = [m for _, m in batch if m is not None]
                try:
                    async with kept_alive(msgs):
                        # The read must reach the delivered commands (a lagging replica of a
                        # NATS cluster may serve it; deciding on its view would drop them).
                        through = max((e.sequence for envs, _ in batch for e in envs), default=0)
                        await through_outages(
                            functools.partial(self._afresh, through),
                            None,
                            f"conversation {self.conversation_id}",
                        )
                except Exception:
                    log.exception(
                        "conversation %s: handling failed; redelivery will retry",
                        self.conversation_id,
                    )
                    self.state = None  # rebuild from the log on the next delivery
                    for msg in msgs:
                        with contextlib.suppress(Exception):
                            await msg.nak(delay=1.0)
                    continue
                for msg in msgs:
                    with contextlib.suppress(Exception):
                        await msg.ack()
        finally:
            self._task = None
            self._on_idle(self)

    async def _afresh(self, through: int) -> None:
        """Catch up and drive; a failure drops the folded state (rebuilt next time)."""
        try:
            await self._catch_up(through)
            await self._drive()
        except Exception:
            self.state = None
            raise

    async def _catch_up(self, through: int = 0) -> None:
        filter_subject = subjects.chat_all(self.conversation_id)
        if self.state is None:
            read = await self._log.read(filter_subject, through=through)
            self.state = fold_all(self.conversation_id, read)
            await self._effects.resume(self.state)
            return
        for env in await self._log.read(filter_subject, after=self.state.last_seq, through=through):
            self.state.fold(env)

    async def _drive(self) -> None:
        for _ in range(MAX_STEPS_PER_WAKE):
            state = self.state
            assert state is not None
            step = self._decide(state, now_ms())
            if isinstance(step, Idle):
                self._pending = None
                return
            work = await self._work(state, step)
            if work is None:  # interrupted: read the cancel from the log and decide again
                await self._await_stop(getattr(step, "turn", None))
                continue
            try:
                appended = await self._append(state, work)
            except PayloadTooLarge as exc:
                turn = getattr(step, "turn", None)
                if turn is None:
                    raise
                # Model output or a result too big to record ends the turn with a clear error
                # instead of failing the same append on every redelivery.
                log.warning("conversation %s: %s", self.conversation_id, exc)
                work = Work(
                    fail(
                        state, turn, "Heym chat failed: a step was too large to record", now_ms()
                    ).events
                )
                appended = await self._append(state, work)
            except ConcurrencyConflict as conflict:
                if self._on_conflict is not None:
                    self._on_conflict(self.conversation_id)
                self._pending = (step_key(step), work)
                await self._catch_up(conflict.actual or 0)
                continue
            self._pending = None
            for ev in work.events:
                state.apply(ev, appended.sequence)
            tracing.recorded(state, list(work.events), at_ms=now_ms())
            for after in work.after:
                await after()
        raise RuntimeError(f"conversation {self.conversation_id}: too many steps in one wake")

    async def _append(self, state: Conversation, work: Work) -> Appended:
        return await self._log.append(
            subjects.chat_turns(self.conversation_id),
            work.events,
            expected_sequence=state.last_seq,
            scope=subjects.chat_all(self.conversation_id),
            message_id=f"chat-{self.conversation_id}-{state.last_seq}",
            correlation_id=self.conversation_id,
        )

    async def _await_stop(self, turn: object) -> None:
        """Catch up until the interrupting cancel is in the log: a core subscriber can see a
        message before the stream has stored it, and deciding without it would redo the
        interrupted step."""
        turn_id = getattr(turn, "turn_id", None)
        deadline = time.monotonic() + STOP_VISIBLE_S
        while True:
            await self._catch_up()
            state = self.state
            assert state is not None
            current = state.current
            stopped = current is None or current.turn_id != turn_id or current.cancel is not None
            if stopped or state.deleted or time.monotonic() > deadline:
                return
            await asyncio.sleep(0.02)

    async def _work(self, state: Conversation, step: Step) -> Work | None:
        key = step_key(step)
        if self._pending is not None and self._pending[0] == key and not isinstance(step, Record):
            return self._pending[1]
        self._pending = None
        turn = getattr(step, "turn", None)
        self._inflight_turn = turn.turn_id if turn is not None else None
        task = asyncio.create_task(self._effects.perform(state, step))
        self._inflight = task
        try:
            await asyncio.wait({task})
        finally:
            self._inflight = None
            if not task.done():  # this drain itself is being cancelled (shutdown)
                task.cancel()
        if task.cancelled():
            return None
        try:
            return task.result()
        except Exception as exc:
            if turn is None:
                raise
            # A step that fails unexpectedly ends the turn with a clear, secret-free error
            # instead of retrying the same failure forever.
            log.exception("conversation %s: step %s failed", self.conversation_id, key)
            message = f"Heym chat failed: internal error ({type(exc).__name__})"
            return Work(fail(state, turn, message, now_ms()).events)


class Assistant:
    """The conversation actors of this runtime; idle ones stay cached (bounded)."""

    def __init__(
        self,
        event_log: EventLog,
        effects: Effects,
        decider: Decider = decide,
        on_conflict: Callable[[str], None] | None = None,
    ) -> None:
        self._on_conflict = on_conflict
        self._log = event_log
        self._effects = effects
        self._decide = decider
        self._actors: OrderedDict[str, ConversationActor] = OrderedDict()

    def __len__(self) -> int:
        return len(self._actors)

    def deliver(self, envelopes: list[Envelope], msg: Msg | None) -> None:
        if not envelopes:
            if msg is not None:
                asyncio.get_running_loop().create_task(msg.ack())
            return
        try:
            conversation_id = subjects.conversation_of(envelopes[0].subject)
        except subjects.SubjectError:
            if msg is not None:
                asyncio.get_running_loop().create_task(msg.term())
            return
        actor = self._actors.get(conversation_id)
        if actor is None:
            actor = ConversationActor(
                conversation_id,
                self._log,
                self._effects,
                on_idle=self._idle,
                decider=self._decide,
                on_conflict=self._on_conflict,
            )
            self._actors[conversation_id] = actor
        self._actors.move_to_end(conversation_id)
        actor.deliver(envelopes, msg)

    def interrupt(self, subject: str, events: list[object]) -> None:
        """From the core subscription (every replica): stop a step in flight here."""
        with contextlib.suppress(subjects.SubjectError):
            actor = self._actors.get(subjects.conversation_of(subject))
            if actor is not None:
                actor.interrupt(events)

    def _idle(self, actor: ConversationActor) -> None:
        while len(self._actors) > CACHED_CONVERSATIONS:
            oldest_id, oldest = next(iter(self._actors.items()))
            if oldest.busy:
                break
            del self._actors[oldest_id]
