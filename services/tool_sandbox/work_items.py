"""Agent tool calls as work items: `heym.work.<run>.tool_sandbox.<item>` in, one result out.

Guarantee: a call is executed at least once and its result is recorded exactly once.
- A `SandboxToolDispatched` is taken by any replica and queued fairly (per user); while it
  waits or runs the delivery is kept alive, so only a crashed replica's work is redelivered.
- The result is appended to the calling agent's aggregate `heym.agent.<run>.<invocation>` as a
  `ToolCallRecorded` with the message id `tool-<run>-<invocation>-<tool_call_id>` (duplicates
  within the stream's window are dropped by the server).
- Before running a redelivered item (or one that waited in the queue) the sandbox reads that
  aggregate: a call whose result is recorded is never run again. A call interrupted by a crash
  runs again, so tools with side effects should be idempotent: key the effect on the
  `tool_call_id` (skills and Python tools receive no id; write the effect so that repeating it
  is harmless, e.g. an upsert keyed on the input).
- A `SandboxToolCancelled` on the same subject kills the call's process (any replica: the
  one that receives it tells the others) and records a `cancelled` result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict

import msgspec
from nats.aio.msg import Msg

from contracts import subjects
from contracts.agents import ToolCallRecorded
from contracts.base import Envelope
from contracts.tools import (
    TOOL_CANCEL_BROADCAST,
    SandboxToolCancelled,
    SandboxToolDispatched,
    tool_result_message_id,
)
from libs.eventlog import EventLog, PayloadTooLarge
from libs.service.work import give_up, kept_alive, redelivery_delay, through_outages
from services.tool_sandbox.executor import PROCESS_SOURCES, ToolExecutor
from services.tool_sandbox.fairness import FairScheduler
from services.tool_sandbox.outcome import Outcome

log = logging.getLogger(__name__)

KEEPALIVE_S = 3.0
RECHECK_AFTER_WAIT_S = 1.0
REMEMBER_CANCELLED = 10_000


def _now_ms() -> int:
    return int(time.time() * 1000)


class _CancelNote(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    tool_call_id: str
    reason: str = "cancelled"


class ToolCalls:
    def __init__(
        self,
        event_log: EventLog,
        executor: ToolExecutor,
        *,
        io: FairScheduler,
        processes: FairScheduler,
        max_deliver: int = 5,
        backoff_s: float = 1.0,
    ) -> None:
        self._log = event_log
        self._max_deliver = max_deliver
        self._backoff_s = backoff_s
        self._executor = executor
        self._io = io
        self._processes = processes
        self._cancelled: OrderedDict[str, str] = OrderedDict()
        self._extra_msgs: dict[str, list[Msg]] = {}
        self._keepalives: set[asyncio.Task[None]] = set()
        self._done: dict[str, asyncio.Event] = {}

    @staticmethod
    def key(run_id: str, invocation_id: str, tool_call_id: str) -> str:
        return f"{run_id}:{invocation_id}:{tool_call_id}"

    # -- the edge ----------------------------------------------------------------------------
    async def on_items(self, envelopes: list[Envelope], msg: Msg) -> None:
        """WorkConsumer handler (manual ack): queue dispatches, act on cancels at once."""
        queued = False
        for env in envelopes:
            ev = env.event
            if isinstance(ev, SandboxToolCancelled):
                await self._cancel_everywhere(env, ev)
            elif isinstance(ev, SandboxToolDispatched):
                self._enqueue(env, ev, msg)
                queued = True
        if not queued:
            with contextlib.suppress(Exception):
                await msg.ack()

    def _enqueue(self, env: Envelope, ev: SandboxToolDispatched, msg: Msg) -> None:
        key = self.key(env.run_id, ev.invocation_id, ev.tool_call_id)
        scheduler = self._processes if ev.source in PROCESS_SOURCES else self._io
        if scheduler.is_known(key):
            # Redelivered while this replica still has it: ack both when it is done.
            self._extra_msgs.setdefault(key, []).append(msg)
            return
        redelivered = msg.metadata.num_delivered > 1
        queued_at = time.monotonic()
        owner = ev.owner_id or "anonymous"

        async def job(slot: int) -> None:
            waited = time.monotonic() - queued_at > RECHECK_AFTER_WAIT_S
            await self._run(env, ev, msg, key, slot, check=redelivered or waited)

        done = self._done[key] = asyncio.Event()
        scheduler.submit(owner, key, job)
        keepalive = asyncio.create_task(self._keep_alive(msg, done))
        self._keepalives.add(keepalive)
        keepalive.add_done_callback(self._keepalives.discard)

    @staticmethod
    async def _keep_alive(msg: Msg, done: asyncio.Event) -> None:
        async with kept_alive(msg, KEEPALIVE_S):
            await done.wait()

    # -- running and recording ---------------------------------------------------------------
    async def _run(
        self,
        env: Envelope,
        ev: SandboxToolDispatched,
        msg: Msg,
        key: str,
        slot: int,
        *,
        check: bool,
    ) -> None:
        started = _now_ms()
        clock = time.perf_counter()
        mark = f"{env.run_id}:{ev.tool_call_id}"
        try:
            if mark in self._cancelled:
                outcome = Outcome.error(f"cancelled: {self._cancelled[mark]}", status="cancelled")
            elif check and await self.recorded(env.run_id, ev):
                log.info("tool call %s was recorded before; not run again", key)
                await self._ack(msg, key)
                return
            else:
                outcome = await self._executor.run(env.run_id, ev, slot, env.traceparent)
        except asyncio.CancelledError:
            reason = self._cancelled.get(mark, "cancelled")
            outcome = Outcome.error(f"cancelled: {reason}", status="cancelled")
            await asyncio.shield(self._finish(env, ev, msg, key, outcome, started, clock))
            return
        except Exception as exc:  # a bug here must become the call's error, not a lost call
            log.exception("tool call %s crashed", key)
            outcome = Outcome.error(f"{type(exc).__name__}: {exc}")
        await self._finish(env, ev, msg, key, outcome, started, clock)

    async def _finish(
        self,
        env: Envelope,
        ev: SandboxToolDispatched,
        msg: Msg,
        key: str,
        outcome: Outcome,
        started: int,
        clock: float,
    ) -> None:
        try:
            # The call ran: an outage of NATS delays its record, it must not run it again.
            await through_outages(lambda: self.record(env, ev, outcome, started, clock), msg, key)
        except Exception as exc:
            log.exception("could not record the result of %s", key)
            self._release(key)
            delivered = msg.metadata.num_delivered
            if delivered >= self._max_deliver:  # the agent must not wait for ever
                why = f"{type(exc).__name__}: {exc}"
                await give_up([msg], lambda: self.give_up([env], why), key)
                return
            with contextlib.suppress(Exception):
                await msg.nak(delay=redelivery_delay(delivered, self._backoff_s))
            return
        await self._ack(msg, key)

    def _release(self, key: str) -> None:
        done = self._done.pop(key, None)
        if done is not None:
            done.set()

    async def _ack(self, msg: Msg, key: str) -> None:
        self._release(key)
        for m in [msg, *self._extra_msgs.pop(key, [])]:
            with contextlib.suppress(Exception):
                await m.ack()

    async def record(
        self,
        env: Envelope,
        ev: SandboxToolDispatched,
        outcome: Outcome,
        started: int,
        clock: float,
    ) -> None:
        event = ToolCallRecorded(
            turn=ev.turn,
            tool_call_id=ev.tool_call_id,
            name=ev.name,
            source=ev.source,
            arguments=ev.arguments,
            result=outcome.result,
            status=outcome.status,
            started_at_ms=started,
            finished_at_ms=_now_ms(),
            elapsed_ms=round((time.perf_counter() - clock) * 1000, 3),
            extra=outcome.extra,
            node_id=ev.node_id,
            node_label=ev.node_label,
        )
        subject = subjects.agent(env.run_id, ev.invocation_id)
        message_id = tool_result_message_id(env.run_id, ev.invocation_id, ev.tool_call_id)
        try:
            await self._log.append(
                subject,
                [event],
                message_id=message_id,
                causation_id=env.event_id,
                correlation_id=env.correlation_id or env.run_id,
                traceparent=env.traceparent,
            )
        except PayloadTooLarge as exc:
            # A result the log cannot hold is an error the model sees, never a lost call.
            too_big = msgspec.structs.replace(
                event,
                result={"error": f"the tool's result is too large to record ({exc})"},
                status="error",
            )
            await self._log.append(subject, [too_big], message_id=message_id)

    async def give_up(self, envelopes: list[Envelope], why: str) -> None:
        """Record an error result for calls whose message will not be delivered again."""
        for env in envelopes:
            ev = env.event
            if isinstance(ev, SandboxToolDispatched):
                failure = Outcome.error(f"the tool sandbox could not run {ev.name!r}: {why}")
                await self.record(env, ev, failure, _now_ms(), time.perf_counter())

    async def recorded(self, run_id: str, ev: SandboxToolDispatched) -> bool:
        """Whether the agent's aggregate already holds this call's result."""
        envelopes = await self._log.read(subjects.agent(run_id, ev.invocation_id))
        return any(
            isinstance(e.event, ToolCallRecorded) and e.event.tool_call_id == ev.tool_call_id
            for e in envelopes
        )

    # -- cancellation --------------------------------------------------------------------------
    async def _cancel_everywhere(self, env: Envelope, ev: SandboxToolCancelled) -> None:
        note = _CancelNote(run_id=env.run_id, tool_call_id=ev.tool_call_id, reason=ev.reason)
        self.cancel_local(note)
        # The call may be waiting or running on another replica: tell every replica.
        with contextlib.suppress(Exception):
            await self._log.nc.publish(TOOL_CANCEL_BROADCAST, msgspec.json.encode(note))

    def cancel_local(self, note: _CancelNote) -> None:
        """Remember the cancellation (a waiting call records `cancelled` instead of running)
        and cancel the call if it runs here (its process is killed)."""
        mark = f"{note.run_id}:{note.tool_call_id}"
        self._cancelled[mark] = note.reason
        self._cancelled.move_to_end(mark)
        while len(self._cancelled) > REMEMBER_CANCELLED:
            self._cancelled.popitem(last=False)
        prefix, suffix = f"{note.run_id}:", f":{note.tool_call_id}"
        for scheduler in (self._io, self._processes):
            for key in scheduler.running_keys():
                if key.startswith(prefix) and key.endswith(suffix):
                    scheduler.cancel(key)

    async def on_cancel_broadcast(self, msg: Msg) -> None:
        try:
            note = msgspec.json.decode(msg.data, type=_CancelNote)
        except msgspec.DecodeError:
            return
        self.cancel_local(note)
